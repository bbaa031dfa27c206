/**
 * The simulated broker process: the real broker core listening on the
 * in-memory network, one incarnation at a time. A crash closes the
 * incarnation's Scope — every connection drops and its in-memory state is
 * gone — and no fiber of it may be left running.
 */
import { Effect, Exit, Scope } from "effect"
import { Broker } from "../../broker/Broker.ts"
import { ownedBy } from "../FiberWatch.ts"
import { SIM_ADDRESS, type World } from "./world.ts"

/** Starts a new broker incarnation on `SIM_ADDRESS`, unless one is up or the world is closing. */
export const startBroker = (world: World): Effect.Effect<void> =>
  Effect.gen(function*() {
    const { state } = world
    if (state.broker !== undefined || state.finished) return
    const brokerEpoch = ++state.epoch
    const owner = `broker#${brokerEpoch}`
    const scope = yield* Scope.fork(world.scope)
    // A memory store (or none) cannot fail to load but for a defect.
    const core = yield* Broker.make(world.brokerOptions).pipe(Scope.provide(scope), ownedBy(owner), Effect.orDie)
    state.broker = { epoch: brokerEpoch, scope, core }
    yield* world.network.listen(SIM_ADDRESS, core.accept).pipe(Scope.provide(scope), ownedBy(owner), Effect.orDie)
    world.ledger.note(`broker #${brokerEpoch} started`)
  })

/** The broker that is up dies; checks that none of its fibers survive it. */
export const crashBroker = (world: World): Effect.Effect<void> =>
  Effect.gen(function*() {
    const { ledger, state, watch } = world
    const current = state.broker
    if (current === undefined) return
    state.broker = undefined
    ledger.brokerCrashed(current.epoch)
    ledger.note(`broker #${current.epoch} crashed`)
    yield* Scope.close(current.scope, Exit.void)
    const owner = `broker#${current.epoch}`
    ledger.check(watch.live(owner) === 0, "fiber-leak", () =>
      `${watch.live(owner)} fiber(s) of ${owner} still running after it crashed`)
  })
