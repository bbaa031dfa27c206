/**
 * A cancel parked at its sender's reader (behind the receiver's full
 * outbox) for the client instance that READ its message, when that message
 * comes back unconfirmed from the old connection's custody at a takeover by
 * another instance: withdrawn, the message is not given to the new instance
 * (MailReturns' `requeueForwarded`), and the parked controls about it are
 * taken out of the parked lists so that none reaches that instance (review
 * revaq AQ1) — which dropped the reader's too, though its client may have
 * shown the message and never heard it was withdrawn. Now the one written
 * for the instance that read it is kept for that instance's return (review
 * revba BA3); b-2 gets neither. Fails without the keep in
 * `requeueForwarded`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, parkedControl } from "../support/controlWorld.ts"

const HOUR = 3_600_000

describe("a cancel parked at its sender for the instance that read its message, at a takeover by another", () => {
  it.effect("b-1 read m1 (unconfirmed), its cancel parked at d; b-2 takes over: b-2 gets neither, b-1's return the cancel once", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: HOUR, outboxCapacity: 1 })
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      assert.strictEqual(w.b1.custody?.size, 1, "m1 is not in b-1's custody unconfirmed: the test sets up nothing")
      w.stick()
      w.batch(w.d, [{ type: "send", to: "b", message: message("m0") }])
      w.batch(w.d, [{ type: "send", to: "b", message: message("m2") }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      assert.isTrue(parkedControl(w.d, w.b1), "the cancel is not parked at d's reader: the test sets up nothing")
      const b2 = w.registerB("b-2")
      w.closeAbandoned(w.b1)
      const drained = (peer: Peer): Peer => {
        for (let n = 0; n < 20; n++) {
          w.framesOf(peer)
          if (!w.tryDrain(peer)) break
        }
        return peer
      }
      drained(w.d)
      assert.notInclude(w.controlsOf(b2), `cancel ${m1.id}`, "b-2, which never had m1, got its cancel")
      assert.notInclude(w.messagesOf(b2), m1.id, "b-2 got the withdrawn m1")
      w.batch(b2, [{ type: "unregister" }])
      w.closeAbandoned(b2)
      const back = drained(w.registerB("b-1"))
      assert.deepStrictEqual(
        w.controlsOf(back).filter((c) => c.endsWith(m1.id)),
        [`cancel ${m1.id}`],
        "b-1 read m1: its return is told of the cancel once"
      )
      assert.notInclude(w.messagesOf(back), m1.id, "b-1's return was given the withdrawn m1 again")
    }))
})
