/**
 * The busy parent's idle queue as an actor (C-DLV-10, C-DLV-17).
 *
 * A busy parent session does not get inbound messages at once: they wait in
 * a FIFO idle queue. When the parent is idle — the host says so with `wake`,
 * or the queue's own recheck every 500 ms (a setting) finds it idle — the
 * queue is flushed as one batch: the first entry starts a turn and the rest
 * go in as follow-ups of that batch (the host's `deliverBatch` port). A
 * batch the host refuses part of is rolled back from the first undelivered
 * entry and retried at the next flush.
 *
 * Owner: the flusher fiber, living in the Scope it is made in (the parent's
 * generation), woken through its typed signal queue. The entries themselves
 * are an `IdleQueueStore`, changed only by synchronous calls, so the
 * barrier's claim (C-ORD-25) and the handshake's "queue it first" (C-ORD-18)
 * are single steps. Every hand-over to the host — a flush or a barrier
 * batch — runs in the queue's delivery lane, one at a time, so a claim is
 * never interleaved with a flush whose rollback would put a child's message
 * back behind its terminal.
 */
import { Duration, Effect, Queue, type Scope, Semaphore } from "effect"
import { DispatchError, IdleQueueClosed } from "./orderingErrors.ts"
import type { InboundEntry } from "./InboundEntry.ts"
import { type Claim, IdleQueueStore } from "./IdleQueueStore.ts"

/**
 * What the idle queue needs from the parent's host.
 *
 * @category ports
 * @since 0.1.0
 */
export interface IdleQueueHost<A> {
  /** Whether the parent can take a new turn now. */
  readonly isIdle: Effect.Effect<boolean>
  /**
   * Hands a flushed batch over: the first entry triggers a turn, the rest
   * are follow-ups of the same batch. Fails with how many it took. Runs
   * uninterruptibly (a closing generation waits for it), so it should return
   * once the turn has started; a wait inside may be `Effect.interruptible`
   * where an interruption means it took nothing.
   */
  readonly deliverBatch: (batch: ReadonlyArray<InboundEntry<A>>) => Effect.Effect<void, DispatchError>
}

/**
 * Idle-queue settings.
 *
 * @category models
 * @since 0.1.0
 */
export interface IdleQueueSettings {
  /** How often a non-empty queue checks whether the parent went idle (C-DLV-10: 500 ms). */
  readonly recheck: Duration.Input
}

/**
 * The contract's idle-queue settings.
 *
 * @category constants
 * @since 0.1.0
 */
export const defaultIdleQueueSettings: IdleQueueSettings = { recheck: "500 millis" }

/**
 * A running idle queue.
 *
 * @category models
 * @since 0.1.0
 */
export interface IdleQueue<A> {
  /**
   * Appends an entry (synchronously); false when the same (sender, message)
   * already waits. Fails with `IdleQueueClosed`, taking nothing, once the
   * queue's Scope has closed: no flusher would hand it over.
   */
  readonly enqueue: (entry: InboundEntry<A>) => Effect.Effect<boolean, IdleQueueClosed>
  /** Removes (sender, message); undefined when it is no longer queued (e.g. a barrier claimed it, C-ORD-18). */
  readonly remove: (entry: { readonly senderId: string; readonly messageId: string }) => Effect.Effect<InboundEntry<A> | undefined>
  /** The waiting entries, oldest first. */
  readonly entries: Effect.Effect<ReadonlyArray<InboundEntry<A>>>
  /** The parent went idle: flush now instead of at the next recheck. */
  readonly wake: Effect.Effect<void>
  /**
   * An idle parent's new entry (C-DLV-10): appended behind what waits and the
   * queue flushed now, in the delivery lane, so the entry goes in the same
   * batch as older ones and never ahead of them or of a flush already under
   * way. True when it was handed over (by this flush, or by a flush or barrier
   * that took it first); false when the host refused it, which leaves it queued.
   * Fails with `IdleQueueClosed`, taking nothing, once the queue's Scope has closed.
   */
  readonly deliverIdle: (entry: InboundEntry<A>) => Effect.Effect<boolean, IdleQueueClosed>
  /** C-DLV-17: drops queued progress of a finished child (exact sender and thread); returns what was dropped. */
  readonly dropFinishedProgress: (senderId: string, threadId: string) => Effect.Effect<ReadonlyArray<InboundEntry<A>>>
  /**
   * Claims entries in one synchronous step and hands them to `dispatch` in
   * the delivery lane, uninterruptibly; on failure the claim is rolled back
   * from the first undelivered index (C-ORD-29), and an interruption inside
   * a wait `dispatch` made interruptible rolls all of it back. Used by the
   * terminal barrier.
   */
  readonly claimAndDispatch: <B, E>(
    select: (queued: ReadonlyArray<InboundEntry<A>>) => (entry: InboundEntry<A>) => boolean,
    dispatch: (claimed: ReadonlyArray<InboundEntry<A>>) => Effect.Effect<B, DispatchError | E>
  ) => Effect.Effect<B, DispatchError | E>
}

