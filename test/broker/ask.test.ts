/** P60–P64: asks are sends with expectsReply; the broker keeps ask edges and validates replies. */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { assertDelivered, assertFailed } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { ackFor, infoOf, message, messageFor, register, send, withBroker } from "../support/broker.ts"
import { encodeFrames } from "../../src/protocol/index.ts"
import { nextStepAt, withMemoryBroker } from "../support/memory.ts"

const noAsk = "Reply target does not match a pending ask"
const wrongAsk = "Reply target does not match the pending ask"

const trio = () =>
  Effect.gen(function*() {
    const broker = yield* withBroker()
    const asker = yield* broker.session({ sessionId: "asker", name: "Asker" })
    const target = yield* broker.session({ sessionId: "target", name: "Target" })
    const third = yield* broker.session({ sessionId: "third" })
    return { broker, asker, target, third }
  })

describe("P61/P62 ask edges and replies", () => {
  it.live("a reply with replyTo on a live ask edge is delivered; a second reply is rejected", () =>
    Effect.gen(function*() {
      const { asker, target } = yield* trio()
      const question = message("what is 2+2?", { expectsReply: true })
      assertDelivered(yield* send(asker.client, "target", question))
      const got = yield* messageFor(target.client, question.id)
      assert.strictEqual(got.message.expectsReply, true)

      const answer = message("4", { replyTo: question.id })
      assertDelivered(yield* send(target.client, "asker", answer))
      const reply = yield* messageFor(asker.client, answer.id)
      assert.strictEqual(reply.message.replyTo, question.id)
      assert.strictEqual(reply.from.id, "target")

      assertFailed(yield* send(target.client, "asker", message("5", { replyTo: question.id })), "E_REPLY_TARGET", noAsk)
      yield* settled([target.client], [asker.client])
      yield* asker.client.expectNothing("message")
    }))

  it.live("a reply without an edge → E_REPLY_TARGET \"…a pending ask\", not delivered", () =>
    Effect.gen(function*() {
      const { asker, target } = yield* trio()
      // A plain (non-ask) message creates no edge.
      const plain = message("fyi")
      assertDelivered(yield* send(asker.client, "target", plain))
      assertFailed(yield* send(target.client, "asker", message("re", { replyTo: plain.id })), "E_REPLY_TARGET", noAsk)
      assertFailed(yield* send(target.client, "asker", message("re", { replyTo: "made-up" })), "E_REPLY_TARGET", noAsk)
      yield* settled([target.client], [asker.client])
      yield* asker.client.expectNothing("message")
    }))

  it.live("a reply from, or to, the wrong session → E_REPLY_TARGET \"…the pending ask\"; the edge stays usable", () =>
    Effect.gen(function*() {
      const { asker, target, third } = yield* trio()
      const question = message("q", { expectsReply: true })
      assertDelivered(yield* send(asker.client, "target", question))
      // The third session is not the one asked.
      assertFailed(yield* send(third.client, "asker", message("me!", { replyTo: question.id })), "E_REPLY_TARGET", wrongAsk)
      // The asked session replying to someone other than the asker.
      assertFailed(yield* send(target.client, "third", message("you?", { replyTo: question.id })), "E_REPLY_TARGET", wrongAsk)
      yield* settled([third.client, target.client], [asker.client, third.client])
      yield* asker.client.expectNothing("message")
      yield* third.client.expectNothing("message")
      // A failed reply leaves the edge in place.
      const answer = message("a", { replyTo: question.id })
      assertDelivered(yield* send(target.client, "asker", answer))
      yield* messageFor(asker.client, answer.id)
    }))

  it.effect("an edge accepts a reply until askTimeout has passed since the ask, and not from then on", () =>
    Effect.gen(function*() {
      const askTimeout = 60_000
      const broker = yield* withMemoryBroker({ askTimeout })
      const asker = yield* broker.session({ sessionId: "asker", name: "Asker" })
      const target = yield* broker.session({ sessionId: "target", name: "Target" })
      const askedAt = (question: ReturnType<typeof message>) =>
        Effect.gen(function*() {
          assertDelivered(yield* send(asker.client, "target", question))
          return (yield* messageFor(target.client, question.id)).message.brokerReceivedAt ?? Number.NaN
        })

      const first = message("quick?", { expectsReply: true })
      const firstAt = yield* askedAt(first)
      yield* nextStepAt(firstAt + askTimeout - 1)
      const inTime = message("just in time", { replyTo: first.id })
      assertDelivered(yield* send(target.client, "asker", inTime))
      assert.strictEqual((yield* messageFor(asker.client, inTime.id)).message.brokerReceivedAt, firstAt + askTimeout - 1)

      const second = message("again?", { expectsReply: true })
      const secondAt = yield* askedAt(second)
      yield* nextStepAt(secondAt + askTimeout)
      assertFailed(yield* send(target.client, "asker", message("late", { replyTo: second.id })), "E_REPLY_TARGET", noAsk)
    }))

  it.live("edges survive the asker's disconnection: the reply is queued for it", () =>
    Effect.gen(function*() {
      const { broker, asker, target } = yield* trio()
      const question = message("q", { expectsReply: true })
      assertDelivered(yield* send(asker.client, "target", question))
      yield* asker.client.destroy
      yield* target.client.next("session_left", (f) => f.sessionId === "asker")
      const answer = message("a", { replyTo: question.id })
      assertDelivered(yield* send(target.client, "asker", answer), "queued")
      // Queueing the reply answered the ask, as delivering it would: a second reply is refused.
      assertFailed(yield* send(target.client, "asker", message("a2", { replyTo: question.id })), "E_REPLY_TARGET", noAsk)
      const back = yield* broker.session({ sessionId: "asker", name: "Asker" })
      assert.strictEqual((yield* messageFor(back.client, answer.id)).message.replyTo, question.id)
      // Only the one answer came, and the answered ask no longer blocks an ask the other way (P63).
      assertDelivered(yield* send(target.client, "asker", message("my turn", { expectsReply: true })))
      yield* settled([target.client], [back.client])
      assert.deepStrictEqual(
        back.client.received().flatMap((f) => f.type === "message" && f.message.replyTo !== undefined ? [f.message.id] : []),
        [answer.id]
      )
    }))
})

