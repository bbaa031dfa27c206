/**
 * Full clients and sessions (`IntercomClient`, `IntercomSession` with a
 * headless host) on the in-memory broker of ./memory.ts, for tests that drive
 * a scenario through the public APIs under TestClock.
 */
import { type Clock, Effect, Queue, References, Scope } from "effect"
import type { BrokerCoreOptions, BrokerService } from "../../src/broker/index.ts"
import { IntercomClient, type IntercomClientService } from "../../src/client/IntercomClient.ts"
import type { IntercomClientOptions } from "../../src/client/options.ts"
import { headless, Host, type Inbound } from "../../src/session/Host.ts"
import {
  IntercomSession,
  type IntercomSessionOptions,
  type IntercomSessionService,
  sessionRegistration
} from "../../src/session/IntercomSession.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { closeOnSimulatedTime, memoryNetwork } from "./memory.ts"

export interface MemoryWorld {
  readonly broker: BrokerService
  /** A client of this world's broker (launch: false), built in the current Scope. */
  readonly client: (
    sessionId: string,
    options?: Partial<IntercomClientOptions> & { readonly name?: string }
  ) => Effect.Effect<IntercomClientService, never, Scope.Scope>
  /** A connected client plus a headless session whose host queues what it is handed. */
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
 * A broker on the in-memory network and builders for its clients, in the
 * current Scope. `linkCapacity` is the frames each direction of a connection
 * buffers (the kernel socket buffer's part); `brokerClock`, when given, is
 * the broker's Clock (and only the broker's: a recording one, say). The broker logs warnings only:
 * a join or leave is not worth a line each in the scale tests.
 */
export const memoryWorld = (
  options: BrokerCoreOptions = {},
  link: { readonly linkCapacity?: number; readonly brokerClock?: Clock.Clock } = {}
): Effect.Effect<MemoryWorld, never, Scope.Scope> =>
  Effect.gen(function*() {
    const world = yield* memoryNetwork(link.linkCapacity === undefined ? {} : { linkCapacity: link.linkCapacity })
    const { core: broker } = yield* world.startBroker({
      idleExit: null,
      ...options,
      ...(link.brokerClock === undefined ? {} : { clock: link.brokerClock })
    }).pipe(Effect.provideService(References.MinimumLogLevel, "Warn"))

    // Each client in a Scope closed on simulated time: an orderly close may wait on the clock.
    const client: MemoryWorld["client"] = (sessionId, clientOptions = {}) =>
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        yield* Effect.addFinalizer(() => closeOnSimulatedTime(scope))
        return yield* IntercomClient.make({
        agentDir: "/mem",
        intercomDir: "/mem/intercom",
        socketPath: world.address,
        sessionId,
        registration: sessionRegistration({
          sessionId,
          identity: { name: clientOptions.name ?? sessionId, cwd: "/work", model: "test-model" },
          pid: 1,
          startedAt: 0
        }),
        launch: false,
        dial: world.dial,
        ...clientOptions
      }).pipe(Effect.orDie, Scope.provide(scope)) // options a test cannot use are a defect of the test
      })

    const session: MemoryWorld["session"] = (sessionId, sessionOptions = {}) =>
      Effect.gen(function*() {
        const name = sessionOptions.name ?? sessionId
        const service = yield* client(sessionId, { ...sessionOptions.client, name })
        const inbound = yield* Queue.unbounded<Inbound>()
        const host = headless({ name, cwd: "/work", model: "test-model" }, (message) =>
          Effect.asVoid(Queue.offer(inbound, message)))
        const runtime = yield* IntercomSession.make(sessionOptions.session).pipe(
          Effect.provideService(IntercomClient, service),
          Effect.provideService(Host, host)
        )
        yield* service.connect.pipe(Effect.orDie)
        return { client: service, session: runtime, inbound }
      })

    return {
      broker,
      client,
      session,
      dial: world.network.dial(world.address).pipe(Effect.orDie)
    }
  })
