/**
 * The finish's resend of a message the ledger cannot account for asks the broker's replay record what became of it
 * (simulation/finish.ts `recordSaysOf`). Since task afterloss3 a resend of a message lost on the way within the replay
 * window ends, on the record's expiry or eviction, as the loss carrying that refusal (client/afterLoss.ts), which has
 * no `code` of its own: it must be read as the refusal's code, which the fates (untold eviction, ask expiry) match,
 * not as "ConnectionLost" (review revda's suspicion). Plain synchronous code: no clock, no world.
 */
import { assert, describe, it } from "@effect/vitest"
import { Exit } from "effect"
import { ConnectionLost, deliveryError } from "../../src/client/errors.ts"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { recordSaysOf } from "../../src/testing/simulation/finish.ts"

describe("what the finish's resend says the record holds", () => {
  it("a loss carrying the record's expiry or eviction is read as that refusal's code", () => {
    for (const [code, reason] of [[DeliveryCode.DeliveryExpired, Reason.expired], [DeliveryCode.DeliveryEvicted, Reason.evicted]] as const) {
      const refusal = deliveryError({ messageId: "m-1", code, reason, retryable: false })
      const lost = new ConnectionLost({ operation: "send", messageId: "m-1", refusal })
      assert.strictEqual(recordSaysOf(Exit.fail(lost)), code)
    }
  })

  it("a refusal is its code, a loss without a refusal its tag, a success 'delivered'", () => {
    const refusal = deliveryError({ messageId: "m-1", code: DeliveryCode.DeliveryCancelled, reason: Reason.cancelled, retryable: false })
    assert.strictEqual(recordSaysOf(Exit.fail(refusal)), DeliveryCode.DeliveryCancelled)
    assert.strictEqual(recordSaysOf(Exit.fail(new ConnectionLost({ operation: "send", messageId: "m-1" }))), "ConnectionLost")
    assert.strictEqual(recordSaysOf(Exit.succeed(undefined)), "delivered")
  })
})
