/**
 * A blocking `contact_supervisor` whose `supervisor_send` is not
 * acknowledged within the client's send timeout, over the fake client under
 * TestClock: with `ask-expiry-v1` it settles with the broker as `ask` does
 * (`settleUnacknowledged`, Ask.ts) — a reply read before the round trip's
 * answer answers it, the broker's notice read there ends it in the usual
 * timeout text, a refusal or `queued` read late ends it so — and without the extension it still ends "may or may not
 * have been delivered".
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import { deliveryError, RequestTimeout } from "../../src/client/errors.ts"
import { DeliveryCode } from "../../src/protocol/delivery.ts"
import { ASK_EXPIRY_V1, EXACT_SEND_V1 } from "../../src/protocol/features.ts"
import { SUPERVISOR_TO } from "../../src/client/requests.ts"
import { inboundMessage, settle, SUP, supervisorBridge, type UnitSession, withPeers } from "./support.ts"

/** A child session bound to SUP whose sends are never acknowledged (the send timeout, 3 s). */
const unacknowledgedChild = (features: ReadonlyArray<string>) =>
  Effect.map(withPeers({ childBridge: supervisorBridge, askTimeoutMs: 120_000 }), (unit) => {
    unit.client.supervisorSessionId = SUP.id
    unit.client.features = features
    unit.client.onSend = () => Effect.fail(new RequestTimeout({ operation: "send", timeoutMs: 3_000 }))
    return unit
  })

const contact = (unit: UnitSession) => {
  const tool = unit.session.contactSupervisor
  if (tool === undefined) throw new Error("contact_supervisor is missing")
  return tool
}

/** The id of the last question sent to the supervisor. */
const questionId = (unit: UnitSession) => {
  const id = unit.client.supervisorSends.at(-1)?.message.id
  if (id === undefined) throw new Error("nothing was sent to the supervisor")
  return id
}

describe("contact_supervisor: a question not acknowledged within the send timeout", () => {
  it.effect("ask-expiry-v1: a reply read before the settling round trip's answer answers it", () =>
    Effect.gen(function*() {
      const unit = yield* unacknowledgedChild([EXACT_SEND_V1, ASK_EXPIRY_V1])
      // The broker accepted the question and the supervisor's reply, written ahead of the round trip's answer.
      unit.client.onSettle = Effect.suspend(() =>
        unit.client.push(inboundMessage(SUP, "r-1", "Use the stable API.", { replyTo: questionId(unit) }))
      ).pipe(Effect.andThen(unit.client.service.caughtUp), Effect.as(true))
      const result = yield* contact(unit)({ reason: "need_decision", message: "Stable or experimental API?" })
      assert.deepStrictEqual([result.text, result.isError], ["Use the stable API.", false])
      assert.strictEqual(unit.client.settles, 1)
      assert.isFalse(yield* unit.session.waiting)
    }))

  it.effect("ask-expiry-v1: the broker's notice read before the round trip's answer ends it in the timeout text", () =>
    Effect.gen(function*() {
      const unit = yield* unacknowledgedChild([EXACT_SEND_V1, ASK_EXPIRY_V1])
      unit.client.onSettle = Effect.suspend(() => unit.client.expireAsk(questionId(unit))).pipe(
        Effect.andThen(unit.client.service.caughtUp),
        Effect.as(true)
      )
      const fiber = yield* Effect.forkChild(contact(unit)({ reason: "need_decision", message: "?" }))
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual([result.text, result.isError], ['No reply from "planner" within 2 minutes', true])
      assert.isFalse(yield* unit.session.waiting)
    }))

  it.effect("ask-expiry-v1: the broker's late 'queued' read before the round trip's answer ends it queued, not waiting", () =>
    Effect.gen(function*() {
      const unit = yield* unacknowledgedChild([EXACT_SEND_V1, ASK_EXPIRY_V1])
      unit.client.onSettle = Effect.suspend(() => {
        const id = questionId(unit)
        return unit.client.answerLate(id, Exit.succeed({ messageId: id, delivery: "queued" }))
      }).pipe(Effect.as(true))
      const result = yield* contact(unit)({ reason: "need_decision", message: "?" })
      assert.deepStrictEqual([result.text, result.isError], ['Message queued for planner', false])
      assert.strictEqual(result.details?.["queued"], true)
      assert.isFalse(yield* unit.session.waiting)
    }))

  it.effect("ask-expiry-v1: a late acknowledgement is noted under the `to` one read in time is (the supervisor, not its display name)", () =>
    Effect.gen(function*() {
      const unit = yield* unacknowledgedChild([EXACT_SEND_V1, ASK_EXPIRY_V1])
      unit.client.onSettle = Effect.suspend(() => {
        const id = questionId(unit)
        return unit.client.answerLate(id, Exit.succeed({ messageId: id, delivery: "socket_delivered" }))
      }).pipe(Effect.as(true))
      const fiber = yield* Effect.forkChild(contact(unit)({ reason: "need_decision", message: "?" }))
      yield* settle
      // The client's `supervisorSend` notes an acknowledgement read in time under SUPERVISOR_TO (IntercomClient.ts).
      assert.deepStrictEqual(unit.client.lateAcknowledged.map((request) => request.to), [SUPERVISOR_TO])
      yield* unit.client.push(inboundMessage(SUP, "r-1", "Yes.", { replyTo: questionId(unit) }))
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual([result.text, result.isError], ["Yes.", false])
    }))

  it.effect("ask-expiry-v1: the broker's late refusal ends it with that refusal", () =>
    Effect.gen(function*() {
      const unit = yield* unacknowledgedChild([EXACT_SEND_V1, ASK_EXPIRY_V1])
      unit.client.onSettle = Effect.suspend(() => {
        const id = questionId(unit)
        return unit.client.answerLate(
          id,
          Exit.fail(deliveryError({ messageId: id, code: DeliveryCode.TooManyAsks, reason: "too many asks", retryable: false }))
        )
      }).pipe(Effect.as(true))
      const result = yield* contact(unit)({ reason: "need_decision", message: "?" })
      assert.isTrue(result.isError)
      assert.strictEqual(result.details?.["code"], DeliveryCode.TooManyAsks)
      assert.lengthOf(unit.host.history.filter((entry) => entry._tag === "intercom_sent"), 0)
    }))

  it.effect("without ask-expiry-v1 it ends 'may or may not have been delivered', with no round trip", () =>
    Effect.gen(function*() {
      const unit = yield* unacknowledgedChild([EXACT_SEND_V1])
      const result = yield* contact(unit)({ reason: "need_decision", message: "?" })
      assert.isTrue(result.isError)
      assert.include(result.text, "may or may not have been delivered")
      assert.strictEqual(unit.client.settles, 0)
    }))
})
