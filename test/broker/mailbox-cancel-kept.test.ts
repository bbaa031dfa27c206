/**
 * Review revi (helper fixmb): a cancelled mailbox copy kept for the client
 * instance that read it (WithdrawnCopies.ts) — which copy is kept, for whom,
 * and for how long.
 *
 * - I4: a resend of the same id queued over a kept copy, after its replay
 *   record went (an hour; the copy stays a day), is a new message: it is not
 *   handled as the cancelled copy.
 * - I2: a message cancelled on its way to a short-lived receiver that then
 *   ends by `unregister` goes silently: its record stays cancelled.
 * - I5: a cancelled ask is kept like any cancelled message (its cancel
 *   closed its edge, which made it stale).
 * - I7: a copy cancelled more than an hour after the write that gave it
 *   (its route gone) is still kept for its reader.
 * - I1: a copy P49's other holder of an identity read is kept for that
 *   holder, whose return takes it.
 * - I6: mail taken out of a write in progress at `unregister` counts as read.
 * - revbm BM2: the cancel made again for a kept copy carries the stamp of the
 *   one first written (its client may have read it, and tells a control given
 *   again from another message's by its stamp).
 *
 * On a Router driven by hand (control-instance.test.ts's world): writes
 * complete at once, and each connection's frames are recorded.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { EPHEMERAL_V1 } from "../../src/protocol/features.ts"
import { Reason } from "../../src/protocol/delivery.ts"
import { message, registration } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"

const HOUR = 3_600_000

/** `frames` as `message id` / `cancel id`, in the order they were written. */
/** m0 read by b-1, dropped, cancelled in the mailbox; two hours on, d sends m0 again: answered queued. */
const resentAfterTheRecord = Effect.gen(function*() {
  const clock = { now: 1_000_000 }
  const w = yield* world(custodyFeatures, {}, clock)
  const m0 = message("m0")
  w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
  assert.strictEqual(w.b1.custody?.size, 1, "m0 is not in b-1's custody: the test sets up nothing")
  w.closeAbandoned(w.b1)
  w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
  clock.now += 2 * HOUR
  w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
  const queued = w.framesOf(w.d).filter((frame) =>
    frame.type === "delivered" && frame.messageId === m0.id && "delivery" in frame && frame.delivery === "queued"
  )
  assert.strictEqual(queued.length, 1, "the resend was not queued afresh: the test sets up nothing")
  return { w, m0 }
})

describe("I4: a resend queued over a cancelled copy after its replay record went", () => {
  it.effect("another instance's registration gets the resend", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* resentAfterTheRecord
      const b2 = w.registerB("b-2")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(b2)), [`message ${m0.id}`])
    }))

  it.effect("the old instance's return gets the resend with no cancel behind it", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* resentAfterTheRecord
      const again = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(again)), [`message ${m0.id}`])
    }))
})

/** d's m0 and its cancel written to short-lived b-2, neither confirmed; b-2 unregisters. */
const cancelledThenEnded = Effect.gen(function*() {
  const w = yield* world(custodyFeatures)
  w.closeAbandoned(w.b1)
  const b2 = w.registerB("b-2", [...custodyFeatures, EPHEMERAL_V1], { ephemeral: true })
  const m0 = message("m0")
  w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
  w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
  assert.deepStrictEqual(w.controlsOf(b2), [`cancel ${m0.id}`], "the cancel was not written to b-2: the test sets up nothing")
  assert.strictEqual(b2.custody?.size, 2, "m0 and its cancel are not in b-2's custody: the test sets up nothing")
  assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered"])
  w.batch(b2, [{ type: "unregister" }])
  return { w, m0 }
})

describe("I2: a cancelled message handed back by a short-lived receiver that ended", () => {
  it.effect("its sender gets no expired receipt for the message it cancelled", () =>
    Effect.gen(function*() {
      const { w } = yield* cancelledThenEnded
      const receipts = w.framesOf(w.d).filter((frame) => frame.type === "message_receipt")
      assert.deepStrictEqual(receipts, [])
    }))

  it.effect("a resend is still refused as cancelled, and a cancel again is answered delivered", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* cancelledThenEnded
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered", `failed: ${Reason.cancelled}`, "delivered"])
    }))
})

describe("I5: a cancelled ask its client was written and never confirmed", () => {
  it.effect("cancelled on its way, both unconfirmed, then the drop: the same instance's return gets the ask and the cancel", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures)
      const m0 = message("m0", { expectsReply: true })
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(w.b1), [`cancel ${m0.id}`], "the cancel was not written to b-1: the test sets up nothing")
      assert.strictEqual(w.b1.custody?.size, 2, "m0 and its cancel are not in b-1's custody: the test sets up nothing")
      w.closeAbandoned(w.b1)
      const again = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(again)), [`message ${m0.id}`, `cancel ${m0.id}`])
    }))

  it.effect("cancelled in the mailbox, given to the return, which drops unconfirmed: the next return gets the ask and the cancel", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures)
      const m0 = message("m0", { expectsReply: true })
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      assert.strictEqual(w.b1.custody?.size, 1, "m0 is not in b-1's custody: the test sets up nothing")
      w.closeAbandoned(w.b1)
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      const first = w.registerB("b-1")
      assert.strictEqual(first.custody?.size, 2, "m0 and its cancel are not in the return's custody: the test sets up nothing")
      w.closeAbandoned(first)
      const again = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(again)), [`message ${m0.id}`, `cancel ${m0.id}`])
    }))

  it.effect("a new instance gets neither the cancelled ask nor its cancel", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures)
      const m0 = message("m0", { expectsReply: true })
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      w.closeAbandoned(w.b1)
      const b2 = w.registerB("b-2")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(b2)), [])
    }))
})

