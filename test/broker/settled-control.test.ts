/**
 * Helper ctlsup: a cancel or supersede of a message whose fate its sender
 * settled already — cancelled it, or superseded it by another message.
 *
 * A receipt route outlives the cancel or supersede that used it, and the
 * receiver was told once (`message_control`). Before, a cancel of a
 * superseded message found the route, wrote the receiver a cancel of a
 * message it had been told is superseded, rewrote the record to cancelled
 * and answered `delivered`; a supersede naming a message cancelled or
 * superseded already passed the route check, wrote the receiver a second
 * control and rewrote the record again. Now both are answered from the
 * replay record, with no control: the cancel "cannot be cancelled" (a
 * resend still hears superseded), the supersede `E_SUPERSEDE_TARGET` with a
 * reason saying what became of the message.
 *
 * On a Router driven by hand (control-instance.test.ts's world): writes
 * complete at once, and each connection's frames are recorded.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Reason } from "../../src/protocol/delivery.ts"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures } from "../support/controlWorld.ts"

const cannotCancel = `failed: ${Reason.cannotCancel}`

/** d's m0 to b, read and confirmed by b-1, then superseded by m1. */
const superseded = Effect.gen(function*() {
  const w = yield* world(custodyFeatures)
  const m0 = message("m0")
  const m1 = message("m1", { supersedes: m0.id })
  w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
  w.batch(w.b1, [{ type: "received", frames: w.b1.framesWritten }])
  w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
  assert.deepStrictEqual(w.controlsOf(w.b1), [`supersede ${m0.id}`], "m1 did not supersede m0: the test sets up nothing")
  return { w, m0, m1 }
})

describe("a cancel of a message its sender superseded already", () => {
  it.effect("is answered cannot be cancelled, sends the receiver no cancel, and a resend still hears superseded", () =>
    Effect.gen(function*() {
      const { w, m0, m1 } = yield* superseded
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      assert.deepStrictEqual(w.controlsOf(w.b1), [`supersede ${m0.id}`], "the receiver was sent a cancel of a message it was told is superseded")
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", cannotCancel, `failed: ${Reason.superseded(m1.id)}`])
    }))
})

describe("a supersede naming a message whose fate its sender settled already", () => {
  it.effect("cancelled: refused E_SUPERSEDE_TARGET saying so, the receiver sent neither a supersede nor the new message, and a resend still hears cancelled", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures)
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.b1, [{ type: "received", frames: w.b1.framesWritten }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      const m2 = message("m2", { supersedes: m0.id })
      w.batch(w.d, [{ type: "send", to: "b", message: m2 }])
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      assert.deepStrictEqual(
        { controls: w.controlsOf(w.b1), messages: w.messagesOf(w.b1) },
        { controls: [`cancel ${m0.id}`], messages: [m0.id] }
      )
      assert.deepStrictEqual(w.answersOf(m2.id), [`failed: ${Reason.supersedeCancelled}`])
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered", `failed: ${Reason.cancelled}`])
    }))

  it.effect("superseded by another: refused E_SUPERSEDE_TARGET naming that one, the receiver sent no second supersede nor the new message, and a resend still hears the first", () =>
    Effect.gen(function*() {
      const { w, m0, m1 } = yield* superseded
      const m2 = message("m2", { supersedes: m0.id })
      w.batch(w.d, [{ type: "send", to: "b", message: m2 }])
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      assert.deepStrictEqual(
        { controls: w.controlsOf(w.b1), messages: w.messagesOf(w.b1) },
        { controls: [`supersede ${m0.id}`], messages: [m0.id, m1.id] }
      )
      assert.deepStrictEqual(w.answersOf(m2.id), [`failed: ${Reason.supersedeSuperseded(Reason.superseded(m1.id))}`])
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", `failed: ${Reason.superseded(m1.id)}`])
    }))

  it.effect("the retry of the supersede itself is answered from its own record, delivered, and tells the receiver nothing again", () =>
    Effect.gen(function*() {
      const { w, m1 } = yield* superseded
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      assert.deepStrictEqual(w.answersOf(m1.id), ["delivered", "delivered"])
      assert.deepStrictEqual(w.controlsOf(w.b1).length, 1)
    }))
})

describe("a message superseded after another instance took its session over (no control written)", () => {
  it.effect("a second supersede of it is refused naming the first, with no claim that its receiver was told", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures)
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.b1, [{ type: "received", frames: w.b1.framesWritten }])
      const b2 = w.registerB("b-2")
      w.closeAbandoned(w.b1)
      const m1 = message("m1", { supersedes: m0.id })
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      const m2 = message("m2", { supersedes: m0.id })
      w.batch(w.d, [{ type: "send", to: "b", message: m2 }])
      assert.deepStrictEqual([...w.controlsOf(w.b1), ...w.controlsOf(b2)], [], "a supersede control was written: the test sets up nothing")
      assert.deepStrictEqual(w.answersOf(m2.id), [`failed: ${Reason.supersedeSuperseded(Reason.superseded(m1.id))}`])
      assert.notInclude(w.answersOf(m2.id).join(""), "told", "the sender was told the receiver was told, though no control was written")
    }))
})
