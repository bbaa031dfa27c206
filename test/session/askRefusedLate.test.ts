/**
 * A question the broker refuses, its refusal held behind slow writes past
 * the asker's send timeout: the asker settles with the broker
 * (`settleUnacknowledged`, src/session/Ask.ts) and ends on the refusal its
 * client kept (`lateVerdict`), as if read in time — not in `ReplyTimeout`
 * after a further whole timeout (review revak AK1). Full sessions on the
 * in-memory broker under TestClock, the asker's inbound frames held from its
 * question's write on (test/support/slowDialer.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Queue } from "effect"
import { TestClock } from "effect/testing"
import { DeliveryCode } from "../../src/protocol/delivery.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import { NotDelivered } from "../../src/session/errors.ts"
import { memoryWorld } from "../support/memoryWorld.ts"
import { slowDialer } from "../support/slowDialer.ts"
import type { Connection } from "../../src/transport/Connection.ts"

const TIMEOUT = 2_000
const SEND_TIMEOUT = 3_000

const failureOf = <A, E>(exit: Exit.Exit<A, E> | undefined) =>
  exit !== undefined && Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined

/**
 * `dial` whose connections complete `written` once a `send` frame is handed to
 * the transport: the barrier that the question went out (the send's timer
 * runs from before that write).
 */
const watchingSend = <R>(dial: (path: string) => Effect.Effect<Connection, never, R>, written: Deferred.Deferred<void>) =>
(path: string): Effect.Effect<Connection, never, R> =>
  Effect.map(dial(path), (connection): Connection => {
    const seen = (frames: ReadonlyArray<OutFrame>) => {
      if (frames.some((frame) => frameText(frame).startsWith(`{"type":"send"`))) Deferred.doneUnsafe(written, Exit.void)
    }
    return {
      ...connection,
      writeAll: (frames) => {
        seen(frames)
        return connection.writeAll(frames)
      },
      write: (frames) => {
        seen(frames)
        return connection.write(frames)
      },
      unfinishedWrite: () => connection.unfinishedWrite(),
      readProgress: () => connection.readProgress(),
      readPending: () => connection.readPending()
    }
  })

const describeExit = <A, E>(exit: Exit.Exit<A, E> | undefined): string =>
  exit === undefined ? "still waiting" : Exit.isSuccess(exit) ? "answered" : String(failureOf(exit))

describe("ask: a refusal held past the send timeout", () => {
  it.effect("a mutual ask refused (E_MUTUAL_ASK) behind slow writes ends NotDelivered with the broker's refusal once it is read, not ReplyTimeout after a further timeout", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const slow = slowDialer(world)
      const written = Deferred.makeUnsafe<void>()
      const dial = watchingSend(slow.dial, written)
      const asker = yield* world.session("asker", { client: { dial, sendTimeoutMs: SEND_TIMEOUT } })
      const answerer = yield* world.session("answerer")
      assert.include((yield* asker.client.status).features, "ask-expiry-v1")
      // The answerer waits on the asker: the asker's question to it is a mutual ask, which the broker refuses.
      yield* Effect.forkChild(answerer.session.ask({ to: "asker", message: "first?", timeoutMs: 60_000 }))
      yield* Queue.take(asker.inbound)
      const ask = yield* Effect.forkChild(asker.session.ask({ to: "answerer", message: "well?", timeoutMs: TIMEOUT }))
      yield* Deferred.await(written)
      // The refusal is held behind the slow writes past the send timeout.
      yield* TestClock.adjust(SEND_TIMEOUT + 500)
      assert.isUndefined(ask.pollUnsafe(), "the ask ended with the broker's answer to its question unread")
      // The held frames (the refusal, then the settling round trip's answer) come within a second.
      yield* slow.release
      yield* TestClock.adjust(1_000)
      const exit = ask.pollUnsafe()
      if (exit === undefined) {
        // What the user is told today: after the ask's whole timeout once more.
        yield* TestClock.adjust(TIMEOUT + 1_000)
      }
      const final = exit ?? ask.pollUnsafe()
      const failure = failureOf(final)
      assert.isTrue(
        exit !== undefined && failure instanceof NotDelivered && failure.code === DeliveryCode.MutualAsk,
        `a refused question must end NotDelivered(E_MUTUAL_ASK) once its refusal is read; it ended: ${
          exit === undefined ? `only ${TIMEOUT + 1_000} ms later, ${describeExit(final)}` : describeExit(exit)
        }`
      )
    }))
})
