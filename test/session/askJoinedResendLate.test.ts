/**
 * A question lost with its connection is written again by the client on the
 * next one (Resending.writeAgain), and the ask's own retry joins that
 * re-send (PendingSends.join). When the broker's answer to the re-send is
 * held past the send timeout, the joined retry times out and the asker
 * settles (`settleUnacknowledged`, src/session/Ask.ts): the answer read
 * after that is the ask's late verdict (`lateVerdict`), as it is for a send
 * that timed out on its first write. Before, the connection still held the
 * re-send for the retry that had left, settled it with nobody waiting, and
 * the ask, finding no verdict, waited on as if its question were delivered.
 * The verdict here is `queued` (the target left while the asker was away);
 * a refusal takes the same path. Full sessions on the in-memory broker
 * under TestClock: the asker's first connection drops as the question is
 * written (the broker never reads it), and its second holds what it reads
 * from the re-send's write on, until the test releases it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Scope } from "effect"
import { TestClock } from "effect/testing"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import { type Connection, ConnectionClosed } from "../../src/transport/Connection.ts"
import { closeOnSimulatedTime } from "../support/memory.ts"
import { memoryWorld } from "../support/memoryWorld.ts"

const TIMEOUT = 20_000
const SEND_TIMEOUT = 3_000
const RECONNECT_MS = 5_000

/** Whether `frames` hold a `send` (the question). */
const hasSend = (frames: ReadonlyArray<OutFrame>) => frames.some((frame) => frameText(frame).startsWith(`{"type":"send"`))

/**
 * A dialer over `world` whose first connection drops as a `send` is written (its frames go nowhere), and
 * whose second holds everything it reads once a `send` is written on it, until `release`.
 */
const dropThenHold = (world: { readonly dial: Effect.Effect<Connection, never, Scope.Scope> }) => {
  const resent = Deferred.makeUnsafe<void>()
  const reads = Deferred.makeUnsafe<void>()
  let dials = 0
  let dropped = false
  const dial = (_socketPath: string) =>
    Effect.map(world.dial, (connection): Connection => {
      dials += 1
      const index = dials
      let holding = false
      const held: Array<string> = []
      const written = (frames: ReadonlyArray<OutFrame>, write: Effect.Effect<void, ConnectionClosed>) => {
        if (!hasSend(frames) || index > 2) return write
        if (index === 1) {
          dropped = true
          return Effect.andThen(connection.destroy, Effect.fail(new ConnectionClosed({ clean: false })))
        }
        holding = true
        return Effect.andThen(write, Deferred.succeed(resent, undefined))
      }
      return {
        ...connection,
        read: Effect.suspend(() =>
          held.length > 0
            ? Effect.succeed(held.splice(0, held.length))
            : Effect.flatMap(connection.read, (frames) => {
              if (!holding) return Effect.succeed(frames)
              held.push(...frames)
              return Effect.andThen(Deferred.await(reads), Effect.sync(() => held.splice(0, held.length)))
            })
        ),
        writeAll: (frames) => written(frames, connection.writeAll(frames)),
        write: (frames) => written(frames, connection.write(frames) ?? Effect.void),
        unfinishedWrite: () => connection.unfinishedWrite(),
        readProgress: () => connection.readProgress(),
        readPending: () => connection.readPending()
      }
    })
  return {
    dial,
    /** Whether the first connection dropped (its question unread). */
    dropped: () => dropped,
    /** Whether the second connection wrote the question again. */
    resent: () => Deferred.isDoneUnsafe(resent),
    /** Lets the second connection's held frames through. */
    release: Deferred.succeed(reads, undefined)
  }
}

/** Steps the clock 50 ms at a time (each step runs the timers due in it) until `done`, at most `limitMs`. */
const stepUntil = (done: () => boolean, limitMs: number) =>
  Effect.gen(function*() {
    for (let waited = 0; waited < limitMs && !done(); waited += 50) yield* TestClock.adjust(50)
    assert.isTrue(done(), `not done within ${limitMs} simulated ms`)
  })

describe("ask: the late verdict of a retry that joined the client's re-send", () => {
  it.effect("a question the broker queues on the re-send (its target gone meanwhile), that verdict held past the send timeout, ends queued once it is read, not ReplyTimeout a whole timeout later", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const link = dropThenHold(world)
      const asker = yield* world.session("asker", {
        client: { dial: link.dial, sendTimeoutMs: SEND_TIMEOUT, reconnectBaseMs: RECONNECT_MS, reconnectMaxMs: RECONNECT_MS }
      })
      const answererScope = yield* Scope.make()
      yield* world.session("answerer").pipe(Scope.provide(answererScope))
      const ask = yield* Effect.forkChild(asker.session.ask({ to: "answerer", message: "well?", timeoutMs: TIMEOUT }))
      // The first connection drops as the question is written: the broker never read it.
      yield* stepUntil(link.dropped, 1_000)
      // The target leaves before the asker is back (its reconnect back-off is longer than this close).
      yield* closeOnSimulatedTime(answererScope)
      // The next connection writes the question again, and the ask's retry joins that re-send.
      yield* stepUntil(link.resent, 2 * RECONNECT_MS)
      // The broker's verdict on the re-send (queued for the target gone offline) is held past the retry's send timeout.
      yield* TestClock.adjust(SEND_TIMEOUT + 500)
      assert.isUndefined(ask.pollUnsafe(), "the ask ended with the broker's answer to its question unread")
      yield* link.release
      yield* TestClock.adjust(1_000)
      const exit = ask.pollUnsafe()
      // What the user is told without the late verdict: the question is taken as delivered and times out.
      if (exit === undefined) yield* TestClock.adjust(TIMEOUT + 1_000)
      const final = exit ?? ask.pollUnsafe()
      const failure = final !== undefined && Exit.isFailure(final) ? Cause.squash(final.cause) : undefined
      assert.isTrue(
        exit !== undefined && Exit.isSuccess(exit) && exit.value._tag === "Sent" && exit.value.delivery === "queued",
        `a question the broker queued must end as queued once that is read; it ended: ${
          exit === undefined ? "not once it was read, but later: " : ""
        }${final === undefined ? "not at all" : Exit.isSuccess(final) ? JSON.stringify(final.value) : String(failure)}`
      )
    }))
})