describe("I7: a read copy cancelled in the mailbox two hours after it was written", () => {
  it.effect("the same instance's return gets the message and the cancel", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, {}, clock)
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      assert.strictEqual(w.b1.custody?.size, 1, "m0 is not in b-1's custody: the test sets up nothing")
      w.closeAbandoned(w.b1)
      clock.now += 2 * HOUR
      // The clean-ups every send runs first (Send.prune; the idle watcher too): routes and records past the hour go.
      w.router.prune(clock.now)
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered"])
      const again = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(again)), [`message ${m0.id}`, `cancel ${m0.id}`])
    }))
})

describe("I1: a cancelled copy read by the identity's other holder (P49)", () => {
  it.effect("the holder's same instance, back, gets the message and the cancel", () =>
    Effect.gen(function*() {
      const named = { name: "B", cwd: "/tmp" }
      const w = yield* world(custodyFeatures, {}, { now: 1_000_000 }, named)
      // c shares b's identity, then departs: mail to c goes to b, its one other live holder.
      const c = w.registerOther("c", named)
      w.closeAbandoned(c)
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "c", message: m0 }])
      assert.deepStrictEqual(w.messagesOf(w.b1), [m0.id], "b-1 did not take c's mail: the test sets up nothing")
      assert.strictEqual(w.b1.custody?.size, 1, "m0 is not in b-1's custody: the test sets up nothing")
      w.closeAbandoned(w.b1)
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered"])
      const again = w.registerB("b-1", custodyFeatures, { session: registration(named) })
      assert.deepStrictEqual(messagesAndControls(w.framesOf(again)), [`message ${m0.id}`, `cancel ${m0.id}`])
    }))

  it.effect("the departed session's own return gets neither", () =>
    Effect.gen(function*() {
      const named = { name: "B", cwd: "/tmp" }
      const w = yield* world(custodyFeatures, {}, { now: 1_000_000 }, named)
      const c = w.registerOther("c", named)
      w.closeAbandoned(c)
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "c", message: m0 }])
      w.closeAbandoned(w.b1)
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      const back = w.registerOther("c", named)
      assert.deepStrictEqual(messagesAndControls(w.framesOf(back)), [])
    }))
})

describe("I6: a message in the write in progress at `unregister`, then cancelled in the mailbox", () => {
  it.effect("the same client registering again gets the message and the cancel", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures)
      const m0 = message("m0")
      // b-1's socket is slow: the write carrying m0 is still in progress.
      w.stick()
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      assert.notStrictEqual(w.b1.writer.inFlight, undefined, "no write in progress: the test sets up nothing")
      w.batch(w.b1, [{ type: "unregister" }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered"])
      const again = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(again)), [`message ${m0.id}`, `cancel ${m0.id}`])
    }))
})

/** The `timestamp`s of the cancels `frames` hold, in order. */
const cancelStamps = (frames: ReadonlyArray<{ readonly type: string; readonly control?: { readonly action?: string; readonly timestamp?: number } }>) =>
  frames.flatMap((frame) => frame.type === "message_control" && frame.control?.action === "cancel" ? [frame.control.timestamp] : [])

describe("revbm BM2: the cancel made again for a kept copy", () => {
  it.effect("cancelled on its way, the drop a minute later: the return's cancel carries the first cancel's stamp", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, {}, clock)
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      const first = cancelStamps(w.framesOf(w.b1))
      assert.deepStrictEqual(first, [1_000_000], "the cancel was not written to b-1: the test sets up nothing")
      clock.now += 60_000
      w.closeAbandoned(w.b1)
      const again = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(again)), [`message ${m0.id}`, `cancel ${m0.id}`])
      assert.deepStrictEqual(cancelStamps(w.framesOf(again)), first, "the cancel given again was stamped anew")
    }))

  it.effect("cancelled in the mailbox, given to the return, which drops a minute later: the next return's cancel carries the first stamp", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, {}, clock)
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.closeAbandoned(w.b1)
      clock.now += 1_000
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      const first = w.registerB("b-1")
      assert.deepStrictEqual(cancelStamps(w.framesOf(first)), [1_001_000], "the cancel was not written to the return: the test sets up nothing")
      clock.now += 60_000
      w.closeAbandoned(first)
      const again = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(again)), [`message ${m0.id}`, `cancel ${m0.id}`])
      assert.deepStrictEqual(cancelStamps(w.framesOf(again)), [1_001_000], "the cancel given again was stamped anew")
    }))
})
