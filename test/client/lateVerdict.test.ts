/**
 * `IntercomClient.lateVerdict` (LateVerdicts.ts): the broker's answer to an
 * ask's `send` read after the send timeout — the connection no longer waits
 * for it — is kept for the ask watching it, and read by an asker settling
 * (src/session/Ask.ts `settleUnacknowledged`) once its round trip is
 * answered, behind that answer. A fake broker in memory under TestClock
 * that answers a send only when the connection's next frame comes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber, Scope, Stream } from "effect"
import { TestClock } from "effect/testing"
import { RequestTimeout } from "../../src/client/errors.ts"
import { LateVerdicts } from "../../src/client/LateVerdicts.ts"
import type { SendAnswer } from "../../src/client/PendingSends.ts"
import type { BrokerStateLost } from "../../src/client/StateEpochs.ts"
import { ASK_EXPIRY_V1, LIST_PAGE_V1, STATE_EPOCH_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { makeClient, memoryClientOptions, memoryFakeBroker } from "./support.ts"

const SEND_TIMEOUT = 1_000

describe("IntercomClient.lateVerdict", () => {
  it.effect("keeps the acknowledgement of a watched ask read after its send timed out, read once the settle is answered", () =>
    Effect.gen(function*() {
      const fake = yield* memoryFakeBroker({ features: [ASK_EXPIRY_V1, LIST_PAGE_V1], holdSendAnswers: true, detailedSendAnswers: true })
      const { client } = yield* makeClient(memoryClientOptions(fake, "asker-0000-0001", "asker", { sendTimeoutMs: SEND_TIMEOUT }))
      yield* client.connect
      const question = message("well?", { expectsReply: true })
      const unwatched = message("and this?", { expectsReply: true })
      const verdict = yield* client.lateVerdict({ to: "peer", message: question })
      const sending = yield* Effect.forkChild(Effect.exit(client.send({ to: "peer", message: question })), { startImmediately: true })
      const other = yield* Effect.forkChild(Effect.exit(client.send({ to: "peer", message: unwatched })), { startImmediately: true })
      yield* TestClock.adjust(SEND_TIMEOUT + 1)
      const timedOut = yield* Fiber.join(sending)
      assert.isTrue(Exit.isFailure(timedOut) && Cause.squash(timedOut.cause) instanceof RequestTimeout, "the send did not time out")
      yield* Fiber.join(other)
      assert.isUndefined((yield* verdict).answer, "nothing is read before the broker's answer")
      // The round trip's list is the connection's next frame: the broker writes the held answers first.
      assert.isTrue(yield* client.settleRoundTrip)
      const read = yield* verdict
      assert.isTrue(
        read.answer !== undefined && Exit.isSuccess(read.answer) && read.answer.value.messageId === question.id,
        "the late acknowledgement was not kept"
      )
      assert.isFalse(read.expired)
    }))

  it.effect("a late acknowledgement counts as one in time: a memory broker's state loss lists the ask", () =>
    Effect.gen(function*() {
      // The held acknowledgement is written as the settle's list comes, and the connection then drops; the
      // broker the client reconnects to holds another state.
      const fake = yield* memoryFakeBroker({
        features: [ASK_EXPIRY_V1, LIST_PAGE_V1, STATE_EPOCH_V1],
        holdSendAnswers: true, detailedSendAnswers: true,
        dropOnSettle: (connection) => connection === 1,
        stateEpochOf: (connection) => `epoch-${connection}`
      })
      const { client } = yield* makeClient(
        memoryClientOptions(fake, "asker-0000-0003", "asker", { sendTimeoutMs: SEND_TIMEOUT, reconnectBaseMs: 100, reconnectMaxMs: 100 })
      )
      yield* client.connect
      const lost: Array<BrokerStateLost> = []
      yield* Effect.forkChild(Stream.runForEach(client.stateLost, (event) => Effect.sync(() => lost.push(event))), {
        startImmediately: true
      })
      const question = message("well?", { expectsReply: true })
      const verdict = yield* client.lateVerdict({ to: "peer", message: question })
      const sending = yield* Effect.forkChild(Effect.exit(client.send({ to: "peer", message: question })), { startImmediately: true })
      yield* TestClock.adjust(SEND_TIMEOUT + 1)
      yield* Fiber.join(sending)
      const settling = yield* Effect.forkChild(client.settleRoundTrip, { startImmediately: true })
      yield* TestClock.adjust(1_000)
      assert.isTrue(yield* Fiber.join(settling), "the round trip was not answered on the next connection")
      const read = yield* verdict
      assert.isTrue(read.answer !== undefined && Exit.isSuccess(read.answer), "the late acknowledgement was not kept")
      assert.deepStrictEqual(lost.map((event) => event.asks.map((ask) => ask.messageId)), [[question.id]])
    }))

  it.effect("keeps nothing for an ask whose Scope closed before its late answer was read", () =>
    Effect.gen(function*() {
      const fake = yield* memoryFakeBroker({ features: [ASK_EXPIRY_V1, LIST_PAGE_V1], holdSendAnswers: true, detailedSendAnswers: true })
      const { client } = yield* makeClient(memoryClientOptions(fake, "asker-0000-0002", "asker", { sendTimeoutMs: SEND_TIMEOUT }))
      yield* client.connect
      const question = message("q", { expectsReply: true })
      const scope = yield* Scope.make()
      const verdict = yield* Scope.provide(client.lateVerdict({ to: "peer", message: question }), scope)
      const sending = yield* Effect.forkChild(Effect.exit(client.send({ to: "peer", message: question })), { startImmediately: true })
      yield* TestClock.adjust(SEND_TIMEOUT + 1)
      yield* Fiber.join(sending)
      yield* Scope.close(scope, Exit.void)
      // The held acknowledgement is written ahead of the round trip's answer: read after the watch ended.
      assert.isTrue(yield* client.settleRoundTrip)
      assert.deepStrictEqual(yield* verdict, { answer: undefined, expired: false }, "the late answer was kept past the watch")
    }))

  it.effect("keeps no bare answer for a watched id: a cancel's (P71) whose cancel was let go, not the ask's own send's", () =>
    Effect.gen(function*() {
      const question = message("q", { expectsReply: true })
      // The question's send is never answered; a cancel of its id was let go detached (dropped when the send was
      // written, or past the bound), so the bare refusal answering it is read as the settle's list is answered.
      const fake = yield* memoryFakeBroker({
        features: [ASK_EXPIRY_V1, LIST_PAGE_V1],
        leaveSendUnanswered: (messageId) => messageId === question.id,
        beforeList: () => [{ type: "delivery_failed", messageId: question.id, reason: "Message cannot be cancelled by this session" }]
      })
      const { client } = yield* makeClient(memoryClientOptions(fake, "asker-0000-0004", "asker", { sendTimeoutMs: SEND_TIMEOUT }))
      yield* client.connect
      const verdict = yield* client.lateVerdict({ to: "peer", message: question })
      const sending = yield* Effect.forkChild(Effect.exit(client.send({ to: "peer", message: question })), { startImmediately: true })
      yield* TestClock.adjust(SEND_TIMEOUT + 1)
      yield* Fiber.join(sending)
      assert.isTrue(yield* client.settleRoundTrip)
      assert.deepStrictEqual(yield* verdict, { answer: undefined, expired: false }, "a cancel's bare answer was kept as the ask's verdict")
    }))

  it("keeps nothing for an id not watched, and a take takes the answer it gives", () => {
    const verdicts = new LateVerdicts()
    const question = message("q", { expectsReply: true })
    const queued: SendAnswer = Exit.succeed({ messageId: question.id, delivery: "queued" })
    verdicts.watch({ to: "peer", message: question })
    assert.isDefined(verdicts.answered(question.id, queued))
    const other: SendAnswer = Exit.succeed({ messageId: "other", delivery: "queued" })
    assert.isUndefined(verdicts.answered("other", other))
    verdicts.expired(question.id)
    assert.deepStrictEqual(verdicts.take(question.id), { answer: queued, expired: true })
    // The first send's answer is not a later send's of the same id (a rebound's resend: review revap AP1).
    assert.deepStrictEqual(verdicts.take(question.id), { answer: undefined, expired: true })
    verdicts.unwatch(question.id)
    assert.deepStrictEqual(verdicts.take(question.id), { answer: undefined, expired: false })
  })
})