describe("P62 replies bypass the exact-send path", () => {
  it.live("a reply carrying a stale targetEpoch still reaches the asker's current endpoint", () =>
    Effect.gen(function*() {
      const { broker, asker, target } = yield* trio()
      const staleEpoch = (yield* infoOf(target.client, "asker")).endpointEpoch ?? "missing"
      const question = message("q", { expectsReply: true })
      assertDelivered(yield* send(asker.client, "target", question))
      const replacement = yield* broker.connect("replacement")
      yield* register(replacement, { sessionId: "asker", name: "Asker" })
      yield* asker.client.waitClosed()
      const answer = message("a", { replyTo: question.id })
      assertDelivered(yield* send(target.client, "asker", answer, { targetId: "asker", targetEpoch: staleEpoch }))
      yield* messageFor(replacement, answer.id)
    }))
})

describe("P63 mutual ask", () => {
  it.live("an ask towards a session that is waiting on you is refused; a reply that itself asks is allowed", () =>
    Effect.gen(function*() {
      const { asker, target } = yield* trio()
      const question = message("q1", { expectsReply: true })
      assertDelivered(yield* send(asker.client, "target", question))
      assertFailed(
        yield* send(target.client, "asker", message("counter-question", { expectsReply: true })),
        "E_MUTUAL_ASK",
        "Mutual ask refused: target session is already waiting for a reply from this session."
      )
      yield* settled([target.client], [asker.client])
      yield* asker.client.expectNothing("message")
      // A plain message back is fine.
      assertDelivered(yield* send(target.client, "asker", message("thinking…")))
      // The reply may start a new reverse ask.
      const replyAsk = message("answer, and a question", { replyTo: question.id, expectsReply: true })
      assertDelivered(yield* send(target.client, "asker", replyAsk))
      // Now the original asker is the one being asked.
      const final = message("final", { replyTo: replyAsk.id })
      assertDelivered(yield* send(asker.client, "target", final))
      yield* messageFor(target.client, final.id)
    }))
})

describe("P64 cancel_ask", () => {
  it.live("the asker's cancel_ask drops the edge, so a later reply fails; no reply to the cancel", () =>
    Effect.gen(function*() {
      const { asker, target } = yield* trio()
      const question = message("q", { expectsReply: true })
      assertDelivered(yield* send(asker.client, "target", question))
      yield* asker.client.send({ type: "cancel_ask", messageId: question.id })
      yield* asker.client.roundTrip
      yield* asker.client.expectNothing(["delivered", "delivery_failed"])
      assertFailed(yield* send(target.client, "asker", message("too late", { replyTo: question.id })), "E_REPLY_TARGET", noAsk)
      // And the asked session may now ask back.
      assertDelivered(yield* send(target.client, "asker", message("my turn", { expectsReply: true })))
    }))

  it.live("cancel_ask from someone other than the asker changes nothing", () =>
    Effect.gen(function*() {
      const { asker, target, third } = yield* trio()
      const question = message("q", { expectsReply: true })
      assertDelivered(yield* send(asker.client, "target", question))
      yield* target.client.send({ type: "cancel_ask", messageId: question.id })
      yield* third.client.send({ type: "cancel_ask", messageId: question.id })
      yield* settled([target.client, third.client]) // the broker has handled both cancels
      const answer = message("still valid", { replyTo: question.id })
      assertDelivered(yield* send(target.client, "asker", answer))
      yield* messageFor(asker.client, answer.id)
    }))
})

describe("open asks are bounded per session", () => {
  it.effect("the 1,025th open ask of one session is refused with E_TOO_MANY_ASKS; others may still ask; an answer frees a place", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const asker = yield* broker.session({ sessionId: "asker" })
      const target = yield* broker.session({ sessionId: "target" })
      const other = yield* broker.session({ sessionId: "other" })
      const asks = Array.from({ length: 1024 }, (_, i) => message(`q${i}`, { expectsReply: true }))
      yield* asker.client.sendRaw(encodeFrames(asks.map((msg) => JSON.stringify({ type: "send", to: "target", message: msg }))))
      for (const msg of asks) assertDelivered(yield* ackFor(asker.client, msg.id))
      const oneTooMany = message("one too many", { expectsReply: true })
      const refused = yield* send(asker.client, "target", oneTooMany)
      assertFailed(refused, "E_TOO_MANY_ASKS")
      assert.include(refused.type === "delivery_failed" ? refused.reason : "", "Too many open asks from this session (1024)")
      // Retryable: the refusal is not recorded, so the same ask sent again once there is room is judged afresh.
      assert.isTrue(refused.type === "delivery_failed" && refused.retryable)
      // Another session is not affected.
      assertDelivered(yield* send(other.client, "target", message("mine", { expectsReply: true })))
      // An answer closes one edge: the asker may ask again, the refused ask itself too.
      assertDelivered(yield* send(target.client, "asker", message("a", { replyTo: asks[0]!.id })))
      assertDelivered(yield* send(asker.client, "target", oneTooMany))
    }), 60_000)
})