/**
 * Hands a claim to `dispatch`; whatever `dispatch` did not take goes back
 * (a typed `DispatchError` says how many it took; any other failure, defect
 * or interruption counts as none taken). The hand-off runs uninterruptibly,
 * its rollback with it: an interruption that came while `dispatch` ran lands
 * once it has exited, so a batch it took is never put back. A port that
 * waits may make that wait `Effect.interruptible`, where an interruption
 * means it took nothing.
 */
const dispatchClaim = <A, B, E>(
  claim: Claim<A>,
  dispatch: (claimed: ReadonlyArray<InboundEntry<A>>) => Effect.Effect<B, DispatchError | E>
): Effect.Effect<B, DispatchError | E> =>
  Effect.uninterruptible(
    Effect.suspend(() => dispatch(claim.entries)).pipe(
      Effect.tapError((error) =>
        Effect.sync(() => claim.rollback(error instanceof DispatchError ? error.delivered : 0))
      ),
      Effect.onExit((exit) => exit._tag === "Success" ? Effect.void : Effect.sync(() => claim.rollback(0)))
    )
  )

/**
 * Starts an idle queue in the current Scope (the parent generation's):
 * closing it stops the flusher.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeIdleQueue = <A>(
  host: IdleQueueHost<A>,
  settings: IdleQueueSettings = defaultIdleQueueSettings
): Effect.Effect<IdleQueue<A>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const store = new IdleQueueStore<A>()
    const lane = yield* Semaphore.make(1)
    const signals = yield* Queue.unbounded<"wake">()
    // Set once the Scope closes: from then on nothing is taken, since no flusher would hand it over.
    let closed = false
    yield* Effect.addFinalizer(() => Effect.andThen(Effect.sync(() => {
      closed = true
    }), Queue.shutdown(signals)))
    const refuse = (entry: InboundEntry<A>) =>
      Effect.fail(new IdleQueueClosed({ senderId: entry.senderId, messageId: entry.messageId }))

    const claimAndDispatch = <B, E>(
      select: (queued: ReadonlyArray<InboundEntry<A>>) => (entry: InboundEntry<A>) => boolean,
      dispatch: (claimed: ReadonlyArray<InboundEntry<A>>) => Effect.Effect<B, DispatchError | E>
    ): Effect.Effect<B, DispatchError | E> =>
      lane.withPermit(Effect.suspend(() => dispatchClaim(store.claim(select), dispatch)))

    // The host's `isIdle` inside the guard too: one defect of a port must not end the flusher for good.
    const flush: Effect.Effect<void> = Effect.gen(function*() {
      if (store.size === 0 || !(yield* host.isIdle)) return
      yield* lane.withPermit(Effect.suspend(() => {
        // Re-checked inside the lane: a barrier may have emptied it meanwhile.
        if (store.size === 0) return Effect.void
        return dispatchClaim(store.takeAll(), host.deliverBatch)
      }))
    }).pipe(
      Effect.catch((error) => Effect.logWarning(error.message)),
      Effect.catchDefect((defect) => Effect.logWarning("Idle-queue flush failed; what waits stays queued", defect))
    )

    const deliverIdle = (entry: InboundEntry<A>): Effect.Effect<boolean, IdleQueueClosed> =>
      Effect.suspend(() => {
        if (closed) return refuse(entry)
        store.enqueue(entry)
        return lane.withPermit(Effect.suspend(() => {
          if (!store.has(entry)) return Effect.succeed(true)
          return dispatchClaim(store.takeAll(), host.deliverBatch).pipe(
            Effect.as(true),
            // Refused: rolled back from the first entry it did not take; was this one among those taken?
            Effect.catch(() => Effect.sync(() => !store.has(entry)))
          )
        }))
      })

    const recheck = Duration.fromInputUnsafe(settings.recheck)
    yield* Queue.take(signals).pipe(
      Effect.timeoutOption(recheck),
      Effect.andThen(Queue.clear(signals)),
      Effect.andThen(flush),
      Effect.forever,
      Effect.forkScoped
    )

    return {
      enqueue: (entry) => Effect.suspend(() => closed ? refuse(entry) : Effect.succeed(store.enqueue(entry))),
      remove: (entry) => Effect.sync(() => store.remove(entry)),
      entries: Effect.sync(() => store.entries()),
      wake: Effect.asVoid(Queue.offer(signals, "wake")),
      deliverIdle,
      dropFinishedProgress: (senderId, threadId) => Effect.sync(() => store.dropFinishedProgress(senderId, threadId)),
      claimAndDispatch
    }
  })
