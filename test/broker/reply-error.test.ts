/**
 * `reply-error-v1` (C-ASK-7) over real Unix sockets: a reply may carry
 * `replyError`; an asker granted the extension gets the field, a base asker
 * gets the reply's text marked as an error, and a `replyError` that is not on
 * a reply (or is blank, or too long) is refused with nothing delivered.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Reason } from "../../src/protocol/delivery.ts"
import { REPLY_ERROR_V1 } from "../../src/protocol/features.ts"
import { MAX_REPLY_ERROR_LENGTH } from "../../src/protocol/limits.ts"
import { assertDelivered, assertFailed } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { message, messageFor, send, withBroker } from "../support/broker.ts"

const extended = { frame: { features: [REPLY_ERROR_V1] } }

/** An asker (extended or base), an extended answerer, and an open ask from the first to the second. */
const asked = (askerFeatures: "extended" | "base") =>
  Effect.gen(function*() {
    const broker = yield* withBroker()
    const asker = yield* broker.session({ sessionId: "asker", name: "Asker", ...(askerFeatures === "extended" ? extended : {}) })
    const answerer = yield* broker.session({ sessionId: "answerer", name: "Answerer", ...extended })
    const question = message("can you run the migration?", { expectsReply: true })
    assertDelivered(yield* send(asker.client, "answerer", question))
    yield* messageFor(answerer.client, question.id)
    return { broker, asker, answerer, question }
  })

describe("reply-error-v1", () => {
  it.live("the broker grants reply-error-v1 only to a client that asks for it", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const asking = yield* broker.session(extended)
      const base = yield* broker.session()
      assert.include(asking.registered.features ?? [], REPLY_ERROR_V1)
      assert.notInclude(base.registered.features ?? [], REPLY_ERROR_V1)
    }))

  it.live("an extended asker gets the reply with its replyError field and the text unchanged", () =>
    Effect.gen(function*() {
      const { asker, answerer, question } = yield* asked("extended")
      const failure = message("", { replyTo: question.id })
      assertDelivered(yield* send(answerer.client, "asker", failure, { replyError: "database is read-only" }))
      const got = yield* messageFor(asker.client, failure.id)
      assert.strictEqual(got.replyError, "database is read-only")
      assert.strictEqual(got.message.replyTo, question.id)
      assert.strictEqual(got.message.content.text, "")
    }))

  it.live("a base asker gets no field: the reply's text says it is an error, with the error and the reply's own text", () =>
    Effect.gen(function*() {
      const { asker, answerer, question } = yield* asked("base")
      const failure = message("tried twice", { replyTo: question.id })
      assertDelivered(yield* send(answerer.client, "asker", failure, { replyError: "database is read-only" }))
      const got = yield* messageFor(asker.client, failure.id)
      assert.isFalse(Object.hasOwn(got, "replyError"))
      assert.strictEqual(got.message.content.text, "Reply error: database is read-only\n\ntried twice")
      assert.strictEqual(got.message.replyTo, question.id)
    }))

  it.live("replyError without replyTo is refused with a clear reason, and nothing is delivered", () =>
    Effect.gen(function*() {
      const { asker, answerer } = yield* asked("extended")
      const plain = message("not a reply")
      const ack = yield* send(answerer.client, "asker", plain, { replyError: "boom" })
      assertFailed(ack, "E_INVALID_MESSAGE", Reason.replyErrorWithoutReplyTo)
      assert.include(Reason.replyErrorWithoutReplyTo, "replyTo")
      yield* settled([answerer.client], [asker.client])
      yield* asker.client.expectNothing("message", (frame) => frame.message.id === plain.id)
    }))

  it.live("a blank, too long or non-string replyError is refused; the ask stays open for a proper reply", () =>
    Effect.gen(function*() {
      const { asker, answerer, question } = yield* asked("extended")
      for (const replyError of ["   ", "x".repeat(MAX_REPLY_ERROR_LENGTH + 1), 42]) {
        const attempt = message("", { replyTo: question.id })
        const ack = yield* send(answerer.client, "asker", attempt, { replyError })
        assert.strictEqual(ack.type, "delivery_failed", JSON.stringify(replyError).slice(0, 20))
        if (ack.type === "delivery_failed") {
          assert.strictEqual(ack.code, "E_INVALID_MESSAGE")
          assert.include(ack.reason, "replyError")
        }
      }
      const answer = message("done", { replyTo: question.id })
      assertDelivered(yield* send(answerer.client, "asker", answer))
      const got = yield* messageFor(asker.client, answer.id)
      assert.isFalse(Object.hasOwn(got, "replyError"))
    }))

  it.live("a base sender's replyError is not read: its reply goes out as a plain answer", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const asker = yield* broker.session({ sessionId: "asker", ...extended })
      const baseAnswerer = yield* broker.session({ sessionId: "base-answerer" })
      const question = message("q", { expectsReply: true })
      assertDelivered(yield* send(asker.client, "base-answerer", question))
      yield* messageFor(baseAnswerer.client, question.id)
      const answer = message("fine", { replyTo: question.id })
      assertDelivered(yield* send(baseAnswerer.client, "asker", answer, { replyError: "ignored" }))
      const got = yield* messageFor(asker.client, answer.id)
      assert.isFalse(Object.hasOwn(got, "replyError"))
      assert.strictEqual(got.message.content.text, "fine")
      // Without replyTo it is not refused either: a base sender's field is not looked at.
      assertDelivered(yield* send(baseAnswerer.client, "asker", message("fyi"), { replyError: "ignored" }))
    }))

  it.live("a retry with the same id and another replyError is a different send (E_MESSAGE_ID_REUSE)", () =>
    Effect.gen(function*() {
      const { asker, answerer, question } = yield* asked("extended")
      const failure = message("", { replyTo: question.id })
      assertDelivered(yield* send(answerer.client, "asker", failure, { replyError: "first reason" }))
      // The same send again is answered from its record (P46), not delivered twice.
      assertDelivered(yield* send(answerer.client, "asker", failure, { replyError: "first reason" }))
      assertFailed(yield* send(answerer.client, "asker", failure, { replyError: "second reason" }), "E_MESSAGE_ID_REUSE")
      yield* settled([answerer.client], [asker.client])
      assert.strictEqual(
        asker.client.received().filter((frame) => frame.type === "message" && frame.message.id === failure.id).length,
        1
      )
    }))
})
