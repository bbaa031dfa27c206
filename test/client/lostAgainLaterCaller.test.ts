/**
 * A caller that comes to a send lost on the way only after a SECOND connection loss reads its verdict as one after
 * the loss (Resending.ts `lostOnTheWay`, review revbo BO1): the record is the client's, not the connection's.
 *
 * The first caller's send is lost as connection 1 writes it; connection 2 writes it again ("not found": the
 * target is not back), and drops while the first caller waits between tries, so the send is not unanswered there
 * and connection 3 does not write it again. A second caller of the same message comes on connection 3: its
 * first write (connection 1's) may have been delivered, so once the grace is over it should fail ConnectionLost,
 * as the first caller does, not TargetNotFound.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, type Fiber } from "effect"
import type { Dialer } from "../../src/client/Dialer.ts"
import { ConnectionLost } from "../../src/client/errors.ts"
import { frameText } from "../../src/protocol/framing.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message } from "../support/broker.ts"
import { advance, memoryNetwork, settle, step } from "../support/memory.ts"
import { makeMemoryClient, memoryClientOptions } from "./support.ts"

const ID = "dddddddd-0000-4000-8000-0000000000f7"

const failureOf = <A, E>(fiber: Fiber.Fiber<A, E>): unknown => {
  const exit = fiber.pollUnsafe()
  if (exit === undefined) return assert.fail("still running")
  return Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
}

describe("a later caller of a send lost on the way, come after a second loss", () => {
  it.effect("fails with ConnectionLost once the rejoin grace is over, as the first caller does", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ idleExit: null })
      const opened: Array<Connection> = []
      const dial: Dialer = (address) =>
        Effect.map(world.dial(address), (connection): Connection => {
          opened.push(connection)
          if (opened.length !== 1) return connection
          const dropOnSend: Connection["write"] = (frames) =>
            frames.some((frame) => frameText(frame).startsWith(`{"type":"send"`))
              ? Effect.andThen(connection.destroy, Effect.void)
              : connection.write(frames)
          return { ...connection, write: dropOnSend, writeAll: (frames) => dropOnSend(frames) ?? Effect.void }
        })
      const { client } = yield* makeMemoryClient(
        memoryClientOptions({ ...world, dial }, ID, "sender", { reconnectBaseMs: 100, reconnectMaxMs: 100 })
      )
      yield* settle(client.connect)
      const request = { to: "not-back-yet", message: message("x") }
      const first = yield* step(client.send(request))
      yield* advance("1 second")
      assert.strictEqual((yield* client.status).connections, 2, "setup: the client did not reconnect")
      assert.isUndefined(first.pollUnsafe(), "setup: the send was not retried in the rejoin grace")
      // Connection 2 drops while the first caller waits between tries (its re-send was answered "not found").
      yield* settle(opened[1]!.destroy)
      yield* advance("1 second")
      assert.strictEqual((yield* client.status).connections, 3, "setup: the client did not reconnect again")
      assert.isUndefined(first.pollUnsafe(), "setup: the first caller ended early")
      const second = yield* step(client.send(request))
      yield* advance("15 seconds")
      assert.instanceOf(failureOf(first), ConnectionLost, "setup: the first caller")
      const error = failureOf(second)
      assert.instanceOf(error, ConnectionLost, `the second caller got ${String(error)}`)
    }))
})
