/**
 * The asker's settle held by the real broker (in-memory network, TestClock):
 * the answerer's reply is parked behind its mail to `stuck`, a session that
 * never reads, so the broker holds the asker's settling answer
 * (src/broker/ParkedReplies.ts) while it answers the asker's other requests.
 * The client keeps that connection (its liveness probes are answered) and
 * waits for the held answer within the rejoin grace; the reply never comes,
 * so the ask ends in `ReplyTimeout` once the grace from the deadline ran out
 * — on the same connection, the held answer never dropped with it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import { TestClock } from "effect/testing"
import { ReplyTimeout } from "../../src/session/errors.ts"
import { message, registerFrame } from "../support/broker.ts"
import { memoryWorld } from "../support/memoryWorld.ts"

const TIMEOUT = 10_000

describe("an ask whose settle the broker holds behind a parked reply", () => {
  it.effect("keeps the asker's connection past the liveness timeout and ends in ReplyTimeout after the rejoin grace", () =>
    Effect.gen(function*() {
      // Outboxes of two frames, links of four: a session that does not read holds six frames, then its senders wait.
      const world = yield* memoryWorld({ outboxCapacity: 2 }, { linkCapacity: 4 })
      const stuck = yield* world.dial
      yield* stuck.writeAll([JSON.stringify(registerFrame({ name: "stuck" }))])
      const asker = yield* world.session("asker")
      // The answerer speaks the wire itself, so that its mail to `stuck` and its reply are one read batch.
      const answerer = yield* world.dial
      yield* answerer.writeAll([JSON.stringify(registerFrame({ name: "answerer" }))])
      const asking = yield* Effect.forkChild(asker.session.ask({ to: "answerer", message: "well?", timeoutMs: TIMEOUT }))
      let questionId: string | undefined
      while (questionId === undefined) {
        for (const text of yield* answerer.read) {
          const frame = JSON.parse(text)
          if (frame.type === "message" && frame.message.content.text === "well?") questionId = frame.message.id
        }
      }
      // The mail to `stuck` fills its outbox and link; the rest, and the reply behind it, are parked.
      yield* answerer.writeAll([
        ...Array.from({ length: 10 }, (_, i) => JSON.stringify({ type: "send", to: "stuck", message: message(`fill ${i}`) })),
        JSON.stringify({ type: "send", to: "asker", message: message("the answer", { replyTo: questionId }) })
      ])
      yield* TestClock.adjust(100)
      // The asker's deadline: its settling list is held; its other requests are answered at once.
      yield* TestClock.adjust(TIMEOUT)
      assert.isAbove((yield* asker.client.list).length, 0)
      assert.strictEqual((yield* world.broker.stats).answersBehindReplies, 1, "the settling answer is held")
      // The liveness timeout (5 s) passes with the settle still held: the probe is answered, the connection kept.
      yield* TestClock.adjust("6 seconds")
      const afterTimeout = yield* asker.client.status
      assert.strictEqual(afterTimeout.connections, 1, `the healthy connection was dropped (lastError: ${afterTimeout.lastError})`)
      assert.isUndefined(asking.pollUnsafe(), "the ask ended within the rejoin grace")
      // The rest of the rejoin grace (10 s from the deadline).
      yield* TestClock.adjust("5 seconds")
      const ended = asking.pollUnsafe()
      assert.isDefined(ended, "the ask still waits past the rejoin grace")
      assert.instanceOf(ended !== undefined && Exit.isFailure(ended) ? Cause.squash(ended.cause) : undefined, ReplyTimeout)
      const final = yield* asker.client.status
      assert.strictEqual(final.connections, 1)
      assert.strictEqual((yield* world.broker.stats).answersDropped, 0, "a held answer was dropped with its connection")
    }))
})
