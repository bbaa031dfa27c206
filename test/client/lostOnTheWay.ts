/**
 * The world of the client's "lost on the way" tests: an in-memory broker and one client whose connections
 * each do what the test says with a write that holds a `send` frame — take it and never pass it on (the
 * client cannot tell it from one delivered whose answer was lost), drop the connection as it writes it, or
 * hold it until the test lets it go; and, for the record of those sends alone, a `Resending` with no connection.
 * Owns nothing past the test's Scope.
 */
import { assert } from "@effect/vitest"
import { Cause, Deferred, type Duration, Effect, Exit, type Fiber } from "effect"
import type { Dialer } from "../../src/client/Dialer.ts"
import { IntercomNotConnected, RequestTimeout } from "../../src/client/errors.ts"
import type { IntercomClientService } from "../../src/client/IntercomClient.ts"
import type { IntercomClientOptions } from "../../src/client/options.ts"
import type { SendRequest } from "../../src/client/requests.ts"
import { Resending } from "../../src/client/Resending.ts"
import { StateEpochs } from "../../src/client/StateEpochs.ts"
import { frameText } from "../../src/protocol/framing.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message } from "../support/broker.ts"
import { advance, memoryNetwork, settle, step } from "../support/memory.ts"
import { makeMemoryClient, memoryClientOptions } from "./support.ts"

/** The failure `fiber` ended with, squashed (`undefined` if it succeeded); it must have ended. */
export const failureOf = <A, E>(fiber: Fiber.Fiber<A, E>): unknown => {
  const exit = fiber.pollUnsafe()
  if (exit === undefined) return assert.fail("still running")
  return Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
}

/** Whether a transport write holds a `send` frame. */
export const isSendWrite = (frames: ReadonlyArray<Parameters<typeof frameText>[0]>): boolean =>
  frames.some((frame) => frameText(frame).startsWith(`{"type":"send"`))

/** What one connection does with a write that holds a `send` frame; every other write passes. */
export type SendWrites =
  /** Taken and never passed on: the broker never reads it, nothing answers it. */
  | "swallow"
  /** The connection is destroyed as it writes it: the broker never reads it. */
  | "drop"
  /** Held until `holdUntil` completes, then written. */
  | { readonly holdUntil: Deferred.Deferred<void> }

const withSendWrites = (connection: Connection, sends: SendWrites): Connection => {
  const write: Connection["write"] = sends === "swallow"
    ? (frames) => isSendWrite(frames) ? Effect.void : connection.write(frames)
    : sends === "drop"
    ? (frames) => isSendWrite(frames) ? Effect.andThen(connection.destroy, Effect.void) : connection.write(frames)
    : (frames) =>
      isSendWrite(frames)
        ? Effect.andThen(Deferred.await(sends.holdUntil), Effect.suspend(() => connection.write(frames) ?? Effect.void))
        : connection.write(frames)
  return { ...connection, write, writeAll: (frames) => write(frames) ?? Effect.void }
}

/**
 * An in-memory broker (no idle exit) and a connected client "sender" of `sessionId` that reconnects after
 * 100 ms; its n-th connection treats sends as `connections[n - 1]` says, and every connection past that list
 * passes them. `extra` adds client options (a `sendTimeoutMs`, say). Answers the client, the connections it
 * opened so far (oldest first, kept up to date) and a send to "not-back-yet", a name that never registers.
 */
export const lostOnTheWayClient = (
  sessionId: string,
  connections: ReadonlyArray<SendWrites>,
  extra: Partial<IntercomClientOptions> = {}
) =>
  Effect.gen(function*() {
    const world = yield* memoryNetwork()
    yield* world.startBroker({ idleExit: null })
    const opened: Array<Connection> = []
    const dial: Dialer = (address) =>
      Effect.map(world.dial(address), (connection): Connection => {
        opened.push(connection)
        const sends = connections[opened.length - 1]
        return sends === undefined ? connection : withSendWrites(connection, sends)
      })
    const { client } = yield* makeMemoryClient(
      memoryClientOptions({ ...world, dial }, sessionId, "sender", { reconnectBaseMs: 100, reconnectMaxMs: 100, ...extra })
    )
    yield* settle(client.connect)
    const request: SendRequest = { to: "not-back-yet", message: message("x") }
    return { client, opened, request }
  })

const unused = new IntercomNotConnected({ reason: "no connection in this test" })

/**
 * A client's `Resending` with no connection behind it (every write fails, the client counts as ended, never
 * rejoining; a 1 s send timeout): for the plain synchronous record of sends lost on the way, whose side is never used.
 */
export const unconnectedResending = (): Resending =>
  new Resending({
    withConnection: () => Effect.fail(unused),
    retirementOf: () => undefined,
    ended: () => true,
    whenStopped: Effect.void,
    rejoining: () => false
  }, new StateEpochs(), 1_000)

/**
 * A caller's send of `request` written on `connection`, which swallows it: the caller times out (asserted, 2 s
 * on, as `who`), then `connection` drops and `after` passes (the client's reconnect). Needs a `sendTimeoutMs`
 * under 2 s.
 */
export const timedOutThenDropped = (
  client: IntercomClientService,
  connection: Connection,
  request: SendRequest,
  who: string,
  after: Duration.Input
) =>
  Effect.gen(function*() {
    const caller = yield* step(client.send(request))
    yield* advance("2 seconds")
    assert.instanceOf(failureOf(caller), RequestTimeout, `setup: the ${who} did not time out`)
    yield* settle(connection.destroy)
    yield* advance(after)
  })
