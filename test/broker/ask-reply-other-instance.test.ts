/**
 * A reply follows the session, not the asking client instance (sim seed
 * 16843 of `--settle-hold --delivery`). Instance a-1 of session `a` asks
 * `t`; another client (a base client, no extensions: the broker's write is
 * its delivery) takes `a` over and reads `t`'s reply for good. Then the
 * asker's client registers `a` again — as a new instance, or as a-1
 * rejoining — and sends its ask again with the same message id, as a client
 * does with a send it has no answer for: a replay (P46), answered
 * `delivered` from its record. Granted `reply-elsewhere-v1`, it is then told
 * `ask_answered_elsewhere` naming the reply (AnsweredAsks.ts), and given no
 * copy; without the extension nothing more comes, as before. And never told
 * so when the reply can still reach it. Over a real Unix socket.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ASK_TIMEOUT_V1, RECEIVED_V1, REJOIN_V1, REPLY_ELSEWHERE_V1, TAKEOVER_V1 } from "../../src/protocol/features.ts"
import type { BrokerFrame } from "../../src/protocol/index.ts"
import { ackFor, message, messageFor, send, withBroker } from "../support/broker.ts"
import type { WireClient } from "../support/wire.ts"

const BASE_ASKER = [ASK_TIMEOUT_V1, TAKEOVER_V1, REJOIN_V1]
const ASKER = [...BASE_ASKER, REPLY_ELSEWHERE_V1]
const TIMEOUT_MS = 60_000

/** What `client` received about the ask `questionId`: replies to it (their ids) and `ask_answered_elsewhere` notices (`replyId`s). */
const aboutAsk = (client: WireClient, questionId: string) => {
  const frames: ReadonlyArray<BrokerFrame> = client.received()
  return {
    replies: frames.flatMap((frame) => frame.type === "message" && frame.message.replyTo === questionId ? [frame.message.id] : []),
    elsewhere: frames.flatMap((frame) => frame.type === "ask_answered_elsewhere" && frame.messageId === questionId ? [frame.replyId] : [])
  }
}

/** Sends the ask `question` again on `client` (same id) and returns its answer, after a round trip behind it. */
const resend = (client: WireClient, question: ReturnType<typeof message>) =>
  Effect.gen(function*() {
    yield* client.send({ type: "send", to: "t", message: question, askTimeoutMs: TIMEOUT_MS })
    const answer = yield* ackFor(client, question.id)
    // A round trip behind the resend: anything the broker wrote for it has been read by now.
    yield* client.roundTrip
    return answer
  })

/**
 * a-1 asks `t` (acknowledged); a base client takes `a` over; `t` replies and
 * the base client reads the reply. Then the asker registers `a` again as
 * `returningAs` with `features` and sends the ask again, same id. Returns the
 * answer to the resend and what the returning asker received about the ask.
 */
const askAnsweredElsewhere = (returningAs: string, features: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const broker = yield* withBroker()
    const asker = yield* broker.session({ sessionId: "a", label: "a-1", frame: { features, instanceId: "a-1" } })
    const target = yield* broker.session({ sessionId: "t" })
    const question = message("well?", { expectsReply: true })
    const asked = yield* send(asker.client, "t", question, { askTimeoutMs: TIMEOUT_MS })
    assert.strictEqual(asked.type, "delivered", "the ask was not delivered: the test sets up nothing")
    yield* messageFor(target.client, question.id)

    // Another client (no extensions) takes the session over; the asker's connection is told and ended.
    const other = yield* broker.session({ sessionId: "a", label: "other" })
    yield* asker.client.next("taken_over")
    yield* asker.client.waitClosed()

    // t answers; the session's holder — the other client — reads the reply (its read is the delivery).
    const reply = message("the answer", { replyTo: question.id })
    const replied = yield* send(target.client, "a", reply)
    assert.strictEqual(replied.type, "delivered", "the reply was not accepted: the test sets up nothing")
    yield* messageFor(other.client, reply.id)

    // The asker's client registers again and sends its ask again (same id): a replay.
    const back = yield* broker.session({ sessionId: "a", label: returningAs, frame: { features, instanceId: returningAs } })
    const resent = yield* resend(back.client, question)
    return { resent, ...aboutAsk(back.client, question.id), replyId: reply.id }
  })

