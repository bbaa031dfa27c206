/**
 * A cancel that gives a copy to a live reader and keeps it in the mailbox
 * for a reader that is away (MailDelivery.cancel -> WithdrawnCopies.give at
 * the cancel) counts the copy kept (`withdrawnCopiesKept`), as a copy kept
 * with no reader live does (review revr R5: it used to count none, while
 * the away reader's return counted a give).
 * Setup as in test/broker/mailbox-cancel-two-live-readers.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message, registerFrame } from "../support/broker.ts"
import { messagesAndControls, readerWorld } from "../support/controlWorld.ts"

describe("a cancelled copy given to one live reader, kept for one away", () => {
  it.effect("counts the copy kept for the reader away", () =>
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
      assert.deepStrictEqual(messagesAndControls(framesOf(b1Again)), [], "b-1's return took c's mail: sets up nothing")
      // f-1 is away at the cancel: b-1 is told now, the copy kept for f-1.
      batch(d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(messagesAndControls(framesOf(b1Again)), [`message ${m0.id}`, `cancel ${m0.id}`], "setup: b-1 not told")
      assert.strictEqual(router.heldMail()?.messages, 1, "setup: the copy is not kept in the mailbox for f-1")
      assert.strictEqual(router.stats().withdrawnCopiesKept, 1, "the copy kept for f-1 is not counted as kept")
    }))
})
