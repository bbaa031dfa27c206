/**
 * A rebound read as the late verdict of an ask's send that was abandoned (its send timeout) and re-sent on the
 * next connection after the first dropped is marked `TargetRebound.afterLoss`, as one read by a send that
 * re-sent it itself (Resending.ts, review revas AS2): the refusal answered the re-send, and the first write,
 * which the old connection's broker may have delivered, is what it cannot speak for — so the session ends such
 * a send `DeliveryUnknown`, not `NotDelivered(E_TARGET_REBOUND)` (test/session/reboundAfterLoss*.test.ts).
 * A fake broker in memory under TestClock: it never answers the question's send; the settle's list on the first
 * connection ends it; on the second, the rebound is written ahead of the settle's answer.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { TargetRebound } from "../../src/client/errors.ts"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { ASK_EXPIRY_V1, LIST_PAGE_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { makeClient, memoryClientOptions, memoryFakeBroker } from "./support.ts"

const SEND_TIMEOUT = 1_000

describe("a late rebound of a re-sent abandoned send", () => {
  it.effect("is marked afterLoss: it answered the re-send after the first connection dropped", () =>
    Effect.gen(function*() {
      const question = message("well?", { expectsReply: true })
      const rebound = {
        type: "delivery_failed",
        messageId: question.id,
        code: DeliveryCode.TargetRebound,
        reason: Reason.targetRebound,
        retryable: true
      }
      // The first list answered is the settle's on the second connection: the rebound goes ahead of it.
      let lists = 0
      const fake = yield* memoryFakeBroker({
        features: [ASK_EXPIRY_V1, LIST_PAGE_V1],
        leaveSendUnanswered: (messageId) => messageId === question.id,
        dropOnSettle: (connection) => connection === 1,
        beforeList: () => lists++ === 0 ? [rebound] : []
      })
      const { client } = yield* makeClient(
        memoryClientOptions(fake, "asker-0000-0005", "asker", { sendTimeoutMs: SEND_TIMEOUT, reconnectBaseMs: 100, reconnectMaxMs: 100 })
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
      const failure = read.answer !== undefined && Exit.isFailure(read.answer) ? Cause.squash(read.answer.cause) : undefined
      assert.instanceOf(failure, TargetRebound, `setup: the late verdict was ${String(failure)}`)
      assert.isTrue(failure instanceof TargetRebound && failure.afterLoss === true, "a rebound of the re-send read as one of the first write")
    }))
})
