/**
 * Ask edges live as long as the asker waits: the broker's configured ask
 * timeout, or the timeout the asker announced with `ask-timeout-v1`. Under
 * TestClock on the in-memory network, so minutes pass in microseconds.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Queue, Stream } from "effect"
import { TestClock } from "effect/testing"
import { randomUUID } from "node:crypto"
import type { IntercomClientService } from "../../src/client/IntercomClient.ts"
import type { Message } from "../../src/protocol/frames.ts"
import { memoryWorld } from "../support/memoryWorld.ts"

const MINUTE = 60_000

const ask = (text: string): Message => ({ id: randomUUID(), timestamp: 0, content: { text }, expectsReply: true })

const replyTo = (question: Message): Message => ({
  id: randomUUID(),
  timestamp: 0,
  content: { text: `answer to ${question.content.text}` },
  replyTo: question.id
})

/** The next inbound message of `client`. */
const nextMessage = (client: IntercomClientService) =>
  client.messages.pipe(Stream.take(1), Stream.runHead, Effect.map((head) => head._tag === "Some" ? head.value : undefined))

describe("ask edges follow the ask timeout", () => {
  it.effect("a reply at minute 30 of an ask announced as 60 minutes reaches the asker (broker default 10 minutes)", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const a = yield* world.client("asker")
      const b = yield* world.client("answerer")
      yield* Effect.all([a.connect, b.connect])
      const question = ask("long one")
      const delivery = yield* a.send({ to: "answerer", message: question, askTimeoutMs: 60 * MINUTE })
      assert.strictEqual(delivery.delivery, "socket_delivered")
      const received = yield* nextMessage(b)
      assert.strictEqual(received?.message.id, question.id)
      // The recipient learns how long the asker waits.
      assert.strictEqual(received?.askTimeoutMs, 60 * MINUTE)
      yield* TestClock.adjust(30 * MINUTE)
      const answer = replyTo(question)
      assert.strictEqual((yield* b.send({ to: "asker", message: answer })).delivery, "socket_delivered")
      assert.strictEqual((yield* nextMessage(a))?.message.replyTo, question.id)
    }))

  it.effect("without an announcement the broker's ask timeout applies: a reply after it is refused", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld({ askTimeout: 10 * MINUTE })
      const a = yield* world.client("asker")
      const b = yield* world.client("answerer")
      yield* Effect.all([a.connect, b.connect])
      const question = ask("short one")
      yield* a.send({ to: "answerer", message: question })
      assert.strictEqual((yield* nextMessage(b))?.askTimeoutMs, 10 * MINUTE)
      yield* TestClock.adjust(9 * MINUTE)
      // Still open at minute 9 (a second ask from the same pair would be mutual-refused otherwise).
      const early = yield* b.send({ to: "asker", message: replyTo(question) })
      assert.strictEqual(early.delivery, "socket_delivered")
      const late = ask("another")
      yield* a.send({ to: "answerer", message: late })
      yield* TestClock.adjust(10 * MINUTE)
      const refused = yield* Effect.flip(b.send({ to: "asker", message: replyTo(late) }))
      assert.strictEqual(refused._tag, "ReplyTargetMismatch")
    }))

  it.effect("a configured broker ask timeout of 60 minutes keeps an unannounced ask open at minute 30", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld({ askTimeout: 60 * MINUTE })
      const a = yield* world.client("asker")
      const b = yield* world.client("answerer")
      yield* Effect.all([a.connect, b.connect])
      const question = ask("configured")
      yield* a.send({ to: "answerer", message: question })
      yield* nextMessage(b)
      yield* TestClock.adjust(30 * MINUTE)
      assert.strictEqual((yield* b.send({ to: "asker", message: replyTo(question) })).delivery, "socket_delivered")
    }))

  it.effect("an announced timeout that is not a whole number of ms from 1 to 30 days is refused; nothing is sent", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const a = yield* world.client("asker")
      const b = yield* world.client("answerer")
      yield* Effect.all([a.connect, b.connect])
      for (const askTimeoutMs of [0, -5, 1.5, 31 * 24 * 60 * MINUTE]) {
        const refused = yield* Effect.flip(a.send({ to: "answerer", message: ask(`bad ${askTimeoutMs}`), askTimeoutMs }))
        assert.strictEqual(refused._tag, "InvalidMessage", `askTimeoutMs ${askTimeoutMs}`)
        assert.include(refused.message, "askTimeoutMs")
      }
      // The answerer got none of them: the next thing it receives is this one.
      const fine = ask("fine")
      yield* a.send({ to: "answerer", message: fine, askTimeoutMs: 5 * MINUTE })
      assert.strictEqual((yield* nextMessage(b))?.message.id, fine.id)
    }))

  it.effect("sessions: a 60-minute ask with 10-minute session defaults is answered at minute 30 and stays pending until then", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const asker = yield* world.session("asker")
      const answerer = yield* world.session("answerer")
      const asking = yield* Effect.forkChild(asker.session.ask({ to: "answerer", message: "take your time", timeoutMs: 60 * MINUTE }))
      const question = yield* Queue.take(answerer.inbound)
      assert.strictEqual(question.message.content.text, "take your time")
      yield* TestClock.adjust(30 * MINUTE)
      // Still owed an answer on the receiving side, past its own 10-minute default.
      const pending = yield* answerer.session.pending
      assert.deepStrictEqual(pending.asks.map((ask) => ask.message.id), [question.message.id])
      yield* answerer.session.reply({ message: "done thinking" })
      const answer = yield* Fiber.join(asking)
      assert.strictEqual(answer._tag, "Replied")
      assert.include(answer.text, "done thinking")
    }))
})
