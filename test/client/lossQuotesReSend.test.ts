/**
 * Review revce, item CE3: the loss a send ends on after a refusal of its re-send (`ConnectionLost.refusal`, and the
 * session's `DeliveryUnknown` made of it) quotes that refusal as the re-send's. Several refusals the table classes
 * `retried` or `unknown` say in their own text that nothing was sent, queued or staged — a durable broker's failed
 * commit ("…; nothing was sent. Retry once the disk has room…"), a full mailbox, full replace staging. Until this fix
 * the text was run into the sentence ("the broker reached since refuses it now: … nothing was sent …") inside "may or
 * may not have been delivered", as if it were about the first attempt. Now it stands in «…» after "refused the
 * re-send:", and nowhere else; the session's text keeps "Check with the recipient…". Pure: no broker, no clock.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConnectionLost, DeliveryFailed } from "../../src/client/errors.ts"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { notDelivered } from "../../src/session/Sending.ts"

/** How many times `part` occurs in `text`. */
const occurrences = (text: string, part: string): number => text.split(part).length - 1

describe("the loss carrying a refusal whose text says nothing was sent (review revce CE3)", () => {
  const reason = Reason.storeFailed("disk I/O error")
  const refusal = new DeliveryFailed({
    messageId: "m1",
    code: DeliveryCode.DeliveryFailed,
    reason,
    retryable: true,
    message: reason
  })
  const lost = new ConnectionLost({ operation: "send", messageId: "m1", refusal })

  it("ConnectionLost quotes the refusal whole as the re-send's, its 'nothing was sent' only inside the quote", () => {
    assert.include(reason, "nothing was sent", "setup: the refusal does not say nothing was sent")
    assert.include(lost.message, "it may or may not have been delivered.")
    assert.include(lost.message, `The broker reached since refused the re-send: «${reason}» (E_DELIVERY_FAILED)`)
    assert.strictEqual(occurrences(lost.message, "nothing was sent"), 1, lost.message)
  })

  it("the session's DeliveryUnknown quotes it so too and keeps the advice to check with the recipient", () => {
    const shown = notDelivered("Message", "B")(lost).message
    assert.include(shown, `Message to "B" may or may not have been delivered: `)
    assert.include(shown, `the broker reached since refused the re-send: «${reason}» (E_DELIVERY_FAILED)`)
    assert.strictEqual(occurrences(shown, "nothing was sent"), 1, shown)
    assert.include(shown, "Check with the recipient before sending it again, or it may arrive twice.")
  })
})
