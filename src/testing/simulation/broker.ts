/**
 * The simulated broker process: the real broker core listening on the
 * in-memory network, one incarnation at a time. It adopts each connection
 * as the Unix-socket broker does (`BrokerService.adopt`, with the link's
 * frames pushed as data events: transport/ReadPump.ts), unless the world
 * asks for the fiber path (`brokerConnections: "accepted"`). A crash closes the
 * incarnation's Scope — every connection drops and its in-memory state is
 * gone — and no fiber of it may be left running.
 *
 * The broker tells the ledger when its readers handle the frames they read,
 * and which frames they held and dropped (`ReaderObserver`): a frame held
 * behind parked output takes effect only then, or never.
 *
 * In a durable world each incarnation gets a `MailStore` over the world's
 * simulated disk (`World.disk`): it restores what the last one committed. A
 * crash marks the disk down before the incarnation dies, so no commit of the
 * dying broker lands, as with kill -9; the next start marks it up again.
 */
import { Effect, Exit, Scope } from "effect"
import { Broker } from "../../broker/Broker.ts"
import { ReaderObserver, type ReaderObserverService } from "../../broker/ReaderObserver.ts"
import { makeMemory, type MailStoreService, type MemoryMailState } from "../../store/MailStore.ts"
import { ownedBy } from "../FiberWatch.ts"
import { SIM_ADDRESS, type World } from "./world.ts"

/**
 * A `MailStore` over the world's disk whose commits take `commitMs` of
 * simulated time first (an fsync). The wait is interruptible even inside the
 * writer's uninterruptible commit, as a killed process does not finish its
 * fsync: a crash during it loses the batch, and the disk's `down` is read
 * only when the commit lands.
 */
const simulatedDisk = (disk: MemoryMailState, commitMs: number): MailStoreService => {
  const store = makeMemory(disk)
  return commitMs <= 0 ? store : {
    ...store,
    commit: (batch) => Effect.andThen(Effect.interruptible(Effect.sleep(commitMs)), Effect.suspend(() => store.commit(batch)))
  }
}

/** Starts a new broker incarnation on `SIM_ADDRESS`, unless one is up or the world is closing. */
export const startBroker = (world: World): Effect.Effect<void> =>
  Effect.gen(function*() {
    const { state } = world
    if (state.broker !== undefined || state.finished) return
    const brokerEpoch = ++state.epoch
    const owner = `broker#${brokerEpoch}`
    const scope = yield* Scope.fork(world.scope)
    const disk = world.disk
    if (disk !== undefined) disk.down = false
    // A store given in the config (a test's deliberately broken one) is used as is.
    const options = disk === undefined || world.brokerOptions.store !== undefined
      ? world.brokerOptions
      : { ...world.brokerOptions, store: simulatedDisk(disk, world.config.commitMs ?? 5) }
    // The ledger counts a frame's effect when the broker handles it, not when it reads it (a reader held
    // back behind parked output holds it, and drops it if its connection closes first: ReaderObserver.ts).
    const readers: ReaderObserverService = {
      handled: (connectionId, frames, from, to) => {
        const link = world.linksByServer.get(connectionId)
        if (link !== undefined) world.ledger.brokerHandled(link.id, frames, from, to)
      },
      dropped: (connectionId, frames) => {
        const link = world.linksByServer.get(connectionId)
        if (link !== undefined) world.ledger.heldDropped(link.id, frames)
      }
    }
    // A memory store (or none) cannot fail to load but for a defect.
    const core = yield* Broker.make(options).pipe(
      Effect.provideService(ReaderObserver, readers),
      Scope.provide(scope),
      ownedBy(owner),
      Effect.orDie
    )
    state.broker = { epoch: brokerEpoch, scope, core }
    if ((world.config.brokerConnections ?? "adopted") === "adopted") {
      // As runBroker with its Unix listener: each connection adopted, with no fiber of its own; at a
      // crash they are closed (each giving back what it never wrote) before the listener destroys them.
      yield* world.network.listen(SIM_ADDRESS, core).pipe(Scope.provide(scope), ownedBy(owner), Effect.orDie)
      yield* Scope.addFinalizer(scope, core.closeConnections)
    } else {
      yield* world.network.listen(SIM_ADDRESS, core.accept).pipe(Scope.provide(scope), ownedBy(owner), Effect.orDie)
    }
    if (disk !== undefined) {
      // A stored row's record key ends with its message id (DeliveryRecords.recordKeyOf: sender key, U+0001, id).
      const ids = Array.from(disk.mail.values(), (row) => row.recordKey.slice(row.recordKey.lastIndexOf("\u0001") + 1))
      world.ledger.brokerRestored(brokerEpoch, ids)
    }
    world.ledger.note(`broker #${brokerEpoch} started${disk === undefined ? "" : ` (durable: ${disk.mail.size} message(s) on disk)`}`)
  })

/** The broker that is up dies; checks that none of its fibers survive it. */
export const crashBroker = (world: World): Effect.Effect<void> =>
  Effect.gen(function*() {
    const { ledger, state, watch } = world
    const current = state.broker
    if (current === undefined) return
    state.broker = undefined
    const stats = yield* current.core.stats
    state.paths.admissionWaits += stats.admissionWaits
    state.paths.waitsWithdrawn += stats.waitsWithdrawn
    state.paths.readPauses += stats.readPauses
    state.paths.ownParks += stats.ownParks
    state.paths.parkedBehindOwn += stats.parkedBehindOwn
    state.paths.waitsBehindOwn += stats.waitsBehindOwn
    state.paths.offeredAhead += stats.offeredAhead
    state.paths.answersBehindReplies += stats.answersBehindReplies
    state.paths.answersReleasedOffered += stats.answersReleasedOffered
    state.paths.answersReleasedForced += stats.answersReleasedForced
    state.paths.answersDropped += stats.answersDropped
    state.paths.answersReleasedCustody += stats.answersReleasedCustody
    state.paths.departuresHeld += stats.departuresHeld
    state.paths.returnsHeld += stats.returnsHeld
    state.paths.custodyHoldsTaken += stats.custodyHoldsTaken
    state.paths.custodyHoldsCarried += stats.custodyHoldsCarried
    state.paths.custodyHoldsAdopted += stats.custodyHoldsAdopted
    state.paths.custodyHeldMessages += stats.custodyHeldMessages
    state.paths.custodyHeldWaits += stats.custodyHeldWaits
    state.paths.custodyHeldDepartures += stats.custodyHeldDepartures
    state.paths.custodyHeldReturns += stats.custodyHeldReturns
    state.paths.custodyAwaitedReplies += stats.custodyAwaitedReplies
    state.paths.withdrawnCopiesKept += stats.withdrawnCopiesKept
    state.paths.withdrawnCopiesGiven += stats.withdrawnCopiesGiven
    state.paths.controlsKept += stats.controlsKept
    state.paths.controlsKeptGiven += stats.controlsKeptGiven
    // The process dies now: nothing it had not committed reaches the disk.
    if (world.disk !== undefined) world.disk.down = true
    ledger.brokerCrashed(current.epoch)
    ledger.note(`broker #${current.epoch} crashed`)
    yield* Scope.close(current.scope, Exit.void)
    const owner = `broker#${current.epoch}`
    ledger.check(watch.live(owner) === 0, "fiber-leak", () =>
      `${watch.live(owner)} fiber(s) of ${owner} still running after it crashed`)
  })
