/**
 * An ask whose acknowledgement is still unread at its deadline (`ask-expiry-v1`),
 * on a connection that stays live: full sessions on the in-memory broker under
 * TestClock, the asker's inbound frames held back from the moment its
 * question is written, then let through one per 100 ms (the broker's writes
 * to it are slow), and, in one case, the question itself held on the way to
 * the broker.
 *
 * - The broker's verdict is written behind the acknowledgement (a
 *   connection's output is FIFO): the ask ends in `ReplyTimeout` within a
 *   second of the held frames being let through, not a whole timeout after
 *   the acknowledgement was read.
 * - A reply the broker accepted before its deadline, held behind the
 *   acknowledgement, answers the ask.
 * - The broker's deadline counts from when it read the question: a question
 *   it read late keeps its edge open past the asker's `sentAt + timeoutMs`,
 *   and a reply it accepts then answers the ask. (A round trip settled at
 *   `sentAt + timeoutMs` with the acknowledgement unread would be answered
 *   there before that deadline; an asker that ended on that answer would
 *   refuse this reply — why the asker's own timer starts at the
 *   acknowledgement, Ask.ts.)
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Queue } from "effect"
import { TestClock } from "effect/testing"
import { ReplyTimeout } from "../../src/session/errors.ts"
import { memoryWorld } from "../support/memoryWorld.ts"
import { slowDialer } from "../support/slowDialer.ts"

const TIMEOUT = 2_000

const failureOf = <A, E>(exit: Exit.Exit<A, E> | undefined) =>
  exit !== undefined && Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined

describe("ask-expiry-v1: an ask whose acknowledgement is unread at its deadline", () => {
  it.effect("ends with ReplyTimeout once the held frames come, not a whole timeout after the acknowledgement is read", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const slow = slowDialer(world)
      const asker = yield* world.session("asker", { client: { dial: slow.dial } })
      const answerer = yield* world.session("answerer")
      assert.include((yield* asker.client.status).features, "ask-expiry-v1")
      const asking = yield* Effect.forkChild(asker.session.ask({ to: "answerer", message: "well?", timeoutMs: TIMEOUT }))
      yield* Queue.take(answerer.inbound)
      // A second past the deadline, the acknowledgement still unread.
      yield* TestClock.adjust(TIMEOUT + 1_000)
      assert.isUndefined(asking.pollUnsafe(), "the ask ended with its acknowledgement unread")
      yield* slow.release
      yield* TestClock.adjust(1_000)
      const exit = asking.pollUnsafe()
      assert.isDefined(exit, "the ask still waits after the acknowledgement and the notice behind it were read")
      assert.instanceOf(failureOf(exit), ReplyTimeout)
    }))

  it.effect("a reply the broker accepted before its deadline, held behind the acknowledgement, answers the ask", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const slow = slowDialer(world)
      const asker = yield* world.session("asker", { client: { dial: slow.dial } })
      const answerer = yield* world.session("answerer")
      const asking = yield* Effect.forkChild(asker.session.ask({ to: "answerer", message: "well?", timeoutMs: TIMEOUT }))
      yield* Queue.take(answerer.inbound)
      yield* TestClock.adjust(TIMEOUT - 500)
      const replied = yield* answerer.session.reply({ message: "just in time" })
      assert.strictEqual(replied.delivery, "socket_delivered")
      yield* TestClock.adjust(1_500)
      assert.isUndefined(asking.pollUnsafe(), "the ask ended with its acknowledgement unread")
      yield* slow.release
      yield* TestClock.adjust(1_000)
      const exit = asking.pollUnsafe()
      assert.isTrue(exit !== undefined && Exit.isSuccess(exit), `the ask did not end answered: ${String(failureOf(exit))}`)
      if (exit !== undefined && Exit.isSuccess(exit)) assert.include(exit.value.text, "just in time")
    }))

  it.effect("a question the broker read late keeps its edge past sentAt + timeoutMs: a reply it accepts then answers the ask", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const slow = slowDialer(world)
      const asker = yield* world.session("asker", { client: { dial: slow.dial } })
      const answerer = yield* world.session("answerer")
      // The question reaches the broker a second late: its deadline there is at 3 s, the asker's timeout from 0.
      yield* slow.delaySend
      const asking = yield* Effect.forkChild(asker.session.ask({ to: "answerer", message: "well?", timeoutMs: TIMEOUT }))
      yield* slow.sendHeld
      yield* TestClock.adjust(1_000)
      yield* slow.deliverSend
      yield* Queue.take(answerer.inbound)
      // Past sentAt + timeoutMs, before the broker's deadline: the broker accepts the reply.
      yield* TestClock.adjust(1_200)
      const replied = yield* answerer.session.reply({ message: "still open" })
      assert.strictEqual(replied.delivery, "socket_delivered")
      assert.isUndefined(asking.pollUnsafe(), "the ask ended with its acknowledgement unread")
      yield* TestClock.adjust(300)
      yield* slow.release
      yield* TestClock.adjust(1_000)
      const exit = asking.pollUnsafe()
      assert.isTrue(exit !== undefined && Exit.isSuccess(exit), `the ask did not end answered: ${String(failureOf(exit))}`)
      if (exit !== undefined && Exit.isSuccess(exit)) assert.include(exit.value.text, "still open")
    }))
})
