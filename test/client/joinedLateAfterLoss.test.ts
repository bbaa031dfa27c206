/**
 * A caller that comes to a send lost with a connection only after the client wrote it again on the next one.
 *
 * The first caller's send is lost as its connection writes it; the client writes it again first thing on the
 * next connection, where its target is not back yet ("not found", the rejoin grace). A second caller of the
 * same message (same id and payload) comes only then: it never saw the loss itself, but it joins that re-send
 * or writes the message again after it, and every answer it reads there speaks for a write after the loss, not
 * for the first one, which an earlier broker may have delivered. So once the grace is over it fails with
 * `ConnectionLost` (outcome unknown), as the first caller does — not with the "not found", which says the
 * message never arrived (Resending.ts `sendRejoining`, PendingSends.ts `writtenAfterLoss`; docs/client.md).
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

const ID = "dddddddd-0000-4000-8000-0000000000e2"

/** The failure `fiber` ended with (it must have ended). */
const failureOf = <A, E>(fiber: Fiber.Fiber<A, E>): unknown => {
  const exit = fiber.pollUnsafe()
  if (exit === undefined) return assert.fail("still running")
  return Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
}

describe("a second caller of a send lost on the way, come after the re-send", () => {
  it.effect("fails with ConnectionLost once the rejoin grace is over, as the first caller does", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ idleExit: null })
      let dialed = 0
      // The first connection drops as it writes the send: the broker never reads it, the client cannot know.
      const dial: Dialer = (address) =>
        Effect.map(world.dial(address), (connection): Connection => {
          if (++dialed !== 1) return connection
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
      const second = yield* step(client.send(request))
      yield* advance("15 seconds")
      assert.instanceOf(failureOf(first), ConnectionLost, "setup: the first caller")
      const error = failureOf(second)
      assert.instanceOf(error, ConnectionLost, `the second caller got ${String(error)}`)
    }))
})
