/**
 * A cancel of a mailbox copy read by two client instances, both live again
 * without having taken it, gives it to each (`MailDelivery.cancel`, review
 * revl L3 with L6's readers). c's mail m0 was read by P49 holders b-1 and
 * then f-1, each dropping unconfirmed; both are back and live without
 * having taken it (another holder, e, is live, so neither is the sole
 * holder); d cancels m0. Both are given the message and the cancel now; e,
 * which never read it, nothing. The cancel used to tell only the last live
 * reader it found, leaving b-1 untold until a return that may never come
 * (review revm M5).
 *
 * On a Router driven by hand, with every connection's frames recorded.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message, registerFrame } from "../support/broker.ts"
import { messagesAndControls, readerWorld } from "../support/controlWorld.ts"

describe("a cancelled copy with two readers, both live", () => {
  it.effect("both live readers are given the message and the cancel", () =>
    Effect.gen(function*() {
      const { batch, connect, framesOf, closeAbandoned, register } = yield* readerWorld()
      const d = connect()
      batch(d, [registerFrame({ sessionId: "d" })])
      closeAbandoned(register("c"))
      const b1 = register("b", "b-1")
      const m0 = message("m0")
      batch(d, [{ type: "send", to: "c", message: m0 }])
      assert.deepStrictEqual(messagesAndControls(framesOf(b1)), [`message ${m0.id}`], "b-1 did not take c's mail")
      closeAbandoned(b1)
      const f1 = register("f", "f-1")
      assert.deepStrictEqual(messagesAndControls(framesOf(f1)), [`message ${m0.id}`], "f-1 did not take c's mail")
      // e registers while f-1 is live (not the sole holder then: it takes nothing), and stays.
      const e = register("e")
      assert.deepStrictEqual(messagesAndControls(framesOf(e)), [], "e took c's mail: the test sets up nothing")
      closeAbandoned(f1)
      const b1Again = register("b", "b-1")
      const f1Again = register("f", "f-1")
      assert.deepStrictEqual(messagesAndControls(framesOf(b1Again)), [], "b-1's return took c's mail: sets up nothing")
      assert.deepStrictEqual(messagesAndControls(framesOf(f1Again)), [], "f-1's return took c's mail: sets up nothing")
      batch(d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(messagesAndControls(framesOf(e)), [], "e, which never read it, was given it")
      assert.deepStrictEqual(messagesAndControls(framesOf(f1Again)), [`message ${m0.id}`, `cancel ${m0.id}`])
      assert.deepStrictEqual(messagesAndControls(framesOf(b1Again)), [`message ${m0.id}`, `cancel ${m0.id}`])
    }))
})
