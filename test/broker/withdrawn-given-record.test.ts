/**
 * `Receipts.given` — the check MailDelivery.requeueForwarded makes before it
 * gives a withdrawn message back to the receiver's live connection — follows
 * the message's record once newer routes pushed its route out, as
 * `handedOn`, `recordedRoute` and `givenTo` do (review revk K1: it read the
 * route only).
 *
 * m0 is written to b-1 (custody, unconfirmed), then cancelled: the cancel
 * reaches b-1 in both variants. b-1's own rejoin (same instanceId) then
 * registers before the old connection closes; the close gives m0 back as
 * withdrawn on its way. With the route kept, the rejoin gets m0 and its
 * cancel again (the client may show m0). With the route pushed out by
 * MAX_ROUTES newer ones the record names b-1, and the same: before the fix
 * `given` said no and m0 was dropped as never got, so the rejoin got the
 * cancel of a message it was never shown.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_ROUTES } from "../../src/broker/Receipts.ts"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures } from "../support/controlWorld.ts"

const scenario = (pushOut: boolean) =>
  Effect.gen(function*() {
    const w = yield* world(custodyFeatures)
    const m0 = message("m0")
    w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
    assert.strictEqual(w.b1.custody?.size, 1, "m0 is not in b-1's custody: the test sets up nothing")
    if (pushOut) {
      const sink = w.registerOther("sink")
      for (let sent = 0; sent < MAX_ROUTES; sent += 1_024) {
        w.batch(w.d, Array.from({ length: 1_024 }, (_, i) => ({ type: "send", to: "sink", message: message(`m${sent + i + 1}`) })))
      }
      assert.strictEqual(w.messagesOf(sink).length, MAX_ROUTES)
    }
    w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
    assert.deepStrictEqual(w.controlsOf(w.b1), [`cancel ${m0.id}`], "the cancel did not reach b-1: the test sets up nothing")
    assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered"])
    const again = w.registerB("b-1")
    w.closeAbandoned(w.b1)
    for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
      // each step offers one parked item
    }
    return { messages: w.messagesOf(again), controls: w.controlsOf(again), id: m0.id }
  })

describe("a withdrawn message given back to the same instance's rejoin", () => {
  it.effect("route kept: the rejoin gets m0 and its cancel again", () =>
    Effect.gen(function*() {
      const { messages, controls, id } = yield* scenario(false)
      assert.deepStrictEqual({ messages, controls }, { messages: [id], controls: [`cancel ${id}`] })
    }))

  it.effect("route pushed out, the record naming b-1: the rejoin gets m0 and its cancel again, as with the route kept", () =>
    Effect.gen(function*() {
      const { messages, controls, id } = yield* scenario(true)
      assert.deepStrictEqual({ messages, controls }, { messages: [id], controls: [`cancel ${id}`] })
    }), 60_000)
})
