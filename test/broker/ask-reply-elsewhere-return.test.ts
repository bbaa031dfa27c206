/**
 * `reply-elsewhere-v1` for an ask acknowledged before the takeover: instance
 * a-1 of session `a` asks `t` and reads `delivered`; its connection drops
 * (the `taken_over` never reaches it); another client (a base client: the
 * broker's write is its delivery) holds `a` and reads `t`'s reply for good.
 * Then the asker's client registers `a` again — as a-1 taking it back, or as
 * a new instance. Having its acknowledgement, it does not send the ask again,
 * so before this change nothing came and its client waited out its whole
 * timeout. Now the registration itself is followed by
 * `ask_answered_elsewhere` for that ask (AnsweredAsks.elsewhereOnReturn),
 * once per (ask, client instance), and never when the reply can still come
 * or the ask was withdrawn. Over a real Unix socket; every "nothing came" is
 * read after a round trip on the returning connection.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ASK_TIMEOUT_V1, REJOIN_V1, REPLY_ELSEWHERE_V1, TAKEOVER_V1 } from "../../src/protocol/features.ts"
import type { BrokerFrame } from "../../src/protocol/index.ts"
import { message, messageFor, send, type TestBroker, withBroker } from "../support/broker.ts"
import type { WireClient } from "../support/wire.ts"

const BASE_ASKER = [ASK_TIMEOUT_V1, TAKEOVER_V1, REJOIN_V1]
const ASKER = [...BASE_ASKER, REPLY_ELSEWHERE_V1]
const TIMEOUT_MS = 60_000

/** What `client` received about the ask `questionId`, after a round trip: replies to it (their ids) and notices (`replyId`s). */
const aboutAsk = (client: WireClient, questionId: string) =>
  Effect.map(client.roundTrip, () => {
    const frames: ReadonlyArray<BrokerFrame> = client.received()
    return {
      replies: frames.flatMap((frame) => frame.type === "message" && frame.message.replyTo === questionId ? [frame.message.id] : []),
      elsewhere: frames.flatMap((frame) => frame.type === "ask_answered_elsewhere" && frame.messageId === questionId ? [frame.replyId] : [])
    }
  })

/**
 * a-1 asks `t` and reads `delivered`; its connection drops; a base client
 * holds `a` and reads `t`'s reply (or, with `withdraw`, then withdraws the
 * ask with `cancel_ask`, as a client does as its wait ends). Returns the
 * broker, the ask and the reply, for the asker to come back.
 */
const answeredWhileAway = (features: ReadonlyArray<string>, withdraw = false) =>
  Effect.gen(function*() {
    const broker = yield* withBroker()
    const asker = yield* broker.session({ sessionId: "a", label: "a-1", frame: { features, instanceId: "a-1" } })
    const target = yield* broker.session({ sessionId: "t" })
    const question = message("well?", { expectsReply: true })
    const asked = yield* send(asker.client, "t", question, { askTimeoutMs: TIMEOUT_MS })
    assert.strictEqual(asked.type, "delivered", "the ask was not acknowledged: the test sets up nothing")
    yield* messageFor(target.client, question.id)
    yield* asker.client.destroy

    // Another client holds the session (taking it over, or registering it anew once the drop is seen) and
    // reads t's reply: a base client, so the write is the delivery.
    const other = yield* broker.session({ sessionId: "a", label: "other" })
    const reply = message("the answer", { replyTo: question.id })
    const replied = yield* send(target.client, "a", reply)
    assert.strictEqual(replied.type, "delivered", "the reply was not accepted: the test sets up nothing")
    yield* messageFor(other.client, reply.id)
    if (withdraw) {
      yield* other.client.send({ type: "cancel_ask", messageId: question.id })
      yield* other.client.roundTrip
    }
    return { broker, question, replyId: reply.id }
  })

/** The asker's client registers `a` again as `instanceId`, sending nothing else. */
const comeBack = (broker: TestBroker, instanceId: string, features: ReadonlyArray<string>) =>
  broker.session({ sessionId: "a", label: `${instanceId} back`, frame: { features, instanceId } })

describe("an ask acknowledged before another client of its session read its reply for good (reply-elsewhere-v1)", () => {
  it.live("the asking instance taking its session back is told, without sending the ask again, and given no copy", () =>
    Effect.gen(function*() {
      const { broker, question, replyId } = yield* answeredWhileAway(ASKER)
      const back = yield* comeBack(broker, "a-1", ASKER)
      assert.deepStrictEqual(yield* aboutAsk(back.client, question.id), { replies: [], elsewhere: [replyId] })
    }))

  it.live("a new instance registering the session is told too (its client, not waiting on the ask, ignores it)", () =>
    Effect.gen(function*() {
      const { broker, question, replyId } = yield* answeredWhileAway(ASKER)
      const back = yield* comeBack(broker, "a-3", ASKER)
      assert.deepStrictEqual(yield* aboutAsk(back.client, question.id), { replies: [], elsewhere: [replyId] })
    }))

  it.live("an instance told once is not told again when it registers again; another instance then is", () =>
    Effect.gen(function*() {
      const { broker, question, replyId } = yield* answeredWhileAway(ASKER)
      const first = yield* comeBack(broker, "a-1", ASKER)
      assert.deepStrictEqual((yield* aboutAsk(first.client, question.id)).elsewhere, [replyId])
      yield* first.client.destroy
      const again = yield* comeBack(broker, "a-1", ASKER)
      assert.deepStrictEqual(yield* aboutAsk(again.client, question.id), { replies: [], elsewhere: [] }, "told the same instance twice")
      const another = yield* comeBack(broker, "a-4", ASKER)
      assert.deepStrictEqual((yield* aboutAsk(another.client, question.id)).elsewhere, [replyId])
    }))

  it.live("without reply-elsewhere-v1 the returning asker is told nothing, as before (its client waits out its timeout)", () =>
    Effect.gen(function*() {
      const { broker, question } = yield* answeredWhileAway(BASE_ASKER)
      const back = yield* comeBack(broker, "a-1", BASE_ASKER)
      assert.deepStrictEqual(yield* aboutAsk(back.client, question.id), { replies: [], elsewhere: [] })
    }))

  it.live("an ask the session withdrew after its answer is not told of", () =>
    Effect.gen(function*() {
      const { broker, question } = yield* answeredWhileAway(ASKER, true)
      const back = yield* comeBack(broker, "a-1", ASKER)
      assert.deepStrictEqual(yield* aboutAsk(back.client, question.id), { replies: [], elsewhere: [] })
    }))
})
