/**
 * A send every caller left unanswered is abandoned, not forgotten
 * (PendingSends.ts, review revas AS1): if its connection then drops, the
 * close keeps it among the unanswered and the next connection writes it
 * again, so the question reaches its answerer. Two ways in: a retry that
 * JOINED the client's re-send and timed out, and a first write that timed
 * out. Forgotten (before the fix), the question was never written again:
 * the asker's settle found no verdict and waited as if it were delivered,
 * and the answerer never got it.
 *
 * Full sessions on the in-memory broker under TestClock: the asker's first
 * connection drops as the question is written; its second swallows every
 * write from the re-sent question on (the broker never reads them), and the
 * liveness probe drops it; its third is sound.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Queue, type Scope } from "effect"
import { TestClock } from "effect/testing"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import { type Connection, ConnectionClosed } from "../../src/transport/Connection.ts"
import { memoryWorld } from "../support/memoryWorld.ts"

const ASK_TIMEOUT = 120_000
const SEND_TIMEOUT = 3_000
const RECONNECT_MS = 1_000
const LIVENESS_TIMEOUT_MS = 2_000

const hasSend = (frames: ReadonlyArray<OutFrame>) => frames.some((frame) => frameText(frame).startsWith(`{"type":"send"`))

/** Connection 1 drops as a `send` is written; connection 2 swallows every write from its first `send` on. */
const dropThenSwallow = (
  world: { readonly dial: Effect.Effect<Connection, never, Scope.Scope> },
  plan: { readonly drops: number | undefined; readonly swallows: number } = { drops: 1, swallows: 2 }
) => {
  const resent = Deferred.makeUnsafe<void>()
  let dials = 0
  let dropped = false
  const dial = (_socketPath: string) =>
    Effect.map(world.dial, (connection): Connection => {
      dials += 1
      const index = dials
      let swallowing = false
      const written = (frames: ReadonlyArray<OutFrame>, write: () => Effect.Effect<void, ConnectionClosed> | undefined) => {
        if (index === plan.drops && hasSend(frames)) {
          dropped = true
          return Effect.andThen(connection.destroy, Effect.fail(new ConnectionClosed({ clean: false })))
        }
        if (index === plan.swallows && (swallowing || hasSend(frames))) {
          swallowing = true
          Deferred.doneUnsafe(resent, Exit.void)
          return undefined
        }
        return write()
      }
      return {
        ...connection,
        writeAll: (frames) => written(frames, () => connection.writeAll(frames)) ?? Effect.void,
        write: (frames) => written(frames, () => connection.write(frames)),
        unfinishedWrite: () => connection.unfinishedWrite(),
        readProgress: () => connection.readProgress(),
        readPending: () => connection.readPending()
      }
    })
  return {
    dial,
    dropped: () => dropped,
    resent: () => Deferred.isDoneUnsafe(resent),
    dials: () => dials
  }
}

const stepUntil = (done: () => boolean, limitMs: number) =>
  Effect.gen(function*() {
    for (let waited = 0; waited < limitMs && !done(); waited += 50) yield* TestClock.adjust(50)
    return done()
  })

describe("a send abandoned on its timeout is written again after its connection drops", () => {
  it.effect("the question reaches the answerer after the connection that swallowed its re-send drops", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const link = dropThenSwallow(world)
      const asker = yield* world.session("asker", {
        client: {
          dial: link.dial,
          sendTimeoutMs: SEND_TIMEOUT,
          reconnectBaseMs: RECONNECT_MS,
          reconnectMaxMs: RECONNECT_MS,
          livenessTimeoutMs: LIVENESS_TIMEOUT_MS
        }
      })
      const answerer = yield* world.session("answerer")
      const ask = yield* Effect.forkChild(asker.session.ask({ to: "answerer", message: "well?", timeoutMs: ASK_TIMEOUT }))
      assert.isTrue(yield* stepUntil(link.dropped, 1_000), "connection 1 did not drop on the question")
      assert.isTrue(yield* stepUntil(link.resent, 4 * RECONNECT_MS), "connection 2 did not write the question again")
      // The joined retry times out, the ask settles; its round trip is swallowed, the probe too: connection 2 is
      // dropped and the settle moves to connection 3. Give all of it ample simulated time (well inside the ask).
      const third = yield* stepUntil(() => link.dials() >= 3, 20_000)
      assert.isTrue(third, "the client never reached a third connection")
      const got = yield* stepUntil(() => Queue.sizeUnsafe(answerer.inbound) > 0, 10_000)
      assert.isUndefined(ask.pollUnsafe(), "the ask ended before the question could reach the answerer")
      assert.isTrue(
        got,
        "the answerer never got the question: the re-send, forgotten when its joined retry timed out, was not kept by " +
          "connection 2's close, so connection 3 never wrote it; the ask waits on as if it were delivered"
      )
    }))

  it.effect("a first write that timed out (no join): the question reaches the answerer after the connection that swallowed it drops", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const link = dropThenSwallow(world, { drops: undefined, swallows: 1 })
      const asker = yield* world.session("asker", {
        client: {
          dial: link.dial,
          sendTimeoutMs: SEND_TIMEOUT,
          reconnectBaseMs: RECONNECT_MS,
          reconnectMaxMs: RECONNECT_MS,
          livenessTimeoutMs: LIVENESS_TIMEOUT_MS
        }
      })
      const answerer = yield* world.session("answerer")
      const ask = yield* Effect.forkChild(asker.session.ask({ to: "answerer", message: "well?", timeoutMs: ASK_TIMEOUT }))
      assert.isTrue(yield* stepUntil(link.resent, 1_000), "connection 1 did not write the question")
      assert.isTrue(yield* stepUntil(() => link.dials() >= 2, 20_000), "the client never reached a second connection")
      const got = yield* stepUntil(() => Queue.sizeUnsafe(answerer.inbound) > 0, 10_000)
      assert.isUndefined(ask.pollUnsafe(), "the ask ended before the question could reach the answerer")
      assert.isTrue(got, "the answerer never got the question: forgotten on its send timeout, it was not kept by the close")
    }))
})
