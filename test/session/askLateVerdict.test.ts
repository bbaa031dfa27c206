/**
 * An ask whose `send` is not acknowledged within the client's send timeout,
 * against a broker with `ask-expiry-v1`, ends on the broker's verdict read
 * after that timeout (`settleUnacknowledged`, src/session/Ask.ts, reading
 * the client's `lateVerdict`): a refusal with its own error (a rebound
 * re-lists and resends; one whose re-list is not answered stands), a notice
 * that it expired in `ReplyTimeout`; and a
 * refused question is never recorded as sent. Over the fake client under
 * TestClock (the broker's late answer handed on as the real client keeps it,
 * `FakeClient.answerLate`). The real client and broker: askRefusedLate.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { deliveryError, RequestTimeout } from "../../src/client/errors.ts"
import { DeliveryCode } from "../../src/protocol/delivery.ts"
import { ASK_EXPIRY_V1, EXACT_SEND_V1 } from "../../src/protocol/features.ts"
import { DeliveryUnknown, NotDelivered, ReplyTimeout } from "../../src/session/errors.ts"
import { B, inboundMessage, reboundOnce, settle, type UnitSession, withPeers } from "./support.ts"

const TIMEOUT = 5_000

const failureOf = <A, E>(exit: Exit.Exit<A, E> | undefined) =>
  exit !== undefined && Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined

/** A session with `ask-expiry-v1` whose sends are not acknowledged within the send timeout. */
const unacknowledged = Effect.map(withPeers(), (unit) => {
  unit.client.features = [EXACT_SEND_V1, ASK_EXPIRY_V1]
  unit.client.onSend = () => Effect.fail(new RequestTimeout({ operation: "send", timeoutMs: 3_000 }))
  return unit
})

/** The id of the last question sent. */
const lastSent = (unit: UnitSession) => {
  const id = unit.client.sends.at(-1)?.message.id
  if (id === undefined) throw new Error("nothing was sent")
  return id
}

/** `onSettle`: the broker's late answer to the last question is read ahead of the round trip's answer. */
const lateAnswerThenSettled = (unit: UnitSession, code: string) =>
  Effect.suspend(() => {
    const id = lastSent(unit)
    return unit.client.answerLate(id, Exit.fail(deliveryError({ messageId: id, code, reason: `refused: ${code}`, retryable: false })))
  }).pipe(Effect.as(true))

const sentRecords = (unit: UnitSession) => unit.host.history.filter((entry) => entry._tag === "intercom_sent")

