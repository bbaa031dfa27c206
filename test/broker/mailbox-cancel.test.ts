/**
 * Review revd (helper mbctl): a cancel of a message that went back to the
 * mailbox after a client read it and its connection dropped before it
 * confirmed reading it.
 *
 * The client may have shown the message to its agent (pi's journal keeps
 * it). The cancel used to take the copy out of the mailbox, answer the
 * sender `delivered`, and tell nobody: the same client instance, back,
 * kept acting on a message its sender was told was withdrawn. Now that
 * instance's return gets the message again (its client drops it when it
 * read it already) and the `message_control` cancel right behind it, as a
 * cancel of a message still on its way reaches that instance's rejoin; a
 * new instance, which never got the message, gets neither
 * (WithdrawnCopies.ts, docs/protocol.md).
 *
 * On a Router driven by hand (control-instance.test.ts's world): writes
 * complete at once, and each connection's frames are recorded.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DEFAULT_MAILBOX_RETENTION_MS } from "../../src/broker/options.ts"
import { Reason } from "../../src/protocol/delivery.ts"
import { message, registration } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"

/** `frames` as `message id` / `cancel id`, in the order they were written. */
/** d's m0 (an ask with `ask`) written to b-1, unconfirmed; b-1's connection drops: m0 is back in the mailbox. */
const readThenDropped = (ask = false, options = {}, clock = { now: 1_000_000 }) =>
  Effect.gen(function*() {
    const w = yield* world(custodyFeatures, options, clock)
    const m0 = message("m0", ask ? { expectsReply: true } : {})
    w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
    assert.strictEqual(w.b1.custody?.size, 1, "m0 is not in b-1's custody: the test sets up nothing")
    w.closeAbandoned(w.b1)
    return { w, m0 }
  })

describe("a cancel of a message back in the mailbox after its client read it and dropped", () => {
  it.effect("the same instance's return gets the message and the cancel right behind it; the sender is answered delivered", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* readThenDropped()
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered"])
      const again = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(again)), [`message ${m0.id}`, `cancel ${m0.id}`])
    }))

  it.effect("a new instance gets neither the message nor the cancel, and a cancel again is answered delivered with no control", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* readThenDropped()
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      const b2 = w.registerB("b-2")
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(messagesAndControls(w.framesOf(b2)), [])
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered", "delivered"])
    }))

  it.effect("a cancel repeated before the return: answered delivered again, and the return gets one cancel", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* readThenDropped()
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      const again = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(again)), [`message ${m0.id}`, `cancel ${m0.id}`])
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered", "delivered"])
    }))

  it.effect("a resend of the cancelled message is still refused as cancelled after the return", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* readThenDropped()
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      w.registerB("b-1")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered", `failed: ${Reason.cancelledQueued}`])
    }))

  it.effect("an ask: the same instance's return gets the ask and the cancel right behind it", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* readThenDropped(true)
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      const again = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(again)), [`message ${m0.id}`, `cancel ${m0.id}`])
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered"])
    }))

  it.effect("an ask cancelled, then withdrawn by `cancel_ask` too: the same instance's return still gets the ask and the cancel", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* readThenDropped(true)
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      w.batch(w.d, [{ type: "cancel_ask", messageId: m0.id }])
      const again = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(again)), [`message ${m0.id}`, `cancel ${m0.id}`])
    }))

  it.effect("the cancelled copy pushed out of the mailbox: its sender gets no expired receipt, and the return gets nothing of it", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* readThenDropped(false, { mailboxCapacity: 1 })
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      const receipts = w.framesOf(w.d).filter((frame) => frame.type === "message_receipt")
      assert.deepStrictEqual(receipts, [], "the sender was told a message it cancelled expired")
      const again = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(again)), [`message ${m1.id}`])
    }))
})

describe("a cancelled copy that goes before its client returns", () => {
  it.effect("expired in the mailbox: its sender gets no expired receipt, and the return gets nothing of it", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const { w, m0 } = yield* readThenDropped(false, {}, clock)
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      clock.now += DEFAULT_MAILBOX_RETENTION_MS + 1
      const again = w.registerB("b-1")
      const receipts = w.framesOf(w.d).filter((frame) => frame.type === "message_receipt")
      assert.deepStrictEqual(receipts, [], "the sender was told a message it cancelled expired")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(again)), [])
    }))
})

