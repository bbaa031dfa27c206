/**
 * A send lost with its connection on the way (outcome unknown), sent again
 * after the reconnect and refused as not found in the rejoin grace (its
 * target not back yet): whether the grace runs out or `disconnect` ends the
 * wait between tries, the send fails with `ConnectionLost` — what the next
 * broker said does not tell what became of the first attempt (Resending.ts,
 * `sendRejoining`; docs/client.md). A caller told `IntercomNotConnected`
 * might take it as not sent and send it again. An ask whose timeout runs
 * out during those retries ends the same way, or, never lost on the way,
 * on the refusal: not as an ask timed out unwritten, which its session
 * reports as a question asked and left unanswered (sim seed 192).
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Clock, Effect, Exit, type Fiber } from "effect"
import type { Dialer } from "../../src/client/Dialer.ts"
import { ConnectionLost, TargetNotFound } from "../../src/client/errors.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message } from "../support/broker.ts"
import { advance, memoryNetwork, settle, step } from "../support/memory.ts"
import { lostOnTheWayClient } from "./lostOnTheWay.ts"
import { makeMemoryClient, memoryClientOptions } from "./support.ts"

const ID = "dddddddd-0000-4000-8000-0000000000e1"

const completed = <A, E>(fiber: Fiber.Fiber<A, E>): Exit.Exit<A, E> => {
  const exit = fiber.pollUnsafe()
  if (exit === undefined) return assert.fail("still running")
  return exit
}

/**
 * A client whose first connection drops as it writes its send, on a broker where "not-back-yet" never
 * registers; with `askTimeoutMs`, the send is an ask with that timeout from now.
 */
const lostOnTheWay = (askTimeoutMs?: number) => Effect.gen(function*() {
  const { client, request: send } = yield* lostOnTheWayClient(ID, ["drop"])
  const request = askTimeoutMs === undefined
    ? send
    : {
      to: "not-back-yet",
      message: message("question", { expectsReply: true }),
      askTimeoutMs,
      askSince: yield* Clock.currentTimeMillis
    }
  const sending = yield* step(client.send(request))
  yield* advance("1 second")
  assert.strictEqual((yield* client.status).connections, 2, "the client did not reconnect")
  assert.isUndefined(sending.pollUnsafe(), "the send was not retried in the rejoin grace")
  return { client, sending }
})

describe("a send lost on the way, retried in the rejoin grace", () => {
  it.effect("left alone, fails with ConnectionLost once the grace is over", () =>
    Effect.gen(function*() {
      const { sending } = yield* lostOnTheWay()
      yield* advance("15 seconds")
      const sent = completed(sending)
      const error = Exit.isFailure(sent) ? Cause.squash(sent.cause) : undefined
      assert.instanceOf(error, ConnectionLost, `got ${String(error)}`)
    }))

  it.effect("disconnect during its retries fails it with ConnectionLost (outcome unknown)", () =>
    Effect.gen(function*() {
      const { client, sending } = yield* lostOnTheWay()
      yield* settle(client.disconnect)
      const sent = completed(sending)
      const error = Exit.isFailure(sent) ? Cause.squash(sent.cause) : undefined
      assert.instanceOf(error, ConnectionLost, `got ${String(error)}`)
    }))
})

describe("an ask lost on the way, retried in the rejoin grace", () => {
  it.effect("whose timeout runs out during its retries fails with ConnectionLost, not as timed out unwritten", () =>
    Effect.gen(function*() {
      // A 3-second ask: its timeout runs out well within the rejoin grace, its target never back.
      const { sending } = yield* lostOnTheWay(3000)
      yield* advance("3 seconds")
      const sent = completed(sending)
      const error = Exit.isFailure(sent) ? Cause.squash(sent.cause) : undefined
      assert.instanceOf(error, ConnectionLost, `got ${String(error)}`)
    }))
})

describe("an ask refused as not found in the rejoin grace, never lost on the way", () => {
  it.effect("whose timeout runs out during its retries fails with that refusal, not as timed out unwritten", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ idleExit: null })
      let first: Connection | undefined
      const dial: Dialer = (address) =>
        Effect.map(world.dial(address), (connection): Connection => {
          if (first === undefined) first = connection
          return connection
        })
      const { client } = yield* makeMemoryClient(
        memoryClientOptions({ ...world, dial }, ID, "sender", { reconnectBaseMs: 100, reconnectMaxMs: 100 })
      )
      yield* settle(client.connect)
      // The first connection drops with nothing in flight; the client reconnects, and its rejoin grace begins.
      if (first === undefined) return assert.fail("no connection was dialled")
      yield* settle(first.destroy)
      yield* advance("1 second")
      assert.strictEqual((yield* client.status).connections, 2, "the client did not reconnect")
      const askSince = yield* Clock.currentTimeMillis
      const sending = yield* step(client.send({
        to: "not-back-yet",
        message: message("question", { expectsReply: true }),
        askTimeoutMs: 2000,
        askSince
      }))
      yield* advance("1 second")
      assert.isUndefined(sending.pollUnsafe(), "the ask was not retried in the rejoin grace")
      yield* advance("2 seconds")
      const sent = completed(sending)
      const error = Exit.isFailure(sent) ? Cause.squash(sent.cause) : undefined
      assert.instanceOf(error, TargetNotFound, `got ${String(error)}`)
    }))
})
