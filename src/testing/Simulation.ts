/**
 * `Simulation`: a whole intercom world in one process — the real broker core,
 * real clients and real session runtimes, joined by the in-memory network,
 * with simulated agents as hosts — driven entirely by TestClock and one seed.
 *
 * The driver (a scenario, or the random workload) is the only fiber that
 * moves time. Each action it takes is a *step*: the action is forked behind a
 * 1 ms sleep and the clock advanced by 1 ms, so TestClock runs it (and
 * everything it wakes) until the world is idle again — the same order on
 * every run. Actions that wait (an ask, a reconnect) keep running as time
 * moves on; the step returns a `Pending` handle.
 *
 * Every owner of fibers (broker incarnation, client, session generation) runs
 * under a `FiberOwner` label, so closing it can be checked to leave nothing
 * running. The `Ledger` watches every frame and host hand-off and checks the
 * invariants (docs/testing.md).
 *
 * This module is the world's face: the service, its layer, and the assembly
 * of a world from the modules of `simulation/` — the world's parts
 * (world.ts), time and steps (steps.ts), the broker process (broker.ts),
 * session lifecycles (sessions.ts), session handles (handles.ts) and the end
 * of a run (finish.ts).
 */
import { Context, Duration, Effect, Exit, FiberSet, Layer, type Scope } from "effect"
import { TestClock } from "effect/testing"
import { type FiberWatch, makeFiberWatch } from "./FiberWatch.ts"
import { crashBroker, startBroker } from "./simulation/broker.ts"
import { type LogSink, simulationEnvironment } from "./simulation/environment.ts"
import { closeWorld, finish } from "./simulation/finish.ts"
import { handleOf } from "./simulation/handles.ts"
import { ownConnection } from "./simulation/heldReturn.ts"
import { hostileHandle, makeHostileStates, startHostile } from "./simulation/hostile.ts"
import { authorizeChild, makeSessionStates, startSession } from "./simulation/sessions.ts"
import { storm } from "./simulation/pressure.ts"
import { advance, idleChecks, pending, step, worldStep } from "./simulation/steps.ts"
import type { SimulationConfig, SimulationService } from "./simulation/types.ts"
import { makeWorld } from "./simulation/world.ts"

/** The simulation's vocabulary: configuration, handles, the report (simulation/types.ts). */
export type * from "./simulation/types.ts"
export { SIM_ADDRESS } from "./simulation/world.ts"
export { HOSTILE_ATTACKS, HostileAttack, type SimHostile } from "./simulation/hostile.ts"
export { defaultHostJournal, type SimHostJournal } from "./simulation/journal.ts"
export { defaultHostRefusals, type SimHostRefusals } from "./simulation/refusals.ts"
export {
  defaultClientTimingRanges,
  drawClientTimings,
  type SimClientTimingRanges,
  type SimProcessTimings,
  timingStream
} from "./simulation/timings.ts"

/**
 * The simulated world as a service. Build it with `Simulation.layer(config)`
 * (or let `runSimulation` do it), drive it from a script, and end it with
 * `finish`.
 *
 * @example
 * import { Effect, Exit } from "effect"
 * import { runSimulation, Simulation } from "effect-intercom/testing"
 *
 * // The planner asks; the reviewer (scripted: it answers only when told) replies 2 s later.
 * const report = await Effect.runPromise(runSimulation(
 *   { seed: 1, sessions: ["planner", { name: "reviewer", agent: { mode: "manual" } }] },
 *   Effect.gen(function*() {
 *     const sim = yield* Simulation
 *     const question = yield* sim.session("planner").ask("reviewer", "Retry POST too?")
 *     yield* sim.advance("2 seconds")
 *     yield* sim.session("reviewer").reply("Only GET/PUT/DELETE.")
 *     if (question === undefined) return // only when the planner is stopped
 *     const answer = yield* question.result()
 *     if (Exit.isFailure(answer)) yield* Effect.die("the reviewer's reply did not arrive")
 *   })
 * ))
 * if (!report.ok) console.log(report.trace.join("\n")) // which invariant broke, and when
 */
export class Simulation extends Context.Service<Simulation, SimulationService>()("effect-intercom/testing/Simulation") {
  /**
   * The world for `config`, with its own TestClock, seeded `Random`, fiber
   * watch and a logger that writes warnings to the trace. Everything that
   * uses the layer runs under that clock.
   */
  static readonly layer = (config: SimulationConfig): Layer.Layer<Simulation | TestClock.TestClock> =>
    Layer.unwrap(Effect.sync(() => {
      const watch = makeFiberWatch()
      const logSink: LogSink = { note: undefined }
      return Layer.effect(Simulation, makeSimulation(config, watch, logSink)).pipe(
        Layer.provideMerge(simulationEnvironment(config.seed, watch, logSink))
      )
    }))
}

