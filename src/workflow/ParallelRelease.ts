/**
 * Foreground parallel groups and their shared release (C-ORD-21, C-ORD-22).
 *
 * A foreground parallel group runs its tasks under a concurrency limit while
 * the parent's aggregate `subagent` call waits. A commit accepted by any one
 * member releases foreground supervision for every active sibling at once:
 * the aggregate call returns, showing each running sibling as a detached
 * placeholder. The siblings keep running — their fibers belong to the run's
 * Scope, not to the call — and each completion later replaces its
 * placeholder. Tasks still waiting behind the limit at release are skipped
 * and never launched unsupervised.
 *
 * Owner: the group; its slot table changes only in synchronous steps (a
 * task starting, finishing, or the release), so "waiting" cannot turn into
 * "running" after the release decided to skip it.
 */
import { Deferred, Effect, type Exit, Fiber, type Scope, Semaphore } from "effect"

/**
 * One task's place in the group:
 * - `Waiting`: behind the concurrency limit;
 * - `Running`: launched and supervised;
 * - `Detached`: launched, still running, released from supervision;
 * - `Skipped`: the group was released before it could launch (C-ORD-22);
 * - `Done`: finished, with its exit (replaces a `Detached` placeholder, C-ORD-21).
 *
 * @category models
 * @since 0.1.0
 */
export type TaskSlot<R, E> =
  | { readonly _tag: "Waiting" }
  | { readonly _tag: "Running" }
  | { readonly _tag: "Detached" }
  | { readonly _tag: "Skipped" }
  | { readonly _tag: "Done"; readonly exit: Exit.Exit<R, E> }

/**
 * A running foreground parallel group.
 *
 * @category models
 * @since 0.1.0
 */
export interface ParallelGroup<R, E> {
  /**
   * The aggregate call: waits until every task is done or the group is
   * released, then returns the slots as they are at that moment.
   */
  readonly aggregate: Effect.Effect<ReadonlyArray<TaskSlot<R, E>>>
  /** The shared release signal: what any member's accepted commit runs (C-ORD-21). Idempotent. */
  readonly release: Effect.Effect<void>
  /** The slots now. */
  readonly slots: Effect.Effect<ReadonlyArray<TaskSlot<R, E>>>
  /** Waits until every launched task finished (skipped ones never run); returns the final slots. */
  readonly settled: Effect.Effect<ReadonlyArray<TaskSlot<R, E>>>
}

/**
 * Starts a foreground parallel group in the current Scope (the run's). Each
 * task gets the group's `release`, to hand to its detach responder.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeParallelGroup = <R, E>(
  tasks: ReadonlyArray<(release: Effect.Effect<void>) => Effect.Effect<R, E>>,
  options: { readonly concurrency: number }
): Effect.Effect<ParallelGroup<R, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const slots: Array<TaskSlot<R, E>> = tasks.map(() => ({ _tag: "Waiting" }))
    const permits = yield* Semaphore.make(Math.max(1, options.concurrency))
    const released = yield* Deferred.make<void>()
    const allDone = yield* Deferred.make<void>()
    let releasedNow = false

    const checkAllDone = Effect.suspend(() =>
      slots.every((slot) => slot._tag === "Done" || slot._tag === "Skipped")
        ? Deferred.succeed(allDone, undefined)
        : Effect.void
    )

    const release = Effect.suspend(() => {
      if (releasedNow) return Effect.void
      releasedNow = true
      slots.forEach((slot, index) => {
        if (slot._tag === "Running") slots[index] = { _tag: "Detached" }
        else if (slot._tag === "Waiting") slots[index] = { _tag: "Skipped" }
      })
      return Effect.andThen(Deferred.succeed(released, undefined), checkAllDone)
    })

    const launch = (task: (release: Effect.Effect<void>) => Effect.Effect<R, E>, index: number) =>
      permits.withPermit(Effect.suspend(() => {
        // C-ORD-22: released while it waited for a permit — never launched.
        if (slots[index]?._tag !== "Waiting") return Effect.void
        slots[index] = { _tag: "Running" }
        return Effect.exit(task(release)).pipe(
          Effect.flatMap((exit) =>
            Effect.suspend(() => {
              slots[index] = { _tag: "Done", exit }
              return checkAllDone
            })
          )
        )
      }))

    const fibers = yield* Effect.forEach(tasks, (task, index) => Effect.forkScoped(launch(task, index)))
    if (tasks.length === 0) yield* Deferred.succeed(allDone, undefined)

    const snapshot = Effect.sync((): ReadonlyArray<TaskSlot<R, E>> => [...slots])
    return {
      aggregate: Effect.raceFirst(Deferred.await(released), Deferred.await(allDone)).pipe(Effect.andThen(snapshot)),
      release,
      slots: snapshot,
      settled: Effect.andThen(Fiber.joinAll(fibers), snapshot)
    }
  })
