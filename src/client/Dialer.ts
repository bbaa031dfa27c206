/**
 * How a client reaches its broker: a `Dialer` opens a transport connection in
 * the current Scope. The Unix socket by default; an in-memory network for
 * tests and simulations.
 */
import { Effect, type Scope } from "effect"
import type { Connection } from "../transport/Connection.ts"
import type { InMemoryNetwork } from "../transport/InMemoryNetwork.ts"
import { dialUnix } from "../transport/UnixSocket.ts"
import { IntercomNotConnected } from "./errors.ts"

/** Opens a transport connection to the broker, living in the current Scope. */
export type Dialer = (socketPath: string) => Effect.Effect<Connection, IntercomNotConnected, Scope.Scope>

/** The default `Dialer`: `dialUnix`, with a dial failure as `IntercomNotConnected`. */
export const dialUnixSocket: Dialer = (socketPath) =>
  dialUnix(socketPath).pipe(Effect.mapError((error) => new IntercomNotConnected({ reason: error.message })))

/**
 * A `Dialer` into an in-memory network (`makeInMemoryNetwork`), for running
 * clients against `Broker.make` in one process — tests and simulations.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Broker } from "effect-intercom/broker"
 * import { dialInMemory, IntercomClient } from "effect-intercom/client"
 * import { makeInMemoryNetwork } from "effect-intercom/transport"
 *
 * const program = Effect.gen(function*() {
 *   const network = yield* makeInMemoryNetwork()
 *   const broker = yield* Broker.make({ idleExit: null })
 *   yield* network.listen("mem://broker", broker.accept)
 *   const client = yield* IntercomClient.make({
 *     agentDir: "/mem", intercomDir: "/mem/intercom", socketPath: "mem://broker",
 *     sessionId: "a", launch: false, dial: dialInMemory(network),
 *     registration: { cwd: "/work", model: "m", pid: 1, startedAt: 0, lastActivity: 0 }
 *   })
 *   return yield* client.list
 * })
 * ```
 */
export const dialInMemory = (network: InMemoryNetwork): Dialer => (address) =>
  network.dial(address).pipe(Effect.mapError((error) => new IntercomNotConnected({ reason: error.message })))

