/**
 * A durable restart keeps the acceptance order a mailbox cancel under a reused id breaks a stamp tie by
 * (MailDelivery.newestUnder, `Mail[ACCEPTED]`): restored mail takes its place in the order it was accepted before
 * the restart, its rows' `seq` (Router.restore, RestoreOrder.acceptInSeqOrder) — not queue order, which puts a
 * message given back behind a later send (RestoreOrder.restoreOrder). The world of
 * mailbox-cancel-reused-id-given-back-tie.test.ts (review revmailkey2 probe 6), then a restart: d's m0 ("for b")
 * is written to b and never confirmed; past its replay record d sends m0 again to z (away), queued; b's
 * connection closes and "for b" goes back behind it. d's cancel of m0 withdraws "for z", its latest send, on the
 * broker that did not restart and on one restarted from the store alike (review rrmk probe 3). And the places
 * restored mail takes come before every place of the new run: restored "for b" is written to b, d sends m0 again
 * to z (away) after the restart, and b's close puts "for b" behind it; d's cancel withdraws "for z". Routers driven by
 * hand, the journal's batches committed to a memory store; the clock is a constant (every stamp ties); nothing
 * waits on time.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { StoreJournal } from "../../src/broker/StoreJournal.ts"
import { makeMemory, makeMemoryMailState } from "../../src/store/MailStore.ts"
import { registerFrame } from "../support/broker.ts"
import { features, noting, textsOf } from "../support/custodyHold.ts"
import { handRouter } from "../support/handRouter.ts"
import { flushedTo, register } from "../support/handSessions.ts"

const HOUR = 3_600_000
const T0 = 1_000_000
const options = { replayRecords: 1 }
const m0 = { id: "m0", timestamp: 1, content: { text: "for b" } }

describe("a mailbox cancel under a reused id in a stamp tie, after a durable restart", () => {
  it.effect("withdraws the later send (for z), as without the restart, not the older message given back (for b)", () =>
    Effect.gen(function*() {
      const store = makeMemory(makeMemoryMailState())
      const journal = new StoreJournal(() => {}, 24 * HOUR)
      const first = yield* handRouter(options, () => T0, {}, false, journal)
      const writtenB: Array<string> = []
      const b = first.attach(noting(1, writtenB))
      first.batch(b, [registerFrame({ sessionId: "b", frame: { features, instanceId: "b-1" } })])
      register(first, 2, "s")
      first.close(register(first, 3, "z"))
      const d = register(first, 4, "d")
      first.batch(d, [{ type: "send", to: "b", message: m0 }])
      assert.deepStrictEqual(writtenB, ["for b"], "b was not written m0: the test sets up nothing")
      // One replay record: the fill pushes m0's out, so the next send under m0 is a new message.
      first.batch(d, [{ type: "send", to: "s", message: { id: "fill", timestamp: 1, content: { text: "fill" } } }])
      first.batch(d, [{ type: "send", to: "z", message: { ...m0, content: { text: "for z" } } }])
      first.closeAbandoning(b)
      assert.strictEqual(first.router.heldMail()?.messages, 2, "both messages under m0 are not queued: the test sets up nothing")
      const taken = journal.take(T0)
      if (taken !== undefined) {
        yield* store.commit(taken.batch)
        journal.committed(taken)
      }

      first.batch(d, [{ type: "cancel_message", messageId: m0.id }])
      const withoutRestart = { z: flushedTo(first, 10, "z"), b: flushedTo(first, 11, "b") }
      assert.deepStrictEqual(withoutRestart, { z: [], b: ["for b"] }, "without a restart the cancel did not withdraw \"for z\": the test sets up nothing")

      const second = yield* handRouter(options, () => T0, {}, false, new StoreJournal(() => {}, 24 * HOUR))
      second.router.restore(yield* store.load(T0 - 24 * HOUR))
      second.batch(register(second, 20, "d"), [{ type: "cancel_message", messageId: m0.id }])
      const afterRestart = { z: flushedTo(second, 21, "z"), b: flushedTo(second, 22, "b") }
      assert.deepStrictEqual(afterRestart, withoutRestart, "after the restart d's cancel withdrew \"for b\", and z was given the \"for z\" d cancelled")
    }))

  it.effect("withdraws a send accepted after the restart (for z), not the restored message given back behind it (for b)", () =>
    Effect.gen(function*() {
      const store = makeMemory(makeMemoryMailState())
      const journal = new StoreJournal(() => {}, 24 * HOUR)
      const first = yield* handRouter(options, () => T0, {}, false, journal)
      first.close(register(first, 1, "b"))
      register(first, 2, "s")
      const d = register(first, 3, "d")
      first.batch(d, [{ type: "send", to: "b", message: m0 }])
      // One replay record: the fill pushes m0's out, so the next send under m0 is a new message.
      first.batch(d, [{ type: "send", to: "s", message: { id: "fill", timestamp: 1, content: { text: "fill" } } }])
      const taken = journal.take(T0)
      if (taken !== undefined) {
        yield* store.commit(taken.batch)
        journal.committed(taken)
      }

      const second = yield* handRouter(options, () => T0, {}, false, new StoreJournal(() => {}, 24 * HOUR))
      second.router.restore(yield* store.load(T0 - 24 * HOUR))
      second.close(register(second, 20, "z"))
      const writtenB: Array<string> = []
      const b = second.attach(noting(21, writtenB))
      second.batch(b, [registerFrame({ sessionId: "b", frame: { features, instanceId: "b-1" } })])
      writtenB.push(...textsOf(second.router.output.writes.takeForWrite(b).frames))
      assert.deepStrictEqual(writtenB, ["for b"], "b was not written its restored message: the test sets up nothing")
      const dBack = register(second, 22, "d")
      second.batch(dBack, [{ type: "send", to: "z", message: { ...m0, content: { text: "for z" } } }])
      second.closeAbandoning(b)
      // Both under m0, and the fill for s, which the store still held and the restore queued again.
      assert.strictEqual(second.router.heldMail()?.messages, 3, "both messages under m0 are not queued: the test sets up nothing")
      second.batch(dBack, [{ type: "cancel_message", messageId: m0.id }])
      const flushed = { z: flushedTo(second, 23, "z"), b: flushedTo(second, 24, "b") }
      assert.deepStrictEqual(flushed, { z: [], b: ["for b"] }, "d's cancel withdrew the restored \"for b\", and z was given the \"for z\" d cancelled")
    }))
})
