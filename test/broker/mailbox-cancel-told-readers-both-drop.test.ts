/**
 * A cancel that tells two live readers gives each its own mail object
 * (review revr R4). When both drop without confirming, the second drop's
 * cancelled copy is kept for the first reader too: each reader's return
 * gets the message and its cancel (review revs S2: the second note replaced
 * the first, and the reader that dropped first got neither).
 * Setup as in mailbox-cancel-told-readers-not-kept-again.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message, registerFrame } from "../support/broker.ts"
import { messagesAndControls, readerWorld } from "../support/controlWorld.ts"

describe("S2: two live readers told at the cancel, both drop unconfirmed", () => {
  it.effect("each, back, is given the message and its cancel again", () =>
    Effect.gen(function*() {
      const { batch, router, connect, framesOf, closeAbandoned, register } = yield* readerWorld()
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
      // Neither confirms: both drop (b-1 first).
      closeAbandoned(b1Again)
      closeAbandoned(f1Again)
      // One copy kept (the second drop added its reader to it): counted once.
      assert.strictEqual(router.stats().withdrawnCopiesKept, 1, "the copy kept at the first drop was counted again at the second")
      const f1Third = register("f", "f-1")
      assert.deepStrictEqual(messagesAndControls(framesOf(f1Third)), [`message ${m0.id}`, `cancel ${m0.id}`], "f-1's copy was not kept")
      const b1Third = register("b", "b-1")
      assert.deepStrictEqual(messagesAndControls(framesOf(b1Third)), [`message ${m0.id}`, `cancel ${m0.id}`], "b-1, which dropped first without confirming, was not given m0 and its cancel again")
    }))
})
