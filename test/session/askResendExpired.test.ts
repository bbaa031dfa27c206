/**
 * An ask whose first write was lost with its connection, and whose whole
 * timeout (counted from that first send, `SendRequest.askSince`) ran out
 * before the reconnect could write it again: the client does not write it
 * again (requests.ts `sendFrameText`, PendingSends `retake` skips it), so
 * no answerer is handed a question nobody waits for, and the asker's ask
 * ends in `ReplyTimeout` (Ask.ts `timedOutUnwritten`). Full sessions on the
 * in-memory broker under TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Option, Queue, type Scope } from "effect"
import { TestClock } from "effect/testing"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import { ReplyTimeout } from "../../src/session/errors.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { memoryWorld } from "../support/memoryWorld.ts"

/** A dialer whose live connection the test can `cut`, and whose `send` frames it can lose unread (`loseSends`). */
const lossyDialer = (world: { readonly dial: Effect.Effect<Connection, never, Scope.Scope> }) => {
  let cutLive: Effect.Effect<void> = Effect.void
  let losing = false
  const sendLost = Deferred.makeUnsafe<void>()
  const writes: Array<string> = []
  const kept = (frames: ReadonlyArray<OutFrame>): ReadonlyArray<OutFrame> => {
    for (const frame of frames) writes.push(frameText(frame))
    if (!losing) return frames
    const left = frames.filter((frame) => !frameText(frame).startsWith(`{"type":"send"`))
    if (left.length < frames.length) Deferred.doneUnsafe(sendLost, Exit.void)
    return left
  }
  const dial = (_socketPath: string) =>
    Effect.map(world.dial, (connection): Connection => {
      losing = false
      cutLive = connection.destroy
      return {
        id: connection.id,
        trustedLocal: connection.trustedLocal,
        read: connection.read,
        writeAll: (frames) => connection.writeAll(kept(frames)),
        write: (frames) => connection.write(kept(frames)),
        unfinishedWrite: () => connection.unfinishedWrite(),
        readProgress: () => connection.readProgress(),
        readPending: () => connection.readPending(),
        end: connection.end,
        destroy: connection.destroy
      }
    })
  return {
    dial,
    writes,
    cut: Effect.suspend(() => cutLive),
    loseSends: Effect.sync(() => {
      losing = true
    }),
    sendLost: Deferred.await(sendLost)
  }
}

describe("an ask whose timeout ran out before a reconnect could write it again", () => {
  it.effect("is not written again nor handed to the answerer; the asker gets ReplyTimeout", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const lossy = lossyDialer(world)
      const asker = yield* world.session("asker", { client: { dial: lossy.dial } })
      const answerer = yield* world.session("answerer")
      yield* lossy.loseSends
      // 500 ms: shorter than the client's first reconnect back-off (1 s).
      const asking = yield* Effect.forkChild(asker.session.ask({ to: "answerer", message: "well?", timeoutMs: 500 }))
      yield* lossy.sendLost
      yield* lossy.cut
      // The reconnect (after a second) writes the question again, its timeout long gone.
      yield* TestClock.adjust("1 second")
      yield* TestClock.adjust("100 millis")
      const exit = asking.pollUnsafe()
      const error = exit !== undefined && Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
      assert.instanceOf(error, ReplyTimeout, "the asker did not get ReplyTimeout within 100 ms of the reconnect")
      const rewritten = lossy.writes.filter((w) => w.startsWith(`{"type":"send"`)).map((w) => JSON.parse(w).askTimeoutMs)
      assert.strictEqual(rewritten.length, 1, `the question was written again (askTimeoutMs per write: ${JSON.stringify(rewritten)})`)
      // A round trip on the asker's connection, then on the answerer's: a question written would be handed on by now.
      yield* asker.client.list
      yield* answerer.client.list
      const handed = yield* Queue.poll(answerer.inbound)
      assert.isTrue(
        Option.isNone(handed),
        `the answerer was handed a question whose ask had timed out (askTimeoutMs per write: ${JSON.stringify(rewritten)})`
      )
    }))
})