describe("a cancel of a copy no client read", () => {
  it.effect("left in the untaken write when the connection dropped: taken out of the mailbox, and the return gets nothing of it", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures)
      const m0 = message("m0")
      // b-1's socket takes no write from now on: m0 was never written, so never in custody.
      w.stick()
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      assert.strictEqual(w.b1.custody?.size ?? 0, 0, "m0 is in b-1's custody: the test sets up nothing")
      w.closeAbandoned(w.b1)
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      const again = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(again)), [])
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered"])
    }))
})

describe("a cancel of a copy its client read and gave back by `unregister`", () => {
  it.effect("the same client registering again gets the message and the cancel; the sender is answered delivered", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures)
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      assert.strictEqual(w.b1.custody?.size, 1, "m0 is not in b-1's custody: the test sets up nothing")
      w.batch(w.b1, [{ type: "unregister" }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      const again = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(again)), [`message ${m0.id}`, `cancel ${m0.id}`])
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered"])
    }))

  it.effect("another client registering the id gets neither", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures)
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.b1, [{ type: "unregister" }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      const b2 = w.registerB("b-2")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(b2)), [])
    }))
})

describe("a cancelled copy while another session holds its receiver's mailbox identity (P49)", () => {
  it.effect("that session's registration does not take it: the receiver's own return still gets the message and the cancel", () =>
    Effect.gen(function*() {
      const named = { name: "B", cwd: "/tmp" }
      const w = yield* world(custodyFeatures, {}, { now: 1_000_000 }, named)
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      assert.strictEqual(w.b1.custody?.size, 1, "m0 is not in b-1's custody: the test sets up nothing")
      w.closeAbandoned(w.b1)
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      // Another session of b's name and directory: the mailbox gives it b's mail by that identity.
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      const c = w.registerOther("c", named)
      assert.deepStrictEqual(messagesAndControls(w.framesOf(c)), [`message ${m1.id}`], "c did not take b's mail by identity: the test sets up nothing")
      w.closeAbandoned(c)
      const again = w.registerB("b-1", custodyFeatures, { session: registration(named) })
      assert.deepStrictEqual(messagesAndControls(w.framesOf(again)), [`message ${m0.id}`, `cancel ${m0.id}`])
    }))
})

describe("a cancel of a message on its way, its client dropping before it confirmed either, with no session back yet", () => {
  /** d's m0 written to b-1, then d's cancel written behind it, neither confirmed; b-1's connection drops. */
  const cancelledThenDropped = Effect.gen(function*() {
    const w = yield* world(custodyFeatures)
    const m0 = message("m0")
    w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
    w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
    assert.deepStrictEqual(w.controlsOf(w.b1), [`cancel ${m0.id}`], "the cancel was not written to b-1: the test sets up nothing")
    assert.strictEqual(w.b1.custody?.size, 2, "m0 and its cancel are not in b-1's custody: the test sets up nothing")
    w.closeAbandoned(w.b1)
    return { w, m0 }
  })

  it.effect("the same instance's return gets the message and the cancel again", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* cancelledThenDropped
      const again = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(again)), [`message ${m0.id}`, `cancel ${m0.id}`])
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered"])
    }))

  it.effect("a new instance gets neither", () =>
    Effect.gen(function*() {
      const { w } = yield* cancelledThenDropped
      const b2 = w.registerB("b-2")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(b2)), [])
    }))

  it.effect("superseded instead: the same instance's return gets the new message alone, which names the old one", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures)
      const m0 = message("m0")
      const m1 = message("m1", { supersedes: m0.id })
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      w.closeAbandoned(w.b1)
      const again = w.registerB("b-1")
      const frames = w.framesOf(again)
      assert.deepStrictEqual(messagesAndControls(frames), [`message ${m1.id}`])
      assert.strictEqual(frames.find((frame) => frame.type === "message")?.message?.supersedes, m0.id)
    }))
})
