import { assert, describe, it } from "@effect/vitest"
import { ConnectionLost, RequestTimeout, SelfTarget, TargetNotFound } from "../../src/client/errors.ts"
import { DeliveryCode } from "../../src/protocol/delivery.ts"
import { notDelivered } from "../../src/session/Sending.ts"

describe("Sending.notDelivered", () => {
  it("a broker's refusal is NotDelivered, with its reason and code", () => {
    const error = notDelivered("Message", "B")(
      new TargetNotFound({
        messageId: "m1",
        code: DeliveryCode.TargetNotFound,
        reason: "Session not found",
        retryable: false,
        message: "Session not found"
      })
    )
    assert.strictEqual(error._tag, "NotDelivered")
    assert.strictEqual(error.message, `Message to "B" was not delivered: Session not found`)
  })

  it("a send the connection lost before its acknowledgement is DeliveryUnknown, never 'was not delivered'", () => {
    const error = notDelivered("Message", "B")(new ConnectionLost({ operation: "send", messageId: "m1" }))
    assert.strictEqual(error._tag, "DeliveryUnknown")
    assert.strictEqual(
      error.message,
      `Message to "B" may or may not have been delivered: the connection to the broker was lost before it ` +
        `acknowledged the message. Check with the recipient before sending it again, or it may arrive twice.`
    )
  })

  it("a send timeout is DeliveryUnknown and names the timeout", () => {
    const error = notDelivered("Reply", "A")(new RequestTimeout({ operation: "send", timeoutMs: 8000 }))
    assert.strictEqual(error._tag, "DeliveryUnknown")
    assert.include(error.message, `Reply to "A" may or may not have been delivered: `)
    assert.include(error.message, "within 8 s (Send timeout)")
  })

  it("the broker's E_SELF_TARGET is SelfTargetRefused", () => {
    const error = notDelivered("Message", "me")(
      new SelfTarget({
        messageId: "m1",
        code: DeliveryCode.SelfTarget,
        reason: "Cannot message yourself",
        retryable: false,
        message: "Cannot message yourself"
      })
    )
    assert.strictEqual(error._tag, "SelfTargetRefused")
  })
})
