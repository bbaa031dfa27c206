/**
 * Mail the mailbox drops by its bounds (MailDelivery.lost, as for expiry) rewrites only its own replay record
 * (`rewrite`'s owner, the mail's fingerprint), not the one found by sender and id alone. d's first message under m0
 * waits for b (away); past its replay record d sends a second under m0 to z, delivered, its record kept. d's next
 * message, queued for away y, evicts the message for b (capacity 1): a retry of the message for z is still answered
 * delivered, not E_DELIVERY_EVICTED (review rrmk probe 5). On a Router driven by hand, the clock a plain number;
 * no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { recordedSessions } from "../support/controlWorld.ts"
import { handRouter } from "../support/handRouter.ts"

describe("mail evicted under a reused id", () => {
  it.effect("leaves the record of the other message under the id, delivered: its retry is answered delivered", () =>
    Effect.gen(function*() {
      const hand = yield* handRouter({ replayRecords: 2, mailboxCapacity: 1 }, () => 1_000_000)
      const { batch, close, router } = hand
      const { connect, framesOf } = recordedSessions(hand)
      close(connect(1, "b"))
      close(connect(2, "y"))
      const z = connect(3, "z")
      connect(4, "s")
      const d = connect(5, "d")
      const m0 = message("m0")
      const forZ = { ...m0, content: { text: "for z" } }
      batch(d, [{ type: "send", to: "b", message: { ...m0, content: { text: "for b" } } }])
      // The replay bound (two records) pushes m0's record out: the next send under m0's id is a new message.
      batch(d, [{ type: "send", to: "s", message: message("other 1") }])
      batch(d, [{ type: "send", to: "s", message: message("other 2") }])
      batch(d, [{ type: "send", to: "z", message: forZ }])
      assert.strictEqual(framesOf(z).filter((f) => f.type === "message" && f.message?.id === m0.id).length, 1, "z was not written \"for z\": the probe sets up nothing")
      batch(d, [{ type: "send", to: "y", message: message("x") }])
      assert.strictEqual(router.heldMail()?.messages, 1, "\"for b\" was not evicted: the probe sets up nothing")
      const from = framesOf(d).length
      batch(d, [{ type: "send", to: "z", message: forZ }])
      const answers = framesOf(d).slice(from).filter((f) => f.messageId === m0.id).map((f) => f.type === "delivery_failed" ? `${f.type} ${f.code}` : f.type)
      assert.deepStrictEqual(answers, ["delivered"], `the retry of the delivered message for z was answered ${JSON.stringify(answers)}`)
      assert.strictEqual(framesOf(z).filter((f) => f.type === "message" && f.message?.id === m0.id).length, 1, "z was written \"for z\" again")
    }))
})
