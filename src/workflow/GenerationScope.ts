/**
 * Generation Scopes (C-ORD-35): the lifetime of one stage generation, and the
 * slot that replaces one generation by the next.
 *
 * Everything a generation starts (its admission actor, handshakes, retries)
 * is forked into the generation's Scope, so closing that Scope interrupts it
 * all (C-ORD-16). Work that settles outside Effect's control — a host
 * callback, a reply from a port that ignored interruption — goes through
 * `whenCurrent`, which checks the generation synchronously right before the
 * write: a late callback of a retired generation does nothing and never
 * writes into its replacement.
 *
 * The slot owns the `current` pointer; `next` retires the current generation
 * before the new one exists, so two generations of one slot are never current
 * at once.
 *
 * @since 0.1.0
 */
import { Effect, Exit, type Fiber, Option, Scope } from "effect"

/**
 * One generation: its number within its slot, its Scope, and the guards
 * that keep late work out of a retired generation.
 *
 * @category models
 * @since 0.1.0
 */
export interface GenerationScope {
  /** 1 for the slot's first generation, then 2, 3, … */
  readonly generation: number
  /** Closing it interrupts everything forked with `fork`. */
  readonly scope: Scope.Scope
  /** Whether this generation has not been retired. */
  readonly isCurrent: () => boolean
  /** Forks `effect` into this generation: it is interrupted when the generation retires. */
  readonly fork: <A, E>(effect: Effect.Effect<A, E>) => Effect.Effect<Fiber.Fiber<A, E>>
  /**
   * Runs `write` only if this generation is still current when it starts
   * (checked synchronously, right before it), giving `Option.none()`
   * otherwise. Use it for every write a late callback could make.
   */
  readonly whenCurrent: <A, E, R>(write: Effect.Effect<A, E, R>) => Effect.Effect<Option.Option<A>, E, R>
  /** Retires the generation: `isCurrent` turns false at once, then its Scope closes. Idempotent. */
  readonly retire: Effect.Effect<void>
}

/**
 * Makes a generation whose Scope is a child of `parent`: closing `parent`
 * retires it too.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeGenerationScope = (parent: Scope.Scope, generation: number): Effect.Effect<GenerationScope> =>
  Effect.gen(function*() {
    const scope = yield* Scope.fork(parent)
    let current = true
    yield* Scope.addFinalizer(scope, Effect.sync(() => {
      current = false
    }))
    return {
      generation,
      scope,
      isCurrent: () => current,
      fork: (effect) => Effect.forkIn(effect, scope, { startImmediately: true }),
      whenCurrent: (write) => Effect.suspend(() => current ? Effect.asSome(write) : Effect.succeedNone),
      retire: Effect.suspend(() => {
        current = false
        return Scope.close(scope, Exit.void)
      })
    }
  })

/**
 * Holds the current generation of one stage (or session) and replaces it.
 *
 * @category models
 * @since 0.1.0
 */
export interface GenerationSlot {
  /** The current generation, if one is open. */
  readonly current: () => GenerationScope | undefined
  /** Retires the current generation (C-ORD-16: its work is interrupted), then opens the next. */
  readonly next: Effect.Effect<GenerationScope>
  /** Retires the current generation and opens none. */
  readonly retire: Effect.Effect<void>
}

/**
 * A slot whose generations live at most as long as the current Scope.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeGenerationSlot: Effect.Effect<GenerationSlot, never, Scope.Scope> = Effect.gen(function*() {
  const parent = yield* Effect.scope
  let current: GenerationScope | undefined
  let count = 0
  const retire = Effect.suspend(() => {
    const old = current
    current = undefined
    return old === undefined ? Effect.void : old.retire
  })
  return {
    current: () => current,
    retire,
    next: Effect.gen(function*() {
      yield* retire
      count += 1
      const opened = yield* makeGenerationScope(parent, count)
      current = opened
      return opened
    })
  }
})
