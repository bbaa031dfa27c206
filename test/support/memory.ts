/**
 * The real broker core (`Broker.make`) on the in-memory network
 * (`makeInMemoryNetwork`), for tests under `it.effect`'s TestClock: wire
 * clients and `IntercomClient`s dial it with no socket and no real timer, so
 * every timeout, idle exit and liveness probe runs on simulated time.
 *
 * Exactness comes from `step`: an action is forked behind a 1 ms sleep and the
 * clock advanced 1 ms, so TestClock runs the action and every fiber it wakes,
 * transitively, until all of them are suspended again (the simulation harness
 * works the same way, docs/testing.md "How time moves"). After a step nothing
 * more happens until the next action or the next timer: a frame that has not
 * arrived will not arrive, so negative checks need no waiting.
 */
import { assert } from "@effect/vitest"
import { Clock, type Duration, Effect, Exit, Scope } from "effect"
import { TestClock } from "effect/testing"
import { Broker, type BrokerCoreOptions, type BrokerService } from "../../src/broker/index.ts"
import type { Dialer } from "../../src/client/Dialer.ts"
import { IntercomNotConnected } from "../../src/client/errors.ts"
import { type InMemoryNetwork, makeInMemoryNetwork } from "../../src/transport/InMemoryNetwork.ts"
import { register, type RegisterOptions, type Session } from "./broker.ts"
import { settle, step, STEP_MS } from "./steps.ts"
import { type ConnectOptions, type WireClient, type WireError, wireOverConnection } from "./wire.ts"

export { settle, step, STEP_MS, StillRunning } from "./steps.ts"

/**
 * Runs a test body under a TestClock that waits up to a minute of real time
 * for the fibers a step woke to suspend. `it.effect`'s TestClock waits one
 * second, then warns and moves on as if the world were idle: a step that
 * carries megabytes through the in-memory world can take longer than that on
 * a loaded machine, and the test then checks a world that is still running.
 */
