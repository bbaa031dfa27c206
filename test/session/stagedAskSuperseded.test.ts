/**
 * A staged `replace` ask that its asker's later message on the same thread
 * replaces within the window (`delivery-v1`): the broker delivers only the
 * latest and tells the asker with a `superseded` receipt, so the ask — a full
 * client and session on the in-memory broker, under TestClock — ends with
 * `AskSuperseded` and the broker's reason, not at its timeout. The same for a
 * staged answer: replaced before delivery, the ask it answered is owed again.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Queue } from "effect"
import { TestClock } from "effect/testing"
import { memoryWorld } from "../support/memoryWorld.ts"
import { settle } from "../support/steps.ts"

describe("a staged ask replaced by its asker's later message on the thread", () => {
  it.effect("the ask ends with AskSuperseded when the broker says so; the target gets only the later message", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const asker = yield* world.session("asker")
      const target = yield* world.session("target")
      const asking = yield* Effect.forkChild(asker.session.intercom({
        action: "ask",
        to: "target",
        message: "Which port?",
        delivery: "queue",
        queueMode: "replace",
        threadId: "build",
        timeoutMs: 600_000
      }), { startImmediately: true })
      yield* settle(Effect.void)
      assert.isUndefined(asking.pollUnsafe(), "staged, so still waiting")
      // A parallel tool call of the same turn: a progress update on the same thread, within the window.
      const sent = yield* settle(asker.session.send({
        to: "target",
        message: "still building",
        delivery: "queue",
        queueMode: "replace",
        threadId: "build"
      }))
      assert.strictEqual(sent._tag, "Sent")
      yield* settle(Effect.void)
      const result = asking.pollUnsafe()
      if (result === undefined) return assert.fail("the ask still waits for a question the target will never get")
      const ended = yield* Fiber.join(asking)
      assert.isTrue(ended.isError)
      assert.strictEqual(ended.details["error"], "AskSuperseded")
      assert.match(ended.text, /^This ask was replaced before delivery and will get no reply: Replaced by \S+ on thread "build"/)
      assert.isFalse(yield* asker.session.waiting)
      // The window closes: only the update reaches the target.
      yield* TestClock.adjust(2_000)
      yield* settle(Effect.void)
      const handed = yield* Queue.takeAll(target.inbound)
      assert.deepStrictEqual(handed.map((inbound) => inbound.message.content.text), ["still building"])
    }))
})

describe("a staged answer replaced by its sender's later message on the thread", () => {
  it.effect("the ask it answered is pending again, and a later answer reaches the asker", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const asker = yield* world.session("asker")
      const answerer = yield* world.session("answerer")
      const asking = yield* Effect.forkChild(
        asker.session.intercom({ action: "ask", to: "answerer", message: "Which port?", timeoutMs: 600_000 }),
        { startImmediately: true }
      )
      yield* settle(Effect.void)
      const question = yield* Queue.take(answerer.inbound)
      const replace = { delivery: "queue", queueMode: "replace", threadId: "build" } as const
      const replied = yield* settle(answerer.session.reply({ message: "8080", replyTo: question.message.id, ...replace }))
      assert.strictEqual(replied.delivery, "staged")
      assert.strictEqual(yield* answerer.session.pendingCount, 0, "answered, as far as the answerer knows")
      // A progress note on the same thread within the window replaces the staged answer.
      yield* settle(answerer.session.send({ to: "asker", message: "still building", ...replace }))
      yield* settle(Effect.void)
      assert.strictEqual(yield* answerer.session.pendingCount, 1, "the replaced answer never reaches the asker")
      yield* TestClock.adjust(2_000)
      yield* settle(Effect.void)
      assert.isUndefined(asking.pollUnsafe(), "the asker got only the note")
      yield* settle(answerer.session.reply({ message: "8080", replyTo: question.message.id }))
      yield* settle(Effect.void)
      const answered = yield* Fiber.join(asking)
      assert.deepStrictEqual([answered.text, answered.isError], ["**Reply from answerer:**\n8080", false])
      assert.strictEqual(yield* answerer.session.pendingCount, 0)
    }))
})
