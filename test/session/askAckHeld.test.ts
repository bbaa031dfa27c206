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
import { Cause, Deferred, Effect, Exit, Queue, type Scope } from "effect"
import { TestClock } from "effect/testing"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import { ReplyTimeout } from "../../src/session/errors.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { memoryWorld } from "../support/memoryWorld.ts"

const TIMEOUT = 2_000
/** How long each held frame takes to come once the held frames are released. */
const FRAME_MS = "100 millis"

/** Whether `frames` hold a `send` (the question). */
const hasSend = (frames: ReadonlyArray<OutFrame>) => frames.some((frame) => frameText(frame).startsWith(`{"type":"send"`))

/**
 * A dialer over `world` whose connection stops handing on what it reads once
 * the question's `send` is written, until `release` (the broker's writes to
 * the asker are slow), and from then on one frame per `FRAME_MS`; with `delaySend`, the question's write itself waits
 * until `deliverSend` (the broker reads it late; `sendHeld` completes as it
 * starts to wait).
 */
const slowDialer = (world: { readonly dial: Effect.Effect<Connection, never, Scope.Scope> }) => {
  const reads = Deferred.makeUnsafe<void>()
  const sendGate = Deferred.makeUnsafe<void>()
  const sendHeld = Deferred.makeUnsafe<void>()
  let holding = false
  let delaying = false
  const trickle: Array<string> = []
  const dial = (_socketPath: string) =>
    Effect.map(world.dial, (connection): Connection => {
      const written = (frames: ReadonlyArray<OutFrame>) => {
        if (!hasSend(frames)) return
        holding = true
        if (delaying) Deferred.doneUnsafe(sendHeld, Exit.void)
      }
      return {
        id: connection.id,
        trustedLocal: connection.trustedLocal,
        // Once held, what was read is handed on one frame per `FRAME_MS`, as a slow writer's frames come: the fault
        // model under TestClock (the test moves the clock), not a barrier — every wait below is on a frame or a result.
        read: Effect.suspend(() =>
          trickle.length > 0
            ? Effect.as(Effect.sleep(FRAME_MS), trickle.splice(0, 1))
            : Effect.flatMap(connection.read, (frames) => {
              if (!holding) return Effect.succeed(frames)
              trickle.push(...frames)
              return Effect.as(Deferred.await(reads), trickle.splice(0, 1))
            })
        ),
        writeAll: (frames) => {
          const late = delaying && hasSend(frames)
          written(frames)
          return late ? Effect.andThen(Deferred.await(sendGate), connection.writeAll(frames)) : connection.writeAll(frames)
        },
        write: (frames) => {
          const late = delaying && hasSend(frames)
          written(frames)
          return late
            ? Effect.andThen(Deferred.await(sendGate), Effect.suspend(() => connection.write(frames) ?? Effect.void))
            : connection.write(frames)
        },
        unfinishedWrite: () => connection.unfinishedWrite(),
        readProgress: () => connection.readProgress(),
        readPending: () => connection.readPending(),
        end: connection.end,
        destroy: connection.destroy
      }
    })
  return {
    dial,
    release: Deferred.succeed(reads, undefined),
    delaySend: Effect.sync(() => {
      delaying = true
    }),
    deliverSend: Deferred.succeed(sendGate, undefined),
    /** Completes once the question's write waits (`delaySend`). */
    sendHeld: Deferred.await(sendHeld)
  }
}

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
