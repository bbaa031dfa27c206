/**
 * An ask's late verdict belongs to the send it answered (review revap AP1): after a late
 * E_TARGET_REBOUND the question is sent again under the same id, and when that resend is not
 * acknowledged either, its settle does not find the first send's rebound (the settle takes the
 * answer it reads: LateVerdicts.take). Before, the ask ended NotDelivered(E_TARGET_REBOUND) though
 * the broker may hold the resent question.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber } from "effect"
import { deliveryError, RequestTimeout } from "../../src/client/errors.ts"
import { DeliveryCode } from "../../src/protocol/delivery.ts"
import { ASK_EXPIRY_V1, EXACT_SEND_V1 } from "../../src/protocol/features.ts"
import { DeliveryUnknown, NotDelivered } from "../../src/session/errors.ts"
import { B, inboundMessage, settle, withPeers } from "./support.ts"

describe("a late verdict of an ask's first send is not its resend's", () => {
  it.effect("a resend after a late rebound, itself unacknowledged with nothing read, ends DeliveryUnknown, not the first send's rebound", () =>
    Effect.gen(function*() {
      const unit = yield* withPeers()
      unit.client.features = [EXACT_SEND_V1, ASK_EXPIRY_V1]
      // Every send (the first, and the resend to the new endpoint) goes unacknowledged within the send timeout.
      unit.client.onSend = () => Effect.fail(new RequestTimeout({ operation: "send", timeoutMs: 3_000 }))
      unit.client.onSettle = Effect.suspend(() => {
        const id = unit.client.sends.at(-1)?.message.id ?? "none"
        if (unit.client.settles === 1) {
          // First settle: the broker's late answer to the first send is a rebound; the list now gives B a new endpoint.
          unit.client.sessions = unit.client.sessions.map((session) =>
            session.id === B.id ? { ...session, endpointEpoch: "epoch-new" } : session
          )
          return unit.client.answerLate(
            id,
            Exit.fail(deliveryError({ messageId: id, code: DeliveryCode.TargetRebound, reason: "rebound", retryable: true }))
          ).pipe(Effect.as(true))
        }
        // Second settle (the resend's): the connection dropped, nothing read, no round trip answered in the grace.
        return Effect.succeed(false)
      })
      const exit = yield* Effect.exit(unit.session.ask({ to: "B", message: "q", timeoutMs: 5_000 }))
      assert.strictEqual(unit.client.sends.length, 2, "the question was sent again after the late rebound")
      assert.strictEqual(unit.client.settles, 2)
      const failure = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
      assert.isFalse(
        failure instanceof NotDelivered && failure.code === DeliveryCode.TargetRebound,
        "the resend ended on the first send's E_TARGET_REBOUND"
      )
      assert.isTrue(failure instanceof DeliveryUnknown && failure.sendTimedOut === true, String(failure))
    }))

  it.effect("a resend after a late rebound, unacknowledged, whose settle is answered on a new connection with nothing read, is not ended by the first send's rebound", () =>
    Effect.gen(function*() {
      const unit = yield* withPeers()
      unit.client.features = [EXACT_SEND_V1, ASK_EXPIRY_V1]
      // Every send (the first, and the resend to the new endpoint) goes unacknowledged within the send timeout.
      unit.client.onSend = () => Effect.fail(new RequestTimeout({ operation: "send", timeoutMs: 3_000 }))
      unit.client.onSettle = Effect.suspend(() => {
        const id = unit.client.sends.at(-1)?.message.id ?? "none"
        if (unit.client.settles === 1) {
          // First settle: the broker's late answer to the first send is a rebound; the list now gives B a new endpoint.
          unit.client.sessions = unit.client.sessions.map((session) =>
            session.id === B.id ? { ...session, endpointEpoch: "epoch-new" } : session
          )
          return unit.client.answerLate(
            id,
            Exit.fail(deliveryError({ messageId: id, code: DeliveryCode.TargetRebound, reason: "rebound", retryable: true }))
          ).pipe(Effect.as(true))
        }
        // Second settle (the resend's): answered on the next connection; the resend's own answer was lost with the old one.
        return Effect.succeed(true)
      })
      const ask = yield* Effect.forkChild(unit.session.ask({ to: "B", message: "q", timeoutMs: 5_000 }))
      yield* settle
      // Settled as delivered (the documented rule), the ask waits on: a reply to the resent question answers it.
      yield* unit.client.push(inboundMessage(B, "r-1", "yes", { replyTo: unit.client.sends.at(-1)?.message.id ?? "none" }))
      const exit = yield* Effect.exit(Fiber.join(ask))
      assert.strictEqual(unit.client.sends.length, 2, "the question was sent again after the late rebound")
      assert.strictEqual(unit.client.settles, 2)
      const failure = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
      assert.isFalse(
        failure instanceof NotDelivered && failure.code === DeliveryCode.TargetRebound,
        "the resend ended on the first send's E_TARGET_REBOUND"
      )
      assert.isTrue(Exit.isSuccess(exit) && exit.value._tag === "Replied", String(failure))
    }))
})
