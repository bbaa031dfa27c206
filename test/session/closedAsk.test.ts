/**
 * A reply to an ask its asker no longer waits for (C-RPL-6, P62), and what
 * `pending` shows of the asks it still lists.
 *
 * - The current turn's ask, expired here: `reply` sends nothing and says the
 *   ask expired, that its asker no longer waits, and what to do instead.
 * - An ask the broker refuses a reply to (it closed there first): the error
 *   says the same; the ask is closed, not answered — a second `reply` in the
 *   same turn is refused here too, and never goes to another pending ask.
 * - `pending` shows how long ago each ask was asked and how long is left,
 *   both on the clock of its expiry (`askTiming`): a mailbox wait the broker
 *   stamped counts in the age and comes off the time left.
 *
 * Over the fake client on the TestClock; the fake broker refuses as the real
 * one does (`Reply target does not match a pending ask`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Queue } from "effect"
import { TestClock } from "effect/testing"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { AskNoLongerOpen } from "../../src/session/errors.ts"
import { B, C, inboundMessage, refuseWith, settle, withPeers } from "./support.ts"

const TIMEOUT = 10_000

/** What `reply` says for an ask from B that closed unanswered (`expired`: how it did). */
const closedText = (askId: string, expired: string | undefined) =>
  (expired === undefined
    ? `Reply to "B" was not delivered: the broker no longer holds the ask ${askId} (it expired, or B withdrew it), ` +
      "so B no longer waits for an answer"
    : `The ask ${askId} from B expired ${expired} ago: B no longer waits for an answer, so this reply was not sent`) +
  ". If B still needs it, send it to B as a plain message (a send without replyTo)."

describe("a reply to an ask that closed unanswered", () => {
  it.effect("the current turn's ask, expired here: reply writes nothing and says the asker no longer waits", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers({ askTimeoutMs: TIMEOUT })
      // The broker closed the edge at its deadline: it would refuse a reply.
      client.onSend = refuseWith(DeliveryCode.ReplyTarget, Reason.replyNoAsk)
      // The frame carries B's wait (`ask-timeout-v1`): only then does this session close the ask on its own.
      yield* client.push({ ...inboundMessage(B, "q-1", "ready?", { expectsReply: true }), askTimeoutMs: TIMEOUT })
      yield* Queue.take(host.inbox)
      yield* session.beginTurn()
      // Pending through the millisecond receive + TIMEOUT; 5 s later it has been closed 5 s.
      yield* TestClock.adjust(TIMEOUT + 1 + 5_000)
      const refused = yield* Effect.flip(session.reply({ message: "yes" }))
      assert.instanceOf(refused, AskNoLongerOpen)
      assert.strictEqual(refused.message, closedText("q-1", "5s"))
      const viaTool = yield* session.intercom({ action: "reply", replyTo: "q-1", message: "yes" })
      assert.deepStrictEqual([viaTool.text, viaTool.isError, viaTool.details["error"]], [closedText("q-1", "5s"), true, "AskNoLongerOpen"])
      assert.deepStrictEqual(client.sends, [], "nothing was written for a reply the broker would refuse")
    }))

  it.effect("refused by the broker: the error says the asker no longer waits; a second reply is refused here and never answers another ask", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers({ askTimeoutMs: TIMEOUT })
      yield* client.push(inboundMessage(B, "q-b", "ready?", { expectsReply: true }))
      yield* Queue.take(host.inbox)
      yield* session.beginTurn()
      yield* client.push(inboundMessage(C, "q-c", "and you?", { expectsReply: true }))
      yield* settle
      // B's ask closed at the broker first (read late behind slow writes, or withdrawn): still pending here.
      client.onSend = refuseWith(DeliveryCode.ReplyTarget, Reason.replyNoAsk)
      const refused = yield* session.intercom({ action: "reply", message: "for B" })
      assert.deepStrictEqual(
        [refused.text, refused.isError, refused.details["error"], refused.details["code"]],
        [closedText("q-b", undefined), true, "AskNoLongerOpen", DeliveryCode.ReplyTarget]
      )
      const pending = yield* Effect.orDie(session.pending)
      assert.deepStrictEqual(pending.asks.map((ask) => ask.message.id), ["q-c"], "B's ask is no longer pending")
      // Still B's turn: the answer meant for B is not taken as the answer to C's ask, nor sent again.
      client.onSend = (request) => Effect.succeed({ messageId: request.message.id, delivery: "socket_delivered" })
      const again = yield* session.intercom({ action: "reply", message: "for B" })
      assert.deepStrictEqual([again.text, again.isError], [closedText("q-b", undefined), true])
      assert.deepStrictEqual(client.sends.map((send) => [send.to, send.message.replyTo]), [[B.id, "q-b"]])
      assert.deepStrictEqual((yield* Effect.orDie(session.pending)).asks.map((ask) => ask.message.id), ["q-c"])
    }))
})

