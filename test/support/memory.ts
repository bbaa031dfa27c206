/**
 * A broker, clients and sessions on the in-memory network: no socket and no
 * real timer, so TestClock drives every wait (ask timeouts, liveness, idle
 * exit) and a test can move time by hours in microseconds.
 */
import { Effect, Queue, References, type Scope } from "effect"
import { Broker, type BrokerService } from "../../src/broker/Broker.ts"
import type { BrokerCoreOptions } from "../../src/broker/options.ts"
import { IntercomClient, type IntercomClientOptions, type IntercomClientService } from "../../src/client/IntercomClient.ts"
import { headless, Host, type Inbound } from "../../src/session/Host.ts"
import {
  IntercomSession,
  type IntercomSessionOptions,
  type IntercomSessionService,
  sessionRegistration
} from "../../src/session/IntercomSession.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import {
  type InMemoryNetwork,
  type InMemoryNetworkOptions,
  makeInMemoryNetwork
} from "../../src/transport/InMemoryNetwork.ts"

export const MEMORY_ADDRESS = "mem://broker"

export interface MemoryWorld {
  readonly network: InMemoryNetwork
  readonly broker: BrokerService
  /** A client of this world's broker (launch: false), built in the current Scope. */
  readonly client: (
    sessionId: string,
    options?: Partial<IntercomClientOptions> & { readonly name?: string }
  ) => Effect.Effect<IntercomClientService, never, Scope.Scope>
  /** A client plus a headless session whose host records what it is handed. */
  readonly session: (
    sessionId: string,
    options?: {
      readonly name?: string
      readonly client?: Partial<IntercomClientOptions>
      readonly session?: IntercomSessionOptions
    }
  ) => Effect.Effect<MemorySession, never, Scope.Scope>
  /** A raw connection to the broker (the test speaks the wire protocol itself). */
  readonly dial: Effect.Effect<Connection, never, Scope.Scope>
}

export interface MemorySession {
  readonly client: IntercomClientService
  readonly session: IntercomSessionService
  /** Messages the session handed its host, in order. */
  readonly inbound: Queue.Queue<Inbound>
}

/**
 * Starts a broker listening on the in-memory network, in the current Scope.
 * `network.capacity` is the frames each direction of a connection buffers
 * (the kernel socket buffer's part).
 */
export const memoryWorld = (
  options: BrokerCoreOptions = {},
  network_: InMemoryNetworkOptions = {}
): Effect.Effect<MemoryWorld, never, Scope.Scope> =>
  Effect.gen(function*() {
    const network = yield* makeInMemoryNetwork(network_)
    // Its joins and leaves are not worth a log line each here (thousands in the scale tests).
    const broker = yield* Broker.make({ idleExit: null, ...options }).pipe(
      Effect.provideService(References.MinimumLogLevel, "Warn")
    )
    yield* network.listen(MEMORY_ADDRESS, broker.accept).pipe(Effect.orDie)

    const client: MemoryWorld["client"] = (sessionId, options = {}) =>
      IntercomClient.make({
        agentDir: "/mem",
        intercomDir: "/mem/intercom",
        socketPath: MEMORY_ADDRESS,
        sessionId,
        registration: sessionRegistration({
          sessionId,
          identity: { name: options.name ?? sessionId, cwd: "/work", model: "test-model" },
          pid: 1,
          startedAt: 0
        }),
        launch: false,
        dial: (address) => network.dial(address).pipe(Effect.orDie),
        ...options
      })

    const session: MemoryWorld["session"] = (sessionId, options = {}) =>
      Effect.gen(function*() {
        const service = yield* client(sessionId, { ...options.client, ...(options.name === undefined ? {} : { name: options.name }) })
        const inbound = yield* Queue.unbounded<Inbound>()
        const host = headless(
          { name: options.name ?? sessionId, cwd: "/work", model: "test-model" },
          (message) => Effect.asVoid(Queue.offer(inbound, message))
        )
        const runtime = yield* IntercomSession.make(options.session).pipe(
          Effect.provideService(IntercomClient, service),
          Effect.provideService(Host, host)
        )
        yield* service.connect.pipe(Effect.orDie)
        return { client: service, session: runtime, inbound }
      })

    return {
      network,
      broker,
      client,
      session,
      dial: network.dial(MEMORY_ADDRESS).pipe(Effect.orDie)
    }
  })
