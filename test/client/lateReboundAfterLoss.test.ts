/**
 * A refusal read as the late verdict of a re-sent send (review revas AS2's case through an ask's settle).
 *
 * A rebound read as the late verdict of an ask's send that was abandoned (its send timeout) and re-sent on the
 * next connection after the first dropped is marked `TargetRebound.afterLoss`, as one read by a send that
 * re-sent it itself (Resending.ts, review revas AS2): the refusal answered the re-send, and the first write,
 * which the old connection's broker may have delivered, is what it cannot speak for — so the session ends such
 * a send `DeliveryUnknown`, not `NotDelivered(E_TARGET_REBOUND)` (test/session/reboundAfterLoss*.test.ts).
 * So a "not found" is read as the loss (`ConnectionLost`, outcome unknown), as that send's own retry ends
 * on one after a loss (Resending.ts): the target may have had the first write before the broker the re-send
 * reached knew nothing of it.
 * A fake broker in memory under TestClock: it never answers the question's send; the settle's list on the first
 * connection ends it; on the second, the rebound is written ahead of the settle's answer.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { ConnectionLost, TargetRebound } from "../../src/client/errors.ts"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { ASK_EXPIRY_V1, LIST_PAGE_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { makeClient, memoryClientOptions, memoryFakeBroker } from "./support.ts"

const SEND_TIMEOUT = 1_000

/**
 * The failure an ask's late verdict holds when the broker never answers the question's first send, the settle's
 * list ends the first connection, and the second answers the re-sent question with `refusal` (code, reason).
 */
const lateRefusalOfResend = (sessionId: string, code: string, reason: string) =>
  Effect.gen(function*() {
    const question = message("well?", { expectsReply: true })
    const refusal = { type: "delivery_failed", messageId: question.id, code, reason, retryable: code === DeliveryCode.TargetRebound }
    // The first list answered is the settle's on the second connection: the refusal goes ahead of it.
    let lists = 0
    const fake = yield* memoryFakeBroker({
      features: [ASK_EXPIRY_V1, LIST_PAGE_V1],
      leaveSendUnanswered: (messageId) => messageId === question.id,
      dropOnSettle: (connection) => connection === 1,
      beforeList: () => lists++ === 0 ? [refusal] : []
    })
    const { client } = yield* makeClient(
      memoryClientOptions(fake, sessionId, "asker", { sendTimeoutMs: SEND_TIMEOUT, reconnectBaseMs: 100, reconnectMaxMs: 100 })
    )
    yield* client.connect
    const verdict = yield* client.lateVerdict({ to: "peer", message: question })
    const sending = yield* Effect.forkChild(Effect.exit(client.send({ to: "peer", message: question })), { startImmediately: true })
    yield* TestClock.adjust(SEND_TIMEOUT + 1)
    yield* Fiber.join(sending)
    const settling = yield* Effect.forkChild(client.settleRoundTrip, { startImmediately: true })
    yield* TestClock.adjust(1_000)
    assert.isTrue(yield* Fiber.join(settling), "setup: the round trip was not answered on the next connection")
    assert.strictEqual((yield* client.status).connections, 2, "setup: the first connection dropped")
    const read = yield* verdict
    return read.answer !== undefined && Exit.isFailure(read.answer) ? Cause.squash(read.answer.cause) : undefined
  })

describe("a late refusal of a re-sent abandoned send", () => {
  it.effect("a rebound is marked afterLoss: it answered the re-send after the first connection dropped", () =>
    Effect.gen(function*() {
      const failure = yield* lateRefusalOfResend("asker-0000-0005", DeliveryCode.TargetRebound, Reason.targetRebound)
      assert.instanceOf(failure, TargetRebound, `setup: the late verdict was ${String(failure)}`)
      assert.isTrue(failure instanceof TargetRebound && failure.afterLoss === true, "a rebound of the re-send read as one of the first write")
    }))

  it.effect("a not found is read as the loss (outcome unknown), not as the first write's refusal", () =>
    Effect.gen(function*() {
      const failure = yield* lateRefusalOfResend("asker-0000-0006", DeliveryCode.TargetNotFound, Reason.targetNotFound)
      assert.instanceOf(failure, ConnectionLost, `the late verdict was ${String(failure)}`)
    }))
})