describe("ask: the broker's verdict read after the send timeout", () => {
  it.effect("a refusal (E_MUTUAL_ASK) read behind the settle ends NotDelivered with it at once, and nothing is recorded as sent", () =>
    Effect.gen(function*() {
      const unit = yield* unacknowledged
      unit.client.onSettle = lateAnswerThenSettled(unit, DeliveryCode.MutualAsk)
      const exit = yield* Effect.exit(unit.session.ask({ to: "B", message: "q", timeoutMs: TIMEOUT }))
      const failure = failureOf(exit)
      assert.isTrue(failure instanceof NotDelivered && failure.code === DeliveryCode.MutualAsk, String(failure))
      assert.strictEqual(unit.client.settles, 1)
      assert.lengthOf(sentRecords(unit), 0)
      assert.isFalse(yield* unit.session.waiting)
    }))

  it.effect("a late E_TARGET_REBOUND re-lists and sends the question again to the session the name now resolves to", () =>
    Effect.gen(function*() {
      const unit = yield* unacknowledged
      // The broker's late verdict: the target was re-bound; the list now gives B a new endpoint.
      unit.client.onSettle = Effect.sync(() => {
        unit.client.sessions = unit.client.sessions.map((session) =>
          session.id === B.id ? { ...session, endpointEpoch: "epoch-new" } : session
        )
      }).pipe(Effect.andThen(lateAnswerThenSettled(unit, DeliveryCode.TargetRebound)))
      const first = unit.client.onSend
      unit.client.onSend = (request) =>
        request.targetEpoch === "epoch-new"
          ? Effect.succeed({ messageId: request.message.id, delivery: "socket_delivered" })
          : first(request)
      const ask = yield* Effect.forkChild(unit.session.ask({ to: "B", message: "q", timeoutMs: TIMEOUT }))
      yield* settle
      assert.strictEqual(unit.client.sends.length, 2, "the question was not sent again after the late rebound")
      assert.strictEqual(unit.client.sends[1]?.targetEpoch, "epoch-new")
      yield* unit.client.push(inboundMessage(B, "r-1", "yes", { replyTo: lastSent(unit) }))
      const exit = yield* Effect.exit(Fiber.join(ask))
      assert.isTrue(Exit.isSuccess(exit) && exit.value._tag === "Replied", String(failureOf(exit)))
      assert.lengthOf(sentRecords(unit), 1)
    }))

  it.effect("an ask_expired read while the settling round trip goes unanswered ends ReplyTimeout, not DeliveryUnknown", () =>
    Effect.gen(function*() {
      const unit = yield* unacknowledged
      // The held frames bring the broker's ask_expired; the connection then drops and none comes back in the grace.
      unit.client.onSettle = Effect.suspend(() => unit.client.expireAsk(lastSent(unit))).pipe(
        Effect.andThen(unit.client.service.caughtUp),
        Effect.as(false)
      )
      const failure = failureOf(yield* Effect.exit(unit.session.ask({ to: "B", message: "q", timeoutMs: 2_000 })))
      assert.strictEqual(unit.client.settles, 1)
      assert.notInstanceOf(failure, DeliveryUnknown, String(failure))
      assert.instanceOf(failure, ReplyTimeout)
    }))

  it.effect("nothing read and the settling round trip unanswered: DeliveryUnknown, as before", () =>
    Effect.gen(function*() {
      const unit = yield* unacknowledged
      unit.client.onSettle = Effect.succeed(false)
      const failure = failureOf(yield* Effect.exit(unit.session.ask({ to: "B", message: "q", timeoutMs: 2_000 })))
      assert.isTrue(failure instanceof DeliveryUnknown && failure.sendTimedOut === true, String(failure))
      assert.lengthOf(sentRecords(unit), 0)
    }))
})

describe("ask: a rebound whose re-list is not answered (review revak AK2)", () => {
  it.effect("ends at once in NotDelivered(E_TARGET_REBOUND), the refusal that stands, not settled as delivered nor DeliveryUnknown: the question went nowhere", () =>
    Effect.gen(function*() {
      const unit = yield* withPeers()
      unit.client.features = [EXACT_SEND_V1, ASK_EXPIRY_V1]
      reboundOnce(unit.client, B)
      const rebound = unit.client.onSend
      // The broker refuses the question (E_TARGET_REBOUND); the list the session then makes is not answered.
      unit.client.onSend = (request) => {
        unit.client.listFailure = new RequestTimeout({ operation: "list", timeoutMs: 3_000 })
        return rebound(request)
      }
      const ask = yield* Effect.forkChild(unit.session.ask({ to: "B", message: "q", timeoutMs: TIMEOUT }))
      yield* TestClock.adjust(1)
      const exit = ask.pollUnsafe()
      const failure = failureOf(exit)
      assert.strictEqual(unit.client.sends.length, 1, "the question was sent once, refused, and never sent again")
      assert.strictEqual(unit.client.settles, 0)
      assert.isTrue(failure instanceof NotDelivered && failure.code === DeliveryCode.TargetRebound, `ended: ${String(failure)}`)
      assert.lengthOf(sentRecords(unit), 0)
    }))

  it.effect("a late E_TARGET_REBOUND whose re-list is not answered ends NotDelivered(E_TARGET_REBOUND), not DeliveryUnknown", () =>
    Effect.gen(function*() {
      const unit = yield* unacknowledged
      // The broker's late verdict is a rebound; the list the session then makes is not answered.
      unit.client.onSettle = Effect.sync(() => {
        unit.client.listFailure = new RequestTimeout({ operation: "list", timeoutMs: 3_000 })
      }).pipe(Effect.andThen(lateAnswerThenSettled(unit, DeliveryCode.TargetRebound)))
      const failure = failureOf(yield* Effect.exit(unit.session.ask({ to: "B", message: "q", timeoutMs: TIMEOUT })))
      assert.strictEqual(unit.client.sends.length, 1, "the question was sent once, refused late, and never sent again")
      assert.strictEqual(unit.client.settles, 1)
      assert.isTrue(failure instanceof NotDelivered && failure.code === DeliveryCode.TargetRebound, `ended: ${String(failure)}`)
      assert.lengthOf(sentRecords(unit), 0)
    }))
})