const makeSimulation = (
  config: SimulationConfig,
  watch: FiberWatch,
  logSink: LogSink
): Effect.Effect<SimulationService, never, Scope.Scope> =>
  Effect.gen(function*() {
    const world = yield* makeWorld(config, watch, logSink)
    const { ledger, seed } = world
    // Added after the world's Scope, so it runs first: a run that ends before `finish` (its script
    // failed, died or was interrupted, or the world failed to start) closes the world here, with the
    // clock moving, and the run ends with the script's own error.
    yield* Effect.addFinalizer(() => closeWorld(world))
    const states = yield* makeSessionStates(world)
    const handles = states.map((state) => handleOf(world, state))
    const hostiles = makeHostileStates(world, config.hostile ?? 0, states[0]?.meta.scopeId)

    ledger.note(`simulation seed ${seed}: ${states.map((state) => `${state.meta.name}${state.meta.scopeId === undefined ? "" : `@${state.meta.scopeId}`}${state.meta.group === undefined ? "" : `/${state.meta.group}`}`).join(", ")}`)
    yield* worldStep(world, undefined, startBroker(world))
    for (const state of states) {
      if (state.meta.supervisor !== undefined) continue
      yield* worldStep(world, undefined, state.lock.withPermits(1)(startSession(world, state)))
    }
    // Delegated children start once their supervisor, connected, has authorized them.
    for (const child of states) {
      const supervisor = states.find((state) => state.meta.id === child.meta.supervisor)
      if (supervisor === undefined) continue
      yield* authorizeChild(world, supervisor, child)
      yield* worldStep(world, undefined, child.lock.withPermits(1)(startSession(world, child)))
    }
    for (const state of hostiles) yield* startHostile(world, state)

    return {
      seed,
      ledger,
      sessions: handles,
      hostiles: hostiles.map((state) => hostileHandle(world, state, hostiles)),
      session: (name) => {
        const found = handles.find((handle) => handle.name.toLowerCase() === name.toLowerCase())
        if (found === undefined) throw new RangeError(`No simulated session named ${name}`)
        return found
      },
      broker: {
        isUp: Effect.sync(() => world.state.broker !== undefined),
        crash: worldStep(world, undefined, crashBroker(world)),
        start: worldStep(world, undefined, startBroker(world)),
        restart: worldStep(world, "broker restarts", Effect.andThen(crashBroker(world), startBroker(world))),
        crashFor: (downFor) =>
          worldStep(
            world,
            `broker down for ${Duration.format(Duration.fromInputUnsafe(downFor))}`,
            Effect.andThen(
              crashBroker(world),
              Effect.asVoid(FiberSet.run(world.steps, Effect.andThen(Effect.sleep(downFor), startBroker(world))))
            )
          ),
        core: Effect.sync(() => world.state.broker?.core)
      },
      advance: (duration) => advance(world, duration),
      jumpClock: (millis) =>
        Effect.gen(function*() {
          ledger.note(`the wall clock jumps ${millis >= 0 ? "forward" : "back"} ${Math.abs(millis)} ms`)
          ledger.clockJumped(millis)
          yield* TestClock.setTime(world.now() + millis)
          yield* idleChecks(world)
        }),
      note: (text) => Effect.sync(() => ledger.note(text)),
      insertedOp: (op, outcome, text) =>
        Effect.sync(() => {
          ledger.note(text)
          const tally = world.state.insertedOps[op] ?? { reached: 0, skipped: 0 }
          world.state.insertedOps[op] = outcome === "reached"
            ? { reached: tally.reached + 1, skipped: tally.skipped }
            : { reached: tally.reached, skipped: tally.skipped + 1 }
        }),
      storm: (connections, holdMs) => worldStep(world, undefined, storm(world, connections, holdMs)),
      ownConnection: (session) =>
        Effect.gen(function*() {
          ledger.note(`${session.name} registers on a connection of its own`)
          return yield* pending(world, yield* step(world, ownConnection(world, session))).result("1 minute")
        }).pipe(Effect.map((exit) => Exit.isSuccess(exit) ? exit.value : undefined)),
      finish: finish(world, states, hostiles)
    } satisfies SimulationService
  })
