/**
 * `SendRequest.askSince` (an ask's first send, requests.ts `askTimeoutAt`):
 * every write carries what is left of the ask's timeout since then, as the
 * whole number of milliseconds the broker accepts, however `askSince` was
 * read; one that is not a finite time is refused by name, nothing sent.
 * Real clients on the in-memory broker under TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Option, Queue } from "effect"
import { askTimeoutAt } from "../../src/client/requests.ts"
import { message } from "../support/broker.ts"
import { memoryWorld } from "../support/memoryWorld.ts"

describe("askSince: the time since an ask's first send", () => {
  it("is taken in whole milliseconds, rounded up, whatever fraction askSince has", () => {
    const request = { to: "answerer", message: message("well?", { expectsReply: true }), askTimeoutMs: 1_000 }
    assert.strictEqual(askTimeoutAt({ ...request, askSince: 99.5 }, 200), 899)
    assert.strictEqual(askTimeoutAt({ ...request, askSince: 100 }, 200), 900)
    assert.strictEqual(askTimeoutAt({ ...request, askSince: 200.25 }, 200), 1_000, "a first send in the future counts as now")
  })

  it.effect("a send with a valid askTimeoutMs and a fractional askSince is delivered, its askTimeoutMs a whole number", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const asker = yield* world.session("asker")
      const answerer = yield* world.session("answerer")
      const now = yield* Clock.currentTimeMillis
      const outcome = yield* Effect.result(asker.client.send({
        to: "answerer",
        message: message("well?", { expectsReply: true }),
        askTimeoutMs: 60_000,
        askSince: now - 0.5
      }))
      assert.strictEqual(outcome._tag, "Success", outcome._tag === "Failure" ? outcome.failure.message : "")
      const handed = yield* Queue.take(answerer.inbound)
      assert.strictEqual(handed.message.content.text, "well?")
    }))

  it.effect("a send whose askSince is NaN is refused as an InvalidMessage naming askSince, and nothing is handed on", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const asker = yield* world.session("asker")
      const answerer = yield* world.session("answerer")
      const outcome = yield* Effect.result(asker.client.send({
        to: "answerer",
        message: message("well?", { expectsReply: true }),
        askTimeoutMs: 60_000,
        askSince: Number.NaN
      }))
      assert.strictEqual(outcome._tag, "Failure")
      if (outcome._tag !== "Failure") return
      assert.strictEqual(outcome.failure._tag, "InvalidMessage")
      assert.include(outcome.failure.message, "askSince")
      // A round trip on the asker's connection, then on the answerer's: anything sent would be handed on by now.
      yield* asker.client.list
      yield* answerer.client.list
      assert.isTrue(Option.isNone(yield* Queue.poll(answerer.inbound)))
    }))
})
