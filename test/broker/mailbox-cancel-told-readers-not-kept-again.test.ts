/**
 * A cancel that tells every live reader (review revm M5) gives each its own
 * mail object, marked read by that reader only (WithdrawnCopies.give): when
 * one told reader's connection then drops without confirming,
 * `keepCancelled` keeps the copy for that reader alone, and the other told
 * reader, which confirmed the message and its cancel, is not given them
 * again at its next registration (review revr R4: the one object given to
 * all kept the mark naming every reader).
 * Setup as in test/broker/mailbox-cancel-two-live-readers.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message, registerFrame } from "../support/broker.ts"
import { messagesAndControls, readerWorld } from "../support/controlWorld.ts"

describe("two live readers told at the cancel, one drops unconfirmed", () => {
  it.effect("the reader that confirmed is not given the copy again; the one that dropped is", () =>
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
      // b-1 confirms both and leaves; f-1 drops without confirming.
      batch(b1Again, [{ type: "received", frames: b1Again.framesWritten }])
      assert.strictEqual(b1Again.custody?.size, 0, "setup: b-1 did not confirm")
      closeAbandoned(b1Again)
      closeAbandoned(f1Again)
      const b1Third = register("b", "b-1")
      assert.deepStrictEqual(messagesAndControls(framesOf(b1Third)), [], "b-1, which confirmed m0 and its cancel, was given them again")
      // f-1, which dropped without confirming, is still owed them.
      const f1Third = register("f", "f-1")
      assert.deepStrictEqual(messagesAndControls(framesOf(f1Third)), [`message ${m0.id}`, `cancel ${m0.id}`], "f-1's copy was not kept")
    }))
})