describe("an ask whose reply another client of the asker's session read for good (sim seed 16843)", () => {
  it.live("a new instance taking the session back and resending the ask is told the reply went elsewhere, with no copy", () =>
    Effect.gen(function*() {
      const { elsewhere, replies, replyId, resent } = yield* askAnsweredElsewhere("a-3", ASKER)
      assert.strictEqual(resent.type, "delivered")
      assert.deepStrictEqual(elsewhere, [replyId], "the returning asker was not told where the reply went")
      assert.deepStrictEqual(replies, [], "the returning asker was given a copy of the reply")
    }))

  it.live("the asking instance itself (same instanceId) taking the session back and resending is told the reply went elsewhere, with no copy", () =>
    Effect.gen(function*() {
      const { elsewhere, replies, replyId, resent } = yield* askAnsweredElsewhere("a-1", ASKER)
      assert.strictEqual(resent.type, "delivered")
      assert.deepStrictEqual(elsewhere, [replyId], "the returning asker was not told where the reply went")
      assert.deepStrictEqual(replies, [], "the returning asker was given a copy of the reply")
    }))

  it.live("without reply-elsewhere-v1 the resend gets plain delivered and nothing more, as before (its client waits out its timeout)", () =>
    Effect.gen(function*() {
      const { elsewhere, replies, resent } = yield* askAnsweredElsewhere("a-1", BASE_ASKER)
      assert.strictEqual(resent.type, "delivered")
      assert.deepStrictEqual(elsewhere, [])
      assert.deepStrictEqual(replies, [])
    }))
})

describe("an ask whose reply can still reach the resending connection is not said to be answered elsewhere", () => {
  it.live("the asker itself read the reply, then resends: plain delivered", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const asker = yield* broker.session({ sessionId: "a", frame: { features: ASKER, instanceId: "a-1" } })
      const target = yield* broker.session({ sessionId: "t" })
      const question = message("well?", { expectsReply: true })
      yield* send(asker.client, "t", question, { askTimeoutMs: TIMEOUT_MS })
      yield* messageFor(target.client, question.id)
      const reply = message("the answer", { replyTo: question.id })
      yield* send(target.client, "a", reply)
      yield* messageFor(asker.client, reply.id)
      const resent = yield* resend(asker.client, question)
      assert.strictEqual(resent.type, "delivered")
      assert.deepStrictEqual(aboutAsk(asker.client, question.id), { replies: [reply.id], elsewhere: [] })
    }))

  // Over a socket the old connection's close is not the test's to time: the reply may come back to the new
  // instance before or after its resend, so this does not reach the custody-hold check (a resend while the hold
  // waits: ask-reply-elsewhere-hold.test.ts, driven by hand).
  it.live("the reply is in a received-v1 holder's custody, unconfirmed, when a new instance takes the session over: it gets the reply, and its resend is not told elsewhere", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const asker = yield* broker.session({ sessionId: "a", label: "a-1", frame: { features: ASKER, instanceId: "a-1" } })
      const target = yield* broker.session({ sessionId: "t" })
      const question = message("well?", { expectsReply: true })
      yield* send(asker.client, "t", question, { askTimeoutMs: TIMEOUT_MS })
      yield* messageFor(target.client, question.id)
      // The other client confirms nothing, and keeps its end open after the broker's: the hold lasts until the test closes it.
      const other = yield* broker.session({
        sessionId: "a",
        label: "other",
        allowHalfOpen: true,
        frame: { features: [RECEIVED_V1], instanceId: "other" }
      })
      yield* asker.client.waitClosed()
      const reply = message("the answer", { replyTo: question.id })
      yield* send(target.client, "a", reply)
      yield* messageFor(other.client, reply.id)
      const back = yield* broker.session({ sessionId: "a", label: "a-3", frame: { features: ASKER, instanceId: "a-3" } })
      yield* other.client.waitClosed()
      const resent = yield* resend(back.client, question)
      assert.strictEqual(resent.type, "delivered")
      assert.deepStrictEqual(aboutAsk(back.client, question.id).elsewhere, [], "told elsewhere while the reply could still come back")
      yield* other.client.destroy
      yield* messageFor(back.client, reply.id)
      yield* back.client.roundTrip
      assert.deepStrictEqual(aboutAsk(back.client, question.id), { replies: [reply.id], elsewhere: [] })
    }))

  it.live("the reply was queued while the session was away: the returning instance gets it, not the notice", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const asker = yield* broker.session({ sessionId: "a", frame: { features: ASKER, instanceId: "a-1" } })
      const target = yield* broker.session({ sessionId: "t" })
      const question = message("well?", { expectsReply: true })
      yield* send(asker.client, "t", question, { askTimeoutMs: TIMEOUT_MS })
      yield* messageFor(target.client, question.id)
      yield* asker.client.destroy
      // The broker saw the asker leave once t hears it (P49 mail then queues for it).
      yield* target.client.next("session_left", (frame) => frame.sessionId === "a")
      const reply = message("the answer", { replyTo: question.id })
      const replied = yield* send(target.client, "a", reply)
      assert.strictEqual(replied.type, "delivered")
      const back = yield* broker.session({ sessionId: "a", label: "a-3", frame: { features: ASKER, instanceId: "a-3" } })
      yield* messageFor(back.client, reply.id)
      const resent = yield* resend(back.client, question)
      assert.strictEqual(resent.type, "delivered")
      assert.deepStrictEqual(aboutAsk(back.client, question.id), { replies: [reply.id], elsewhere: [] })
    }))
})
