/**
 * A caller's retry of a send lost on the way, written within the replay window of the lost write and answered
 * just after it, ends ConnectionLost ("maybe delivered") as the same write read as a late answer would: the record
 * is asked as the write is entered, as the connection's `begin` marks it, not when the answer is read (review
 * revbr BR2: an answer read past the window found the entry expired and the "not found" stood as TargetNotFound).
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Clock, Deferred, Effect, Exit, type Fiber } from "effect"
import type { Dialer } from "../../src/client/Dialer.ts"
import { ConnectionLost, RequestTimeout } from "../../src/client/errors.ts"
import { frameText } from "../../src/protocol/framing.ts"
import { REPLAY_WINDOW_MS } from "../../src/protocol/constants.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message } from "../support/broker.ts"
import { advance, memoryNetwork, settle, step } from "../support/memory.ts"
import { makeMemoryClient, memoryClientOptions } from "./support.ts"

const ID = "dddddddd-0000-4000-8000-0000000000b2"

const failureOf = <A, E>(fiber: Fiber.Fiber<A, E>): unknown => {
  const exit = fiber.pollUnsafe()
  if (exit === undefined) return assert.fail("still running")
  return Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
}

const isSend = (frames: ReadonlyArray<Parameters<typeof frameText>[0]>) =>
  frames.some((frame) => frameText(frame).startsWith(`{"type":"send"`))

describe("a retry written in the window, answered just after it", () => {
  it.effect("ends ConnectionLost, as its write was after the loss", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ idleExit: null })
      const opened: Array<Connection> = []
      const gate = yield* Deferred.make<void>()
      const dial: Dialer = (address) =>
        Effect.map(world.dial(address), (connection): Connection => {
          opened.push(connection)
          // Connection 1 swallows sends (delivered or not, the client cannot tell); connection 2 holds them until the test lets them go.
          const write: Connection["write"] = opened.length === 1
            ? (frames) => isSend(frames) ? Effect.void : connection.write(frames)
            : (frames) => isSend(frames) ? Effect.andThen(Deferred.await(gate), Effect.suspend(() => connection.write(frames) ?? Effect.void)) : connection.write(frames)
          return { ...connection, write, writeAll: (frames) => write(frames) ?? Effect.void }
        })
      const { client } = yield* makeMemoryClient(
        memoryClientOptions({ ...world, dial }, ID, "sender", { reconnectBaseMs: 100, reconnectMaxMs: 100, sendTimeoutMs: 1000 })
      )
      yield* settle(client.connect)
      const request = { to: "not-back-yet", message: message("x") }
      const t0 = yield* Clock.currentTimeMillis
      const first = yield* step(client.send(request))
      yield* advance("2 seconds")
      assert.instanceOf(failureOf(first), RequestTimeout, "setup: the first caller did not time out")
      yield* settle(opened[0]!.destroy)
      yield* advance("1 second")
      assert.strictEqual((yield* client.status).connections, 2, "setup: the client did not reconnect")
      const now = yield* Clock.currentTimeMillis
      yield* advance(`${Math.round(t0 + REPLAY_WINDOW_MS - 200 - now)} millis`)
      // Written 200 ms before the window's end (entered, `begin`), its frame reaches the broker 300 ms after it.
      const retry = yield* step(client.send(request))
      yield* advance("500 millis")
      yield* Deferred.succeed(gate, undefined)
      for (let i = 0; i < 15; i++) yield* advance("1 second")
      const error = failureOf(retry)
      assert.instanceOf(error, ConnectionLost, `the retry got ${String(error)}`)
    }))
})
