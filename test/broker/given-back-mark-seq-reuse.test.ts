/**
 * A given-back row's mark (`StoredMail.givenBack`: the first `seq` accepted
 * after its return) is a `seq` of the run that wrote it; SQLite numbers after
 * the highest row stored, so once the rows after a return are deleted a
 * restarted broker could number new mail at or below the mark, and the next
 * restart would take that mail for mail accepted before the return and queue
 * the given-back message behind it (RestoreOrder.ts). A restarted broker
 * numbers past every mark it restored (`nextSeqPastMarks`). `d`'s m0 is
 * written to `b`, never confirmed; c0 is queued for away `carol` (seq 2);
 * `b` closes and m0 comes back (mark 3). The disk then plays SQLite after
 * c0's row was deleted (carol read it): c0's row gone, numbering from 2.
 * A second run restores m0 and queues d's c1 for away `zed`; a third restores
 * both, and with a capacity of 2 d's c2 for away `yan` evicts the oldest in
 * queue place of d's: m0, queued before c1 was accepted.
 * On Routers driven by hand, the journal's batches committed to a memory
 * store; the clock is a local reading the test sets, nothing waits on time.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { StoreJournal } from "../../src/broker/StoreJournal.ts"
import { makeMemory, makeMemoryMailState, type MailStoreService } from "../../src/store/MailStore.ts"
import { message, registerFrame } from "../support/broker.ts"
import { features, noting } from "../support/custodyHold.ts"
import { handRouter } from "../support/handRouter.ts"
import { flushedTo, register } from "../support/handSessions.ts"

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const T0 = 1_000_000
const options = { mailboxRetention: HOUR, mailboxCapacity: 2 }

/** Commits what `journal` took at `at` to `store`. */
const commit = (journal: StoreJournal, store: MailStoreService, at: number) =>
  Effect.gen(function*() {
    const taken = journal.take(at)
    if (taken === undefined) return
    yield* store.commit(taken.batch)
    journal.committed(taken)
  })

describe("a given-back row's mark is not reused by a later run", () => {
  it.effect("mail accepted after a restart is queued behind mail given back before it", () =>
    Effect.gen(function*() {
      const disk = makeMemoryMailState()
      const store = makeMemory(disk)
      const clock = { t: T0 }
      const journal1 = new StoreJournal(() => {}, 24 * HOUR)
      const first = yield* handRouter(options, () => clock.t, {}, false, journal1)
      const writtenB: Array<string> = []
      const b = first.attach(noting(1, writtenB))
      first.batch(b, [registerFrame({ sessionId: "b", frame: { features, instanceId: "b-1" } })])
      const d = register(first, 2, "d")
      first.close(register(first, 3, "carol"))
      first.batch(d, [{ type: "send", to: "b", message: message("m0") }])
      assert.deepStrictEqual(writtenB, ["m0"], "m0 was not written to b: the test sets up nothing")
      clock.t = T0 + 10 * MINUTE
      first.batch(d, [{ type: "send", to: "carol", message: message("c0") }])
      clock.t = T0 + 20 * MINUTE
      first.closeAbandoning(b)
      yield* commit(journal1, store, clock.t)
      assert.deepStrictEqual([...disk.mail.keys()], [1, 2], "m0 and c0 are not stored as rows 1 and 2: the test sets up nothing")
      // SQLite after c0's row was deleted: it numbers after the highest row left.
      disk.mail.delete(2)
      disk.nextSeq = 2

      clock.t = T0 + 30 * MINUTE
      const journal2 = new StoreJournal(() => {}, 24 * HOUR)
      const second = yield* handRouter(options, () => clock.t, {}, false, journal2)
      second.router.restore(yield* store.load(clock.t - 24 * HOUR))
      second.close(register(second, 20, "zed"))
      second.batch(register(second, 21, "d"), [{ type: "send", to: "zed", message: message("c1") }])
      yield* commit(journal2, store, clock.t)

      clock.t = T0 + 40 * MINUTE
      const third = yield* handRouter(options, () => clock.t, {}, false, new StoreJournal(() => {}, 24 * HOUR))
      third.router.restore(yield* store.load(clock.t - 24 * HOUR))
      third.close(register(third, 30, "yan"))
      third.batch(register(third, 31, "d"), [{ type: "send", to: "yan", message: message("c2") }])
      const flushed = { b: flushedTo(third, 32, "b"), zed: flushedTo(third, 33, "zed"), yan: flushedTo(third, 34, "yan") }
      // With c1 numbered 2, below m0's mark 3: { b: ["m0"], zed: [], yan: ["c2"] } — c1 evicted, queued behind m0.
      assert.deepStrictEqual(flushed, { b: [], zed: ["c1"], yan: ["c2"] })
    }))
})
