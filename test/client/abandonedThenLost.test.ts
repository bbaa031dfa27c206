/**
 * A retry of a send whose first caller timed out, and whose connection was then lost, reads its verdict as one
 * after the loss (Resending.ts `lostOnTheWay` records abandoned sends too, review revbo BO2).
 *
 * Connection 1 takes the send's frame and never answers it (the broker's answer is lost with it, say); the first
 * caller times out (outcome unknown) and the connection drops with the send unanswered. It is abandoned, so the
 * next connection does not write it again (ConnectionLifetime.ts), but the client records it as lost on the
 * way. The caller retries the same message there ("not found": not back yet): once the grace is over, the first write may still have been delivered by a broker that forgot it, so the retry should
 * end ConnectionLost (outcome unknown), not TargetNotFound (never delivered).
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, type Fiber } from "effect"
import type { Dialer } from "../../src/client/Dialer.ts"
import { ConnectionLost, RequestTimeout } from "../../src/client/errors.ts"
import { frameText } from "../../src/protocol/framing.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message } from "../support/broker.ts"
import { advance, memoryNetwork, settle, step } from "../support/memory.ts"
import { makeMemoryClient, memoryClientOptions } from "./support.ts"

const ID = "dddddddd-0000-4000-8000-0000000000f8"

const failureOf = <A, E>(fiber: Fiber.Fiber<A, E>): unknown => {
  const exit = fiber.pollUnsafe()
  if (exit === undefined) return assert.fail("still running")
  return Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
}

describe("a retry of a send timed out, then lost with its connection", () => {
  it.effect("fails with ConnectionLost once the rejoin grace is over", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ idleExit: null })
      const opened: Array<Connection> = []
      const dial: Dialer = (address) =>
        Effect.map(world.dial(address), (connection): Connection => {
          opened.push(connection)
          if (opened.length !== 1) return connection
          // The send's frame goes nowhere: the client cannot tell it from one delivered whose answer was lost.
          const swallowSend: Connection["write"] = (frames) =>
            frames.some((frame) => frameText(frame).startsWith(`{"type":"send"`)) ? Effect.void : connection.write(frames)
          return { ...connection, write: swallowSend, writeAll: (frames) => swallowSend(frames) ?? Effect.void }
        })
      const { client } = yield* makeMemoryClient(
        memoryClientOptions({ ...world, dial }, ID, "sender", { reconnectBaseMs: 100, reconnectMaxMs: 100, sendTimeoutMs: 1000 })
      )
      yield* settle(client.connect)
      const request = { to: "not-back-yet", message: message("x") }
      const first = yield* step(client.send(request))
      yield* advance("2 seconds")
      assert.instanceOf(failureOf(first), RequestTimeout, "setup: the first caller did not time out")
      yield* settle(opened[0]!.destroy)
      yield* advance("1 second")
      assert.strictEqual((yield* client.status).connections, 2, "setup: the client did not reconnect")
      const retry = yield* step(client.send(request))
      yield* advance("15 seconds")
      const error = failureOf(retry)
      assert.instanceOf(error, ConnectionLost, `the retry got ${String(error)}`)
    }))
})
