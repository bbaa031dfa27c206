/**
 * `reply-elsewhere-v1` and the mailbox flush (review revp P1): a reply
 * written to another client instance of the asker's session, given back to
 * the mailbox unconfirmed, and flushed to the returning asker moves its
 * receipt route to the asker's instance — also when the replier left before
 * the flush (Receipts.addRoute from Router's `flushed`). So the asker's
 * resend of the ask, handed the reply, is not told `ask_answered_elsewhere`.
 * Real Unix socket.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ASK_TIMEOUT_V1, RECEIVED_V1, REJOIN_V1, REPLY_ELSEWHERE_V1, TAKEOVER_V1 } from "../../src/protocol/features.ts"
import type { BrokerFrame } from "../../src/protocol/index.ts"
import { ackFor, message, messageFor, send, withBroker } from "../support/broker.ts"

const ASKER = [ASK_TIMEOUT_V1, TAKEOVER_V1, REJOIN_V1, REPLY_ELSEWHERE_V1]
const TIMEOUT_MS = 60_000

describe("a reply given back to the mailbox and flushed to the returning asker", () => {
  it.live("with the replier gone before the flush, the returning asker handed the reply is not told it was answered elsewhere", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const watcher = yield* broker.session({ sessionId: "w" })
      const asker = yield* broker.session({ sessionId: "a", label: "a-1", frame: { features: ASKER, instanceId: "a-1" } })
      const target = yield* broker.session({ sessionId: "t" })
      const question = message("well?", { expectsReply: true })
      const asked = yield* send(asker.client, "t", question, { askTimeoutMs: TIMEOUT_MS })
      assert.strictEqual(asked.type, "delivered")
      yield* messageFor(target.client, question.id)
      // The asker's connection drops (no takeover).
      yield* asker.client.destroy
      yield* watcher.client.next("session_left", (frame) => frame.sessionId === "a")
      // Another client instance (received-v1) registers the session; it is written the reply and never confirms it.
      const other = yield* broker.session({ sessionId: "a", label: "other", frame: { features: [RECEIVED_V1], instanceId: "other" } })
      const reply = message("the answer", { replyTo: question.id })
      const replied = yield* send(target.client, "a", reply)
      assert.strictEqual(replied.type, "delivered")
      yield* messageFor(other.client, reply.id)
      // It drops unconfirmed: the reply goes back to the mailbox (it never had it for good).
      yield* other.client.destroy
      yield* watcher.client.next("session_left", (frame) => frame.sessionId === "a")
      // The replier leaves too.
      yield* target.client.destroy
      yield* watcher.client.next("session_left", (frame) => frame.sessionId === "t")
      // The asking instance returns: the mailbox hands it the reply. It resends its ask (no ack seen).
      const back = yield* broker.session({ sessionId: "a", label: "a-1 back", frame: { features: ASKER, instanceId: "a-1" } })
      yield* messageFor(back.client, reply.id)
      yield* back.client.send({ type: "send", to: "t", message: question, askTimeoutMs: TIMEOUT_MS })
      yield* ackFor(back.client, question.id)
      yield* back.client.roundTrip
      const frames: ReadonlyArray<BrokerFrame> = back.client.received()
      const elsewhere = frames.flatMap((frame) => frame.type === "ask_answered_elsewhere" ? [frame.replyId] : [])
      const replies = frames.flatMap((frame) => frame.type === "message" && frame.message.replyTo === question.id ? [frame.message.id] : [])
      assert.deepStrictEqual(replies, [reply.id], "the returning asker did not get the reply: the test sets up nothing")
      assert.deepStrictEqual(elsewhere, [], "told the reply went elsewhere though it was handed the reply itself")
    }))

  it.live("with the replier still registered at the flush, the returning asker handed the reply is not told it was answered elsewhere", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const watcher = yield* broker.session({ sessionId: "w" })
      const asker = yield* broker.session({ sessionId: "a", label: "a-1", frame: { features: ASKER, instanceId: "a-1" } })
      const target = yield* broker.session({ sessionId: "t" })
      const question = message("well?", { expectsReply: true })
      yield* send(asker.client, "t", question, { askTimeoutMs: TIMEOUT_MS })
      yield* messageFor(target.client, question.id)
      yield* asker.client.destroy
      yield* watcher.client.next("session_left", (frame) => frame.sessionId === "a")
      const other = yield* broker.session({ sessionId: "a", label: "other", frame: { features: [RECEIVED_V1], instanceId: "other" } })
      const reply = message("the answer", { replyTo: question.id })
      yield* send(target.client, "a", reply)
      yield* messageFor(other.client, reply.id)
      yield* other.client.destroy
      yield* watcher.client.next("session_left", (frame) => frame.sessionId === "a")
      const back = yield* broker.session({ sessionId: "a", label: "a-1 back", frame: { features: ASKER, instanceId: "a-1" } })
      yield* messageFor(back.client, reply.id)
      yield* back.client.send({ type: "send", to: "t", message: question, askTimeoutMs: TIMEOUT_MS })
      yield* ackFor(back.client, question.id)
      yield* back.client.roundTrip
      const elsewhere = back.client.received().flatMap((frame) => frame.type === "ask_answered_elsewhere" ? [frame.replyId] : [])
      assert.deepStrictEqual(elsewhere, [])
    }))
})