export const patientClock = <A, E, R>(body: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.provide(body, TestClock.layer({ warningDelay: "1 minute" }))

/** Lets `duration` of simulated time pass: every timer due runs, each until the world is idle. */
export const advance = (duration: Duration.Input): Effect.Effect<void> => TestClock.adjust(duration)

/**
 * Closes `scope` while simulated time passes in 100 ms steps, as a program's
 * shutdown takes real time: an orderly client close may wait up to 2 s for a
 * broker that does not answer, and nothing else would move the clock during a
 * test's teardown. Dies if the close takes more than 10 simulated minutes.
 */
export const closeOnSimulatedTime = (scope: Scope.Closeable): Effect.Effect<void> =>
  Effect.gen(function*() {
    // A step: what the close causes elsewhere (a peer's session_left, say) has run when it returns.
    const closing = yield* step(Scope.close(scope, Exit.void))
    for (let waited = 0; closing.pollUnsafe() === undefined; waited += 100) {
      if (waited >= 600_000) return yield* Effect.die("closing took more than 10 simulated minutes")
      yield* TestClock.adjust(100)
    }
  })

/** The simulated time now. */
export const now: Effect.Effect<number> = Clock.currentTimeMillis

/** Advances the clock to simulated time `at`; every timer due on the way runs. */
export const advanceTo = (at: number): Effect.Effect<void> =>
  Effect.flatMap(now, (current) =>
    at < current ? Effect.die(`cannot advance to ${at}: it is ${current} already`) : TestClock.adjust(at - current))

/** Lets simulated time pass to `at`: the broker must not have exited a millisecond before, and must have at `at`. */
export const exitsAt = (exited: () => boolean, at: number): Effect.Effect<void> =>
  Effect.gen(function*() {
    yield* advanceTo(at - 1)
    assert.isFalse(exited(), "exited before the delay had passed")
    yield* advanceTo(at)
    assert.isTrue(exited(), "did not exit once the delay had passed")
  })

/**
 * Advances the clock so that the next step's action runs at simulated time
 * `at` (a step takes `STEP_MS`). Every timer due before runs on the way.
 */
export const nextStepAt = (at: number): Effect.Effect<void> =>
  Effect.flatMap(now, (current) => {
    const by = at - STEP_MS - current
    return by < 0 ? Effect.die(`the next step cannot run at ${at}: it is ${current} already`) : TestClock.adjust(by)
  })

export interface MemoryNetwork {
  readonly network: InMemoryNetwork
  readonly address: string
  /** A dialer into this network, for `IntercomClient.make({ dial })`. */
  readonly dial: Dialer
  /** Opens a wire client to whatever listens on the address. */
  readonly connect: (label?: string, options?: ConnectOptions) => Effect.Effect<WireClient, never, Scope.Scope>
  /** Connects and registers; fails if the broker does not answer `registered`. */
  readonly session: (options?: RegisterOptions) => Effect.Effect<Session, WireError, Scope.Scope>
  /**
   * Starts a broker core listening on the address, in a Scope of its own:
   * `crash` closes it (every connection drops, all its state is gone), as a
   * killed broker process. It takes its connections as `accept` does (a
   * fiber each), or with `adopted` as it takes a Unix socket's (no fiber,
   * each read by the network's pump: transport/ReadPump.ts).
   */
  /** Starts the broker; `clock`, when given, is its Clock (and only its: a recording one, say). */
  readonly startBroker: (options?: BrokerCoreOptions & { readonly adopted?: boolean; readonly clock?: Clock.Clock }) => Effect.Effect<RunningBroker>
}

export interface RunningBroker {
  readonly core: BrokerService
  readonly crash: Effect.Effect<void>
}

/** An in-memory network with one well-known broker address, in the current Scope. */
export const memoryNetwork = (
  options: { readonly linkCapacity?: number } = {}
): Effect.Effect<MemoryNetwork, never, Scope.Scope> =>
  Effect.gen(function*() {
    const network = yield* makeInMemoryNetwork(options.linkCapacity === undefined ? {} : { capacity: options.linkCapacity })
    const address = "mem://broker"
    const outer = yield* Effect.scope
    const connect = (label = "client", connectOptions: ConnectOptions = {}) =>
      Effect.gen(function*() {
        const connection = yield* settle(network.dial(address), `dialling ${address}`).pipe(Effect.orDie)
        return yield* wireOverConnection(connection, label, (action) => Effect.asVoid(step(action)), connectOptions)
      })
    return {
      network,
      address,
      dial: (target) =>
        network.dial(target).pipe(Effect.mapError((error) => new IntercomNotConnected({ reason: error.message }))),
      connect,
      session: (registerOptions: RegisterOptions = {}) =>
        Effect.gen(function*() {
          const client = yield* connect(registerOptions.label ?? registerOptions.sessionId ?? registerOptions.name, {
            allowHalfOpen: registerOptions.allowHalfOpen ?? false
          })
          const registered = yield* register(client, registerOptions)
          return { client, id: registered.sessionId, registered }
        }),
      startBroker: (
        { adopted = false, clock, ...brokerOptions }: BrokerCoreOptions & { readonly adopted?: boolean; readonly clock?: Clock.Clock } = {}
      ) => {
        const starting = Effect.gen(function*() {
          const scope = yield* Scope.fork(outer)
          const core = yield* Broker.make(brokerOptions).pipe(Scope.provide(scope), Effect.orDie)
          yield* network.listen(address, adopted ? core : core.accept).pipe(Scope.provide(scope), Effect.orDie)
          return { core, crash: settle(Scope.close(scope, Exit.void), "the broker's crash").pipe(Effect.orDie) }
        })
        return clock === undefined ? starting : Effect.provideService(starting, Clock.Clock, clock)
      }
    }
  })

export interface MemoryBroker extends MemoryNetwork {
  readonly broker: BrokerService
}

export interface MemoryBrokerOptions extends BrokerCoreOptions {
  /** Frames each direction of a connection buffers (the kernel socket buffer). Default 256. */
  readonly linkCapacity?: number
  /** The broker's Clock, when given (and only the broker's: a recording one, say). */
  readonly brokerClock?: Clock.Clock
}

/** A network with the broker core listening on it, in the current Scope. */
export const withMemoryBroker = (
  options: MemoryBrokerOptions = {}
): Effect.Effect<MemoryBroker, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { linkCapacity, brokerClock, ...core } = options
    const world = yield* memoryNetwork(linkCapacity === undefined ? {} : { linkCapacity })
    const { core: broker } = yield* world.startBroker(brokerClock === undefined ? core : { ...core, clock: brokerClock })
    return { ...world, broker }
  })
