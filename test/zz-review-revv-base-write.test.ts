/**
 * Review revv probe (V1): a base client (no `received-v1`) that unregisters
 * while a write is in progress keeps its outbox (Custody.handBack returns
 * early), so a cancel queued there, about a message it was written, is
 * never kept for that instance's return: a return on a new connection never
 * hears it — while the same cancel with no write in progress is kept and
 * given (helper unregctl). docs/protocol.md: the same instance may register
 * again after its own `unregister`, and such a control is kept "before it
 * was written".
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "./support/broker.ts"
import { baseFeatures, controlWorld as world, messagesAndControls } from "./support/controlWorld.ts"

const RETENTION_MS = 3_600_000

describe("review revv: a base client's queued cancel at its unregister", () => {
  it.effect("contrast, passes: the old connection closes before b-1 returns: the cancel is kept and given", () =>
    Effect.gen(function*() {
      const w = yield* world(baseFeatures, { mailboxRetention: RETENTION_MS })
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      assert.deepStrictEqual(w.messagesOf(w.b1), [m0.id], "m0 was not written to b-1: the test sets up nothing")
      w.stick()
      const mx = message("mx")
      w.batch(w.d, [{ type: "send", to: "b", message: mx }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.ok(w.b1.writer.inFlight !== undefined, "no write in progress: the test sets up nothing")
      w.batch(w.b1, [{ type: "unregister" }])
      w.closeAbandoned(w.b1)
      const back = w.registerB("b-1", baseFeatures)
      assert.include(messagesAndControls(w.framesOf(back)), `cancel ${m0.id}`)
    }))

  it.effect("a write in progress: b-1's return (same instance, new connection) gets the cancel too", () =>
    Effect.gen(function*() {
      const w = yield* world(baseFeatures, { mailboxRetention: RETENTION_MS })
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      assert.deepStrictEqual(w.messagesOf(w.b1), [m0.id], "m0 was not written to b-1: the test sets up nothing")
      w.stick()
      const mx = message("mx")
      w.batch(w.d, [{ type: "send", to: "b", message: mx }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.ok(w.b1.writer.inFlight !== undefined, "no write in progress: the test sets up nothing")
      assert.ok(w.b1.outbox.length > 0, "the cancel is not in b-1's outbox: the test sets up nothing")
      w.batch(w.b1, [{ type: "unregister" }])
      const back = w.registerB("b-1", baseFeatures)
      w.closeAbandoned(w.b1)
      assert.include(messagesAndControls(w.framesOf(back)), `cancel ${m0.id}`)
    }))
})
