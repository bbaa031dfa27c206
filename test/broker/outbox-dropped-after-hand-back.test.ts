/**
 * A connection's outbox list is let go once a hand-back empties it (review
 * rvidle probe 1): `OutputEnd.handOver` edits the list in place, and the
 * writer takes an outbox only when it holds something, so without
 * `Peer.dropEmptyOutbox` an `unregister` that handed back every queued item
 * left the peer holding an empty list (idle2's lazy outbox: an idle
 * connection holds none). On a Router driven by hand: b is a `received-v1`
 * client whose write of m1 is in progress (its connection is made stuck), m2
 * waits in its outbox, then b unregisters.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { registerFrame } from "../support/broker.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"

const msg = (id: string) => ({ id, timestamp: 0, content: { text: id } })

describe("the outbox list after an unregister's hand-back", () => {
  it.effect("an unregister that hands back every queued item leaves the peer no outbox list", () =>
    Effect.gen(function*() {
      const { batch, attach } = yield* handRouter({})
      let stuck = false
      const a = attach(fakeConnection(1, false))
      const b = attach({ ...fakeConnection(2, false), write: () => (stuck ? Effect.never : undefined) })
      batch(a, [registerFrame({ sessionId: "a" })])
      batch(b, [registerFrame({ sessionId: "b", frame: { features: [RECEIVED_V1] } })])
      stuck = true
      batch(a, [{ type: "send", to: "b", message: msg("m1") }])
      assert.isDefined(b.writer.inFlight, "m1's write is not in progress: the test sets up nothing")
      batch(a, [{ type: "send", to: "b", message: msg("m2") }])
      assert.strictEqual(b.outbox.length, 1, "m2 is not waiting in b's outbox: the test sets up nothing")
      batch(b, [{ type: "unregister" }])
      assert.strictEqual(b.outbox.length, 0, "m2 was not handed back: the test sets up nothing")
      assert.isUndefined(b.outboxToEdit(), "the emptied outbox list is still held by the peer")
    }))
})
