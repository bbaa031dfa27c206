/**
 * Review reval probes of the merge turnexp (fcf4cdf5): each FAILS on main today.
 *
 * - AL1: the asker withdraws the current turn's ask (P73 cancel): `markReplied` clears the
 *   turn, and a `reply` without `to` in that turn answers ANOTHER asker's single pending ask.
 * - AL2: the auto-threaded send closes the ask on ANY E_REPLY_TARGET refusal, also
 *   `replyAskerLeft` / `replyWrongAsk`, which mean the broker still holds the ask.
 * - AL3: `closed` is keyed by message id only: an ask with the same id from another
 *   sender that expires closes the current turn's open ask.
 * - AL4: an ask whose asker's wait is unknown (no `askTimeoutMs`) is closed on this
 *   session's own timeout, and the current turn's reply is refused locally.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Queue } from "effect"
import { TestClock } from "effect/testing"
import { DeliveryCode, Reason } from "../src/protocol/delivery.ts"
import { deliveryError } from "../src/client/errors.ts"
import { B, C, inboundMessage, settle, withPeers } from "./session/support.ts"

describe("review reval", () => {
  it.effect("AL1: the current turn's ask withdrawn by its asker: a reply in that turn never answers another asker", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers({ askTimeoutMs: 60_000 })
      client.onSend = (request) => Effect.succeed({ messageId: request.message.id, delivery: "socket_delivered" })
      yield* client.push(inboundMessage(B, "q-b", "B asks", { expectsReply: true }))
      yield* Queue.take(host.inbox)
      yield* session.beginTurn()
      yield* client.push(inboundMessage(C, "q-c", "C asks", { expectsReply: true }))
      yield* settle
      // B withdraws its ask while the turn it triggered runs (Ctrl-C on `intercom ask`, P73).
      yield* client.control({ _tag: "Control", from: B, control: { messageId: "q-b", action: "cancel", timestamp: 0 } })
      yield* settle
      // The model answers its turn's question: the answer meant for B must not become C's answer.
      yield* Effect.exit(session.reply({ message: "for B" }))
      assert.deepStrictEqual(
        client.sends.filter((send) => send.to === C.id).map((send) => [send.message.replyTo, send.message.content.text]),
        [],
        "B's answer went to C as the answer to C's ask"
      )
    }))

  it.effect("AL2: a plain send refused as replyAskerLeft does not close the ask: the broker still holds it", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers({ askTimeoutMs: 60_000 })
      yield* client.push(inboundMessage(B, "q-b", "ready?", { expectsReply: true }))
      yield* settle
      // The threaded copy is refused because the reply went to another session than the asker (the broker
      // keeps B's ask open: "the answer waits for it in the mailbox"); the plain copy is delivered.
      client.onSend = (request) =>
        request.message.replyTo === undefined
          ? Effect.succeed({ messageId: request.message.id, delivery: "socket_delivered" })
          : Effect.fail(deliveryError({
            messageId: request.message.id,
            code: DeliveryCode.ReplyTarget,
            reason: Reason.replyAskerLeft,
            retryable: false
          }))
      yield* Effect.orDie(session.send({ to: "B", message: "news" }))
      const pending = yield* Effect.orDie(session.pending)
      assert.deepStrictEqual(pending.asks.map((ask) => ask.message.id), ["q-b"], "B's ask is still open at the broker")
    }))

  it.effect("AL3: another sender's ask with the same id expiring does not close the current turn's open ask", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers({ askTimeoutMs: 60_000 })
      client.onSend = (request) => Effect.succeed({ messageId: request.message.id, delivery: "socket_delivered" })
      yield* client.push({ ...inboundMessage(B, "q-1", "B asks", { expectsReply: true }), askTimeoutMs: 60_000 })
      yield* Queue.take(host.inbox)
      yield* session.beginTurn()
      // C (another session) uses the same message id, with a 1 s wait.
      yield* client.push({ ...inboundMessage(C, "q-1", "C asks", { expectsReply: true }), askTimeoutMs: 1_000 })
      yield* settle
      yield* TestClock.adjust(2_000)
      // B's ask is open for 58 s more; the turn's reply answers it.
      const sent = yield* Effect.exit(session.reply({ message: "for B" }))
      assert.isTrue(Exit.isSuccess(sent), String(sent))
      assert.deepStrictEqual(client.sends.map((send) => [send.to, send.message.replyTo]), [[B.id, "q-1"]])
    }))

  it.effect("AL4: an ask without the asker's wait: the current turn's reply past this session's own timeout goes to the broker", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers({ askTimeoutMs: 10_000 })
      client.onSend = (request) => Effect.succeed({ messageId: request.message.id, delivery: "socket_delivered" })
      // No askTimeoutMs on the frame (a broker without ask-timeout-v1): the asker's wait is unknown here.
      yield* client.push(inboundMessage(B, "q-1", "long one", { expectsReply: true }))
      yield* Queue.take(host.inbox)
      yield* session.beginTurn()
      yield* TestClock.adjust(30_000)
      const sent = yield* Effect.exit(session.reply({ message: "answer" }))
      assert.isTrue(Exit.isSuccess(sent), String(sent))
    }))
})
