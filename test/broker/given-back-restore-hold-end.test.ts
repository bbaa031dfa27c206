/**
 * A durable restart after a takeover hold's end (review revmailbox D1, S1):
 * `d`'s `m0` and `m1`, written to `b`'s old connection and never confirmed,
 * come back at that connection's close, 50 minutes in, and `m2`, sent while
 * `b` was held, goes behind them (MailDelivery.queueBehind, its date kept);
 * `e`'s `u` to away `x` was accepted at 40 minutes. The given-back rows are
 * dated at 50 minutes, after the rows accepted after them (`m2` at 10, `u`
 * at 40), marked given back (StoredMail.givenBack): the restore must not
 * read that for a clock step back, which re-dated them down to `m2`'s 10
 * minutes (they expired early), and must re-date no other row — the
 * re-store the `mailbox` branch tried re-dated `u` (revmailbox probe 1). At
 * 95 minutes (a 60-minute retention) the restarted broker flushes what the
 * broker that did not restart flushes: `u` to `x`, `m0` and `m1` to `b`.
 * On a Router driven by hand, its journal's batches committed to a memory
 * store; a second Router restores from that store. The clock is a local
 * reading the test sets; nothing waits on time.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { StoreJournal } from "../../src/broker/StoreJournal.ts"
import { makeMemory, makeMemoryMailState } from "../../src/store/MailStore.ts"
import { message, registerFrame } from "../support/broker.ts"
import { features, noting, textsOf } from "../support/custodyHold.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const T0 = 1_000_000

describe("a durable restart after a takeover hold's end", () => {
  it.effect("keeps u's retention, and m0's and m1's from their return, as the broker that did not restart does", () =>
    Effect.gen(function*() {
      const disk = makeMemoryMailState()
      const store = makeMemory(disk)
      const clock = { t: T0 }
      const journal = new StoreJournal(() => {}, 24 * HOUR)
      const commit = Effect.suspend(() => {
        const taken = journal.take(clock.t)
        if (taken === undefined) return Effect.void
        return Effect.map(store.commit(taken.batch), () => journal.committed(taken))
      })
      const first = yield* handRouter({ mailboxRetention: HOUR }, () => clock.t, {}, false, journal)
      const register = (peer: Peer, sessionId: string, frame: Record<string, unknown> = {}): Peer => {
        first.batch(peer, [registerFrame({ sessionId, frame })])
        return peer
      }
      const send = (from: Peer, to: string, text: string): void => {
        first.batch(from, [{ type: "send", to, message: message(text) }])
      }
      const writtenOld: Array<string> = []
      const old = register(first.attach(noting(1, writtenOld)), "b", { features, instanceId: "b-1" })
      const d = register(first.attach(fakeConnection(2, false)), "d")
      const e = register(first.attach(fakeConnection(3, false)), "e")
      const x = register(first.attach(fakeConnection(4, false)), "x")
      first.close(x)
      send(d, "b", "m0")
      send(d, "b", "m1")
      assert.deepStrictEqual(writtenOld, ["m0", "m1"], "m0 and m1 were not written to b's old connection: the test sets up nothing")
      // b is taken over by another instance, whose connection closes: b is away, held behind the old custody.
      first.closeAbandoning(register(first.attach(noting(5, [])), "b", { features, instanceId: "b-2" }))
      clock.t = T0 + 10 * MINUTE
      send(d, "b", "m2")
      clock.t = T0 + 40 * MINUTE
      send(e, "x", "u")
      yield* commit
      clock.t = T0 + 50 * MINUTE
      // The old connection closes: m0 and m1 come back, m2 is moved behind them (queueBehind).
      first.closeAbandoning(old)
      yield* commit
      assert.strictEqual(first.router.heldMail()?.messages, 4, "m0, m1, m2 and u are not all queued: the test sets up nothing")

      // 55 minutes after u was accepted: within its retention.
      const later = T0 + 95 * MINUTE

      // The broker that did not restart still holds u for x.
      clock.t = later
      first.router.prune(later)
      const writtenFirst: Array<string> = []
      const xAgain = first.attach(noting(6, writtenFirst))
      first.batch(xAgain, [registerFrame({ sessionId: "x" })])
      writtenFirst.push(...textsOf(first.router.output.writes.takeForWrite(xAgain).frames))
      assert.deepStrictEqual(writtenFirst, ["u"], "without a restart u is not flushed to x: the test proves nothing")
      const toBFirst: Array<string> = []
      const bAgain = first.attach(noting(8, toBFirst))
      first.batch(bAgain, [registerFrame({ sessionId: "b" })])
      toBFirst.push(...textsOf(first.router.output.writes.takeForWrite(bAgain).frames))
      assert.deepStrictEqual(toBFirst, ["m0", "m1"], "without a restart m0 and m1 are not flushed to b: the test proves nothing")

      // A broker restarted from what was stored.
      const journal2 = new StoreJournal(() => {}, 24 * HOUR)
      const clock2 = { t: later }
      const second = yield* handRouter({ mailboxRetention: HOUR }, () => clock2.t, {}, false, journal2)
      second.router.restore(yield* store.load(later - 24 * HOUR))
      second.router.prune(later)
      const writtenSecond: Array<string> = []
      const xAfter = second.attach(noting(7, writtenSecond))
      second.batch(xAfter, [registerFrame({ sessionId: "x" })])
      writtenSecond.push(...textsOf(second.router.output.writes.takeForWrite(xAfter).frames))
      // On dea94e09 (the re-store): [] — u was re-dated to m2's 10 minutes at the restore and expired.
      assert.deepStrictEqual(writtenSecond, ["u"])
      const toBSecond: Array<string> = []
      const bAfter = second.attach(noting(9, toBSecond))
      second.batch(bAfter, [registerFrame({ sessionId: "b" })])
      toBSecond.push(...textsOf(second.router.output.writes.takeForWrite(bAfter).frames))
      // Without the given-back rows' dates (main before this): [] — dated at their acceptance, they had expired.
      assert.deepStrictEqual(toBSecond, ["m0", "m1"])
    }))
})
