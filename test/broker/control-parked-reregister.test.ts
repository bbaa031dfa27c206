/**
 * A cancel parked at its sender's reader for a message dropped unread, its
 * connection registering again (review revao AO1). The cancel waits at d's
 * reader behind b-1's full outbox; b-1's `unregister` hands m1 back (or d's
 * drainer offers m1 to the unregistered connection, which refuses it) and
 * m1, withdrawn on its way and never written, is dropped — its parked cancel
 * with it (Output.dropParkedControls). The connection then registers as b
 * again (same connection, a later `register`: docs/protocol.md allows it),
 * as the same instance or a new one: no cancel of m1 waits to be written to
 * it (the write path checks only the control's session key).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ControlFrame } from "../../src/broker/ControlFrame.ts"
import type { Peer } from "../../src/broker/Peer.ts"
import { message, registerFrame } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, parkedControl } from "../support/controlWorld.ts"

/** The controls waiting in `peer`'s outbox, as `to messageId`. */
const controlsQueued = (peer: Peer): ReadonlyArray<string> =>
  peer.outbox.flatMap((item) => item instanceof ControlFrame ? [`${item.to.slice(-1)} ${item.messageId}`] : [])

describe("a parked cancel of a message dropped unread, its connection registering again", () => {
  for (const instanceId of ["b-1", "b-2"]) {
    it.effect(`no cancel of m1 waits for b's client after the connection registers as b (${instanceId})`, () =>
      Effect.gen(function*() {
        const w = yield* world(custodyFeatures, { mailboxRetention: 3_600_000, outboxCapacity: 1 })
        w.stick()
        const m0 = message("m0")
        const m1 = message("m1")
        w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
        w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
        w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
        assert.isTrue(parkedControl(w.d, w.b1), "the cancel is not parked at d's reader: the test sets up nothing")
        w.batch(w.b1, [{ type: "unregister" }])
        for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
          // each step offers one parked item
        }
        assert.isFalse(parkedControl(w.d, w.b1), "the cancel is still parked at d's reader: the test checks nothing")
        w.batch(w.b1, [registerFrame({ sessionId: "b", frame: { features: custodyFeatures, instanceId } })])
        assert.strictEqual(w.b1.session?.key.endsWith("b"), true, "b-1's connection is not b's again: the test sets up nothing")
        assert.deepStrictEqual(controlsQueued(w.b1), [], "a cancel of m1 (never received by any instance of b) waits to be written to b's client")
      }))
  }
})