describe("which asks close here", () => {
  it.effect("another asker's ask with the same id expiring leaves the current turn's ask open: its reply is sent", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers({ askTimeoutMs: 60_000 })
      yield* client.push({ ...inboundMessage(B, "q-1", "B asks", { expectsReply: true }), askTimeoutMs: 60_000 })
      yield* Queue.take(host.inbox)
      yield* session.beginTurn()
      // C uses the same message id, with a 1 s wait: it closes here 2 s on; B's ask is open 58 s more.
      yield* client.push({ ...inboundMessage(C, "q-1", "C asks", { expectsReply: true }), askTimeoutMs: 1_000 })
      yield* settle
      yield* TestClock.adjust(2_000)
      yield* Effect.orDie(session.reply({ message: "for B" }))
      assert.deepStrictEqual(client.sends.map((send) => [send.to, send.message.replyTo]), [[B.id, "q-1"]])
    }))

  it.effect("an ask without its asker's wait (no askTimeoutMs): past this session's own timeout it leaves pending, and the turn's reply goes to the broker", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers({ askTimeoutMs: TIMEOUT })
      // A broker without ask-timeout-v1: the asker may wait longer than this session's timeout.
      yield* client.push(inboundMessage(B, "q-1", "long one", { expectsReply: true }))
      yield* Queue.take(host.inbox)
      yield* session.beginTurn()
      yield* TestClock.adjust(3 * TIMEOUT)
      assert.deepStrictEqual((yield* Effect.orDie(session.pending)).asks, [])
      yield* Effect.orDie(session.reply({ message: "answer" }))
      assert.deepStrictEqual(client.sends.map((send) => [send.to, send.message.replyTo]), [[B.id, "q-1"]])
    }))
})

describe("pending shows how long ago an ask was asked and how long is left", () => {
  it.effect("6 s in the broker's mailbox, read now: asked 6 s ago, 4 s left; one second on, 7 s and 3 s", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      yield* TestClock.adjust(6_000)
      yield* client.push({
        ...inboundMessage(B, "q-1", "which path?", { expectsReply: true, brokerReceivedAt: 0, brokerDeliveredAt: 6_000 }),
        askTimeoutMs: TIMEOUT
      })
      yield* settle
      const first = yield* Effect.orDie(session.pending)
      assert.deepStrictEqual(first.asks.map((ask) => [ask.receivedAt, ask.askedAt, ask.expiresAt]), [[6_000, 0, TIMEOUT]])
      assert.include(first.text, "- B · q-1 · asked 6s ago · expires in 4s · which path?")
      yield* TestClock.adjust(1_000)
      const tool = yield* session.intercom({ action: "pending" })
      assert.include(tool.text, "- B · q-1 · asked 7s ago · expires in 3s · which path?")
      assert.deepInclude(tool.details["asks"], { from: B.id, messageId: "q-1", receivedAt: 6_000, askedAt: 0, expiresAt: TIMEOUT })
    }))

  it.effect("no stamps: asked at the receive, the time left runs to the receive plus the timeout", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers({ askTimeoutMs: 600_000 })
      yield* client.push(inboundMessage(B, "q-1", "ok?", { expectsReply: true }))
      yield* settle
      yield* TestClock.adjust(67_000)
      assert.include((yield* Effect.orDie(session.pending)).text, "- B · q-1 · asked 1m 7s ago · expires in 8m 53s · ok?")
    }))
})
