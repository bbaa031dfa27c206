/**
 * Counts live fibers by owner, to check that nothing keeps running after a
 * session generation, a client, a broker or the whole world closed.
 *
 * Every fiber inherits its parent's context, so the owner label is a
 * `Context.Reference` provided around the code that builds the owner (a broker
 * incarnation, a session's client, one session generation). Effect calls the
 * `FiberRuntimeMetrics` service when any fiber starts and ends; this one
 * reads the label from the fiber's context and keeps a count per label.
 */
import { Context, Effect, type Exit, Metric } from "effect"

/** Who a fiber belongs to in the simulation; `undefined` for the driver and for fibers outside the world. */
export const FiberOwner = Context.Reference<string | undefined>("effect-intercom/testing/FiberOwner", {
  defaultValue: () => undefined
})

/** Live fibers by owner label, fed by Effect's fiber runtime metrics. */
export interface FiberWatch {
  /** Fibers started and not yet ended, by owner. */
  readonly live: (owner: string) => number
  /** Owners whose label starts with `prefix` and that still have live fibers. */
  readonly liveUnder: (prefix: string) => ReadonlyArray<readonly [string, number]>
  /** Fibers started under any owner so far. */
  readonly started: () => number
  /** The `FiberRuntimeMetrics` service that feeds this watch. */
  readonly service: Metric.FiberRuntimeMetricsService
}

/**
 * A new, empty watch. Provide its `service` as `Metric.FiberRuntimeMetrics`
 * (or use `watchFibers`), and label owners with `ownedBy`.
 *
 * @example
 * const watch = makeFiberWatch()
 * yield* Effect.forkChild(Effect.never).pipe(ownedBy("worker"), watchFibers(watch))
 * watch.live("worker") // 1
 */
export const makeFiberWatch = (): FiberWatch => {
  const counts = new Map<string, number>()
  let started = 0
  const ownerOf = (context: Context.Context<never>) => Context.get(context, FiberOwner)
  return {
    live: (owner) => counts.get(owner) ?? 0,
    liveUnder: (prefix) => {
      const out: Array<readonly [string, number]> = []
      for (const [owner, count] of counts) if (count > 0 && owner.startsWith(prefix)) out.push([owner, count])
      return out
    },
    started: () => started,
    service: {
      recordFiberStart: (context) => {
        const owner = ownerOf(context)
        if (owner === undefined) return
        started++
        counts.set(owner, (counts.get(owner) ?? 0) + 1)
      },
      recordFiberEnd: (context: Context.Context<never>, _exit: Exit.Exit<unknown, unknown>) => {
        const owner = ownerOf(context)
        if (owner === undefined) return
        const count = (counts.get(owner) ?? 0) - 1
        if (count <= 0) counts.delete(owner)
        else counts.set(owner, count)
      }
    }
  }
}

/** Runs `effect` (and every fiber it forks) as `owner`. */
export const ownedBy = (owner: string) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.provideService(effect, FiberOwner, owner)

/** Provides the watch to `effect`: fibers started inside it are counted. */
export const watchFibers = (watch: FiberWatch) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.provideService(effect, Metric.FiberRuntimeMetrics, watch.service)
