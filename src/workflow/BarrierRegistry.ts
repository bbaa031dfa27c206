/**
 * Where a terminal notice finds its barrier (C-ORD-33).
 *
 * Companions that deliver terminal notices (a result relay, a watcher) may
 * be loaded separately from the parent's inbound ordering, and more than one
 * generation may have registered a barrier over time. The registry is the
 * one place they all reach: each parent generation registers its barrier
 * for as long as its Scope lives, and a terminal is admitted by the newest
 * registration that is still current — never by one a reload left behind.
 *
 * Owner: the registry value — one per process, the `TerminalBarriers`
 * service; registrations are added and removed by their Scopes.
 */
import { Context, Effect, Layer, type Scope } from "effect"
import { NoTerminalBarrier, type TerminalAdmissionError } from "./orderingErrors.ts"
import type { TerminalBarrier, TerminalNotice, TerminalOutcome } from "./TerminalBarrier.ts"

/**
 * The process's barrier registry.
 *
 * @category models
 * @since 0.1.0
 */
export interface BarrierRegistry<T> {
  /**
   * Registers a barrier until the current Scope closes. `isCurrent` says
   * whether its generation is still the live one.
   */
  readonly register: (barrier: TerminalBarrier<T>, isCurrent: Effect.Effect<boolean>) => Effect.Effect<void, never, Scope.Scope>
  /** Admits a terminal through the newest current registration (C-ORD-33). */
  readonly admit: (terminal: TerminalNotice<T>) => Effect.Effect<TerminalOutcome, TerminalAdmissionError | NoTerminalBarrier>
}

interface Registration<T> {
  readonly barrier: TerminalBarrier<T>
  readonly isCurrent: Effect.Effect<boolean>
}

/**
 * Makes an empty barrier registry.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeBarrierRegistry = <T>(): Effect.Effect<BarrierRegistry<T>> =>
  Effect.sync(() => {
    const registrations: Array<Registration<T>> = []
    return {
      register: (barrier, isCurrent) =>
        Effect.acquireRelease(
          Effect.sync(() => {
            const registration = { barrier, isCurrent }
            registrations.push(registration)
            return registration
          }),
          (registration) =>
            Effect.sync(() => {
              const index = registrations.indexOf(registration)
              if (index >= 0) registrations.splice(index, 1)
            })
        ).pipe(Effect.asVoid),
      admit: (terminal) =>
        Effect.gen(function*() {
          for (let i = registrations.length - 1; i >= 0; i--) {
            const registration = registrations[i]
            if (registration !== undefined && (yield* registration.isCurrent)) {
              return yield* registration.barrier.admit(terminal)
            }
          }
          return yield* new NoTerminalBarrier()
        })
    }
  })

/**
 * The process's barrier registry as a service: build `TerminalBarriers.layer`
 * once and share it with every companion that delivers terminal notices.
 * Barriers registered here take notices of any type (`TerminalBarrier<unknown>`).
 *
 * @category services
 * @since 0.1.0
 */
export class TerminalBarriers extends Context.Service<TerminalBarriers, BarrierRegistry<unknown>>()(
  "effect-intercom/workflow/TerminalBarriers"
) {
  /** A fresh, empty registry. */
  static readonly layer: Layer.Layer<TerminalBarriers> = Layer.effect(TerminalBarriers, makeBarrierRegistry<unknown>())
}
