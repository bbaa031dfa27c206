/**
 * Correlated failure replies in the session runtime (C-ASK-7): `reply` with
 * `replyError` ends the asker's `ask` as a tool error whose text is exactly
 * that string. On the in-memory broker, under TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Queue } from "effect"
import { memoryWorld } from "../support/memoryWorld.ts"

describe("reply with replyError (C-ASK-7)", () => {
  it.effect("the asker's ask tool call ends as an error whose text is the replyError; the answer needs no message", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const asker = yield* world.session("asker")
      const answerer = yield* world.session("answerer")
      const asking = yield* Effect.forkChild(asker.session.intercom({ action: "ask", to: "answerer", message: "migrate?" }))
      const question = yield* Queue.take(answerer.inbound)
      const sent = yield* answerer.session.intercom({ action: "reply", replyError: "database is read-only" })
      assert.isFalse(sent.isError, sent.text)
      assert.strictEqual(sent.text, "Reply sent to asker")
      assert.strictEqual(sent.details["replyTo"], question.message.id)
      assert.strictEqual(sent.details["replyError"], true)
      const result = yield* Fiber.join(asking)
      assert.isTrue(result.isError)
      assert.strictEqual(result.text, "database is read-only")
      assert.strictEqual(result.details["error"], "ReplyFailed")
      // The error result names the reply, so a host's history holds it (InboundJournal.handled, known issue 6).
      assert.strictEqual(result.details["replyId"], sent.details["messageId"])
      assert.strictEqual(result.details["from"], "answerer") // memoryWorld names each session by its id
      // Answered: nothing is pending on either side.
      assert.deepStrictEqual((yield* answerer.session.pending).asks, [])
      assert.isFalse(yield* asker.session.waiting)
    }))

  it.effect("the typed API: ask fails with ReplyFailed carrying the text, the answering session and the reply", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const asker = yield* world.session("asker")
      const answerer = yield* world.session("answerer")
      const asking = yield* Effect.forkChild(asker.session.ask({ to: "answerer", message: "deploy?" }))
      yield* Queue.take(answerer.inbound)
      const sent = yield* answerer.session.reply({ message: "see the log", replyError: "stage could not admit the ask" })
      const exit = yield* Fiber.await(asking)
      assert.isTrue(Exit.isFailure(exit))
      const error = yield* Effect.flip(Fiber.join(asking))
      assert.strictEqual(error._tag, "ReplyFailed")
      if (error._tag !== "ReplyFailed") return
      assert.strictEqual(error.message, "stage could not admit the ask")
      assert.strictEqual(error.fromId, "answerer")
      assert.strictEqual(error.reply.id, sent.messageId)
      assert.strictEqual(error.reply.content.text, "see the log")
    }))

  it.effect("a failure reply no ask of the session waits for reaches the host with its text marked as an error", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const asker = yield* world.session("asker")
      const answerer = yield* world.session("answerer")
      // An ask made straight from the client: the session holds no wait for it.
      yield* asker.client.send({
        to: "answerer",
        message: { id: "raw-ask", timestamp: 0, content: { text: "q" }, expectsReply: true }
      })
      yield* Queue.take(answerer.inbound)
      yield* answerer.session.reply({ message: "", replyError: "out of quota" })
      const got = yield* Queue.take(asker.inbound)
      assert.strictEqual(got.message.replyTo, "raw-ask")
      assert.strictEqual(got.message.content.text, "Reply error: out of quota")
      assert.include(got.text, "Reply error: out of quota")
    }))

  it.effect("replyError to a message that is not an ask is refused before anything is sent", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const sender = yield* world.session("sender")
      const receiver = yield* world.session("receiver")
      yield* sender.session.send({ to: "receiver", message: "fyi" })
      const plain = yield* Queue.take(receiver.inbound)
      yield* receiver.session.beginTurn({ from: plain.from.id, messageId: plain.message.id })
      const refused = yield* receiver.session.intercom({ action: "reply", replyError: "nope" })
      assert.isTrue(refused.isError)
      assert.strictEqual(refused.details["error"], "InvalidInput")
      assert.include(refused.text, "not one (it expects no reply)")
      // Nothing reached the sender: the next thing it receives is this plain reply.
      yield* receiver.session.intercom({ action: "reply", message: "ok" })
      assert.strictEqual((yield* Queue.take(sender.inbound)).message.content.text, "ok")
    }))

  it.effect("a blank replyError is refused as invalid input and the ask stays pending", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const asker = yield* world.session("asker")
      const answerer = yield* world.session("answerer")
      const asking = yield* Effect.forkChild(asker.session.ask({ to: "answerer", message: "q" }))
      yield* Queue.take(answerer.inbound)
      const refused = yield* answerer.session.intercom({ action: "reply", replyError: "  " })
      assert.isTrue(refused.isError)
      assert.strictEqual(refused.details["error"], "InvalidInput")
      assert.include(refused.text, "replyError is blank")
      assert.strictEqual((yield* answerer.session.pending).asks.length, 1)
      yield* answerer.session.reply({ message: "fine" })
      const answer = yield* Fiber.join(asking)
      assert.strictEqual(answer._tag, "Replied")
    }))
})
