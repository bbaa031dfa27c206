/**
 * Review L6 (helper wdcopy): a mailbox copy read by two client instances of
 * one session — b-1 was written it and dropped unconfirmed, then a new
 * process b-2 was written it and dropped unconfirmed too — and then
 * cancelled by its sender is kept for both readers (WithdrawnCopies.ts):
 * each one's return gets the message and its cancel, whichever comes back
 * first; a third instance, which never read it, gets neither.
 *
 * On a Router driven by hand (control-instance.test.ts's world): writes
 * complete at once, and each connection's frames are recorded.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"

/** m0 read unconfirmed by b-1, then by b-2, each dropping; then d cancels m0 in the mailbox. */
const readTwiceThenCancelled = Effect.gen(function*() {
  const w = yield* world(custodyFeatures)
  const m0 = message("m0")
  w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
  assert.strictEqual(w.b1.custody?.size, 1, "m0 is not in b-1's custody: the test sets up nothing")
  w.closeAbandoned(w.b1)
  const b2 = w.registerB("b-2")
  assert.deepStrictEqual(w.messagesOf(b2), [m0.id], "b-2 was not given m0: the test sets up nothing")
  assert.strictEqual(b2.custody?.size, 1, "m0 is not in b-2's custody: the test sets up nothing")
  w.closeAbandoned(b2)
  w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
  assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered"])
  return { w, m0 }
})

describe("L6: a cancelled copy read by two instances of one session", () => {
  it.effect("the first reader's return gets the message and the cancel", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* readTwiceThenCancelled
      const again = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(again)), [`message ${m0.id}`, `cancel ${m0.id}`])
    }))

  it.effect("the second reader's return gets the message and the cancel", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* readTwiceThenCancelled
      const again = w.registerB("b-2")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(again)), [`message ${m0.id}`, `cancel ${m0.id}`])
    }))

  it.effect("the first reader back, then the second taking over: each gets the message and the cancel", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* readTwiceThenCancelled
      const first = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(first)), [`message ${m0.id}`, `cancel ${m0.id}`])
      // b-1 confirms what it read, so its custody holds nothing back at the takeover.
      w.batch(first, [{ type: "received", frames: w.framesOf(first).length }])
      assert.strictEqual(first.custody?.size, 0, "b-1 still holds unconfirmed mail: the test sets up nothing")
      const second = w.registerB("b-2")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(second)), [`message ${m0.id}`, `cancel ${m0.id}`])
    }))

  it.effect("a third instance gets neither", () =>
    Effect.gen(function*() {
      const { w } = yield* readTwiceThenCancelled
      const b3 = w.registerB("b-3")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(b3)), [])
    }))
})
