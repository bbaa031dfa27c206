/**
 * A mailbox cancel rewrites its message's replay record only when that record is the queued mail's
 * (DeliveryRecords.rewrite's `owner`, `isRecordOfMail`). A `replace`-staged message whose `supersedes` was settled
 * while it waited is handed over without that field (Send.ts `withoutSupersedes`, review revbt bt1) while its
 * record keeps the send's fingerprint, `supersedes` included: it is still found its record's. d's m1 (supersedes
 * m0, staged) is delivered to b after d cancelled m0; b's connection drops unconfirmed, m1 goes back to the
 * mailbox, and d cancels m1 there: m1's record says cancelled, so d's retry of m1 is answered E_DELIVERY_CANCELLED
 * (review rrmk probe 4). On a Router driven by hand, the clock in the test's hands; no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { replace, stagedSettledGivenBack } from "../support/stagedSettledSupersedes.ts"

describe("a mailbox cancel of a staged message handed over without its settled supersedes", () => {
  it.effect("rewrites its replay record: a retry of it is answered cancelled, not delivered", () =>
    Effect.gen(function*() {
      const { batch, d, framesOf, m1 } = yield* stagedSettledGivenBack
      const from = framesOf(d).length
      batch(d, [{ type: "cancel_message", messageId: m1.id }])
      batch(d, [{ type: "send", to: "b", message: m1, ...replace }])
      const answers = framesOf(d).slice(from).filter((f) => f.messageId === m1.id).map((f) => f.type === "delivery_failed" ? `${f.type} ${f.code}` : f.type)
      assert.deepStrictEqual(answers, ["delivered", "delivery_failed E_DELIVERY_CANCELLED"], "d's retry of the cancelled m1 was not answered cancelled")
    }))
})
