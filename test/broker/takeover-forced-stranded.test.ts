/**
 * Mail forced at a connection whose session was taken over (P16) while the
 * mail was on its way: a sender's output parked for the old connection (its
 * outbox was full) is forced through when the sender's connection closes
 * (OutputEnd.forceParked → Output.forceEnqueue). It belongs to the session,
 * not to the old connection: it must go where the session is now, in its
 * sender's order and before that sender's `session_left` — as a drainer's
 * offer of it would (ParkedDrain.place refuses it there, and its sender takes it
 * back to the new connection) — not wait in the old outbox for the old
 * writer or the old close, after the departure (review revr3, D3). With a
 * takeover's custody hold (CustodyHold.ts) on that sender, it is kept with
 * the hold, behind the custody and the mail handed over before it.
 *
 * On a Router driven by hand (no fibers): writes complete at once, or never
 * on a connection made stuck; closes run as `finish` runs them.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import type { OutFrame } from "../../src/protocol/framing.ts"
import { RECEIVED_V1, REJOIN_V1, TAKEOVER_V1 } from "../../src/protocol/features.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message, registerFrame } from "../support/broker.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter, orderLabel } from "../support/handRouter.ts"

/**
 * A connection whose writes complete at once, noting messages and membership
 * frames (`orderLabel`) in `log` — until `stuck()` says otherwise: from then
 * on a write never completes (its frames count as taken by the socket).
 */
const noting = (id: number, log: Array<string>, stuck: () => boolean = () => false): Connection => ({
  ...fakeConnection(id, false),
  write: (frames: ReadonlyArray<OutFrame>) => {
    log.push(...frames.flatMap(orderLabel))
    return stuck() ? Effect.never : undefined
  }
})

/** The frames of `log` about the sender `d`: its messages and its `session_left`/`session_joined`. */
const ofSender = (log: ReadonlyArray<string>): Array<string> => log.filter((f) => /^m\d$/.test(f) || f.endsWith(" d"))

const setUp = Effect.gen(function*() {
  const { attach, batch, closeAbandoning: close, router } = yield* handRouter({ outboxCapacity: 2 })
  const send = (from: Peer, ...texts: ReadonlyArray<string>): boolean =>
    batch(from, texts.map((text) => ({ type: "send", to: "b", message: message(text) })))
  return { attach, batch, close, router, send }
})

describe("mail forced at a recipient taken over while it was on its way", () => {
  it.effect("a closing sender's parked mail for the old connection reaches the new one in order, before the sender's session_left", () =>
    Effect.gen(function*() {
      const { attach, batch, close, router, send } = yield* setUp
      // b's old connection never completes a write: its first (`registered`) holds its writer for good.
      const old = attach(fakeConnection(1, true))
      batch(old, [registerFrame({ sessionId: "b" })])
      const d = attach(fakeConnection(2, false))
      batch(d, [registerFrame({ sessionId: "d" })])
      // m0 and m1 fill the old outbox; m2 and m3 park with d's batch.
      assert.isFalse(send(d, "m0", "m1"))
      assert.isTrue(send(d, "m2", "m3"))
      // b is taken over: the old outbox's m0 and m1 are handed over to the new connection.
      const log: Array<string> = []
      const fresh = attach(noting(3, log))
      batch(fresh, [registerFrame({ sessionId: "b" })])
      // d's connection closes before its drainer offered m2 and m3: they are forced through, and d leaves.
      close(d)
      router.membership.notify()
      router.output.writes.takeForWrite(fresh)
      // Without the fix: ["m0", "m1", "left d"] here, m2 and m3 still in the old outbox.
      assert.deepStrictEqual(
        { written: ofSender(log), oldOutbox: old.outbox.length },
        { written: ["m0", "m1", "m2", "m3", "left d"], oldOutbox: 0 }
      )
      // The old connection's close gives nothing back a second time.
      close(old)
      router.membership.notify()
      router.output.writes.takeForWrite(fresh)
      assert.deepStrictEqual(ofSender(log), ["m0", "m1", "m2", "m3", "left d"])
    }))

  it.effect("with a custody hold on the sender, the forced mail is kept with the hold: the custody, then the handed-over mail, then it", () =>
    Effect.gen(function*() {
      const { attach, batch, close, router, send } = yield* setUp
      const features = [RECEIVED_V1, REJOIN_V1, TAKEOVER_V1]
      // b's old client (received-v1) reads m0 and never confirms it; then its connection stops taking writes.
      const oldLog: Array<string> = []
      let stuck = false
      const old = attach(noting(1, oldLog, () => stuck))
      batch(old, [registerFrame({ sessionId: "b", frame: { features, instanceId: "b-1" } })])
      const d = attach(fakeConnection(2, false))
      batch(d, [registerFrame({ sessionId: "d" })])
      assert.isFalse(send(d, "m0"))
      assert.deepStrictEqual(oldLog.filter((f) => /^m\d$/.test(f)), ["m0"], "m0 was not written to the old connection: the test sets up nothing")
      stuck = true
      // m1 is the write in progress; m2 and m3 fill the old outbox; m4 and m5 park with d's batch.
      assert.isFalse(send(d, "m1"))
      assert.isFalse(send(d, "m2", "m3"))
      assert.isTrue(send(d, "m4", "m5"))
      // Another instance takes b over: it holds d's mail until the old close gives back m0 and m1.
      const log: Array<string> = []
      const fresh = attach(noting(3, log))
      batch(fresh, [registerFrame({ sessionId: "b", frame: { features, instanceId: "b-2" } })])
      assert.strictEqual(fresh.custodyHolds, 1, "no custody hold was taken: the test sets up nothing")
      close(d)
      router.membership.notify()
      router.output.writes.takeForWrite(fresh)
      assert.deepStrictEqual(ofSender(log), [], "d's mail or departure overtook the custody")
      close(old)
      router.membership.notify()
      router.output.writes.takeForWrite(fresh)
      // Without the fix: m4 and m5 come back from the old outbox with the custody, ahead of the held m2 and m3.
      assert.deepStrictEqual(ofSender(log), ["m0", "m1", "m2", "m3", "m4", "m5", "left d"])
    }))
})
