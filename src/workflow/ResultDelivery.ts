/**
 * `ResultDelivery`: confirmation-based delivery of a run's result (C-WFD-11,
 * C-WFD-12). A delivery is a list of phases (send the message to the parent,
 * then whatever confirmation the engine needs); a phase counts as done only
 * when its effect succeeds, which for a send means the bus acknowledged it.
 *
 * Done phases are recorded in a `PhaseLedger` that the caller owns and that
 * outlives one delivery attempt, so a replaced watcher retries only the
 * phases still missing and never sends the parent message twice. A phase's
 * run and its mark are one step with respect to interruption: the run may
 * be interrupted while it waits (it then counts as not done), but once it
 * returned its mark is written before an interruption lands, so a watcher
 * replaced at that moment has still recorded it. A mark that cannot be
 * written fails the delivery (`DeliveryMarksFailed`) and is not retried as
 * a refused attempt: that would run the phase again.
 *
 * A failing phase is retried with capped exponential backoff (`Schedule` on
 * `Clock`) a finite number of times; every phase that succeeds is progress
 * and starts a fresh budget for the next one. When a phase's budget is spent
 * the payload is kept in the `UndeliveredStore` and its location logged: it
 * is never retried forever, and never deleted.
 */
import { Data, Duration, Effect, Exit, Ref, Schedule } from "effect"
import type { DeliveryMarksFailed, DeliveryMarksService } from "../store/DeliveryMarks.ts"
import { type UndeliveredEntry, UndeliveredStore, type UndeliveredStoreFailed } from "../store/UndeliveredStore.ts"

/** The retry policy (C-WFD-12); every number a setting. */
export interface DeliverySettings {
  /** The first retry's delay (default 1 s). */
  readonly baseDelayMs: number
  /** No delay is longer than this (default 30 s). */
  readonly maxDelayMs: number
  /** Each delay is the previous one times this (default 2). */
  readonly factor: number
  /** Attempts of one phase, the first one included, before it is kept (default 6). */
  readonly maxAttempts: number
}

/** The defaults: 1 s, doubling, capped at 30 s, 6 attempts per phase. */
export const DEFAULT_DELIVERY_SETTINGS: DeliverySettings = {
  baseDelayMs: 1_000,
  maxDelayMs: 30_000,
  factor: 2,
  maxAttempts: 6
}

/** One attempt of a phase was refused or not acknowledged; `reason` says why. */
export class DeliveryRefused extends Data.TaggedError("DeliveryRefused")<{ readonly reason: string }> {
  override get message(): string {
    return `Not delivered: ${this.reason}`
  }
}

/** One phase of a delivery: it succeeds only when the step is confirmed. */
export interface DeliveryPhase {
  /** A name unique within the delivery (`message`, `confirm`, …): the ledger's key. */
  readonly name: string
  readonly run: Effect.Effect<void, DeliveryRefused>
}

/** The done phases of every delivery, keyed by delivery key and phase name. Its creator owns it. */
export class PhaseLedgerState {
  /** `<key>\u0000<phase>` of every done phase. */
  readonly done: Set<string> = new Set()
}

/** Where done phases are recorded; it must outlive a watcher (C-WFD-11). */
export interface PhaseLedger {
  readonly isDone: (key: string, phase: string) => Effect.Effect<boolean, DeliveryMarksFailed>
  readonly markDone: (key: string, phase: string) => Effect.Effect<void, DeliveryMarksFailed>
}

/** A ledger over `state` (create the state where it outlives the watchers). */
export const memoryPhaseLedger = (state: PhaseLedgerState = new PhaseLedgerState()): PhaseLedger => ({
  isDone: (key, phase) => Effect.sync(() => state.done.has(`${key}\u0000${phase}`)),
  markDone: (key, phase) => Effect.sync(() => void state.done.add(`${key}\u0000${phase}`))
})

/**
 * A ledger over the store's `DeliveryMarks` (`DeliveryMarks.layerSql` keeps
 * them in the engine's database, so a watcher in a new process skips what an
 * old one confirmed).
 */
export const marksPhaseLedger = (marks: DeliveryMarksService): PhaseLedger => ({
  isDone: (key, phase) => marks.has(`phase\u0000${key}\u0000${phase}`),
  markDone: (key, phase) => marks.add(`phase\u0000${key}\u0000${phase}`)
})

/** One payload to deliver. */
export interface DeliveryJob {
  /** Identifies this delivery across watchers (say `<run>:result`). */
  readonly key: string
  readonly run: string
  readonly target: string
  readonly kind: "result" | "notice"
  /** The payload, as kept if it does not deliver. */
  readonly body: string
  readonly phases: ReadonlyArray<DeliveryPhase>
}

/** How a delivery ended. */
export type DeliveryOutcome =
  | {
    readonly _tag: "Delivered"
    /** Phases run (and confirmed) by this call. */
    readonly confirmed: ReadonlyArray<string>
    /** Phases a previous watcher had already confirmed. */
    readonly skipped: ReadonlyArray<string>
  }
  | {
    readonly _tag: "Kept"
    /** The phase whose retries ran out. */
    readonly phase: string
    readonly attempts: number
    readonly entry: UndeliveredEntry
  }

/** Why `settings` cannot be used, or undefined when they can. */
export const deliverySettingsProblem = (s: DeliverySettings): string | undefined => {
  if (!(Number.isFinite(s.baseDelayMs) && s.baseDelayMs > 0)) return `baseDelayMs must be positive, got ${s.baseDelayMs}`
  if (!(Number.isFinite(s.maxDelayMs) && s.maxDelayMs >= s.baseDelayMs)) {
    return `maxDelayMs must be at least baseDelayMs (${s.baseDelayMs}), got ${s.maxDelayMs}`
  }
  if (!(Number.isFinite(s.factor) && s.factor >= 1)) return `factor must be at least 1, got ${s.factor}`
  if (!(Number.isSafeInteger(s.maxAttempts) && s.maxAttempts >= 1)) {
    return `maxAttempts must be a whole number of at least 1, got ${s.maxAttempts}`
  }
  return undefined
}

/** The retry schedule of one phase: exponential from `baseDelayMs`, capped at `maxDelayMs`, `maxAttempts - 1` retries. */
export const retrySchedule = (s: DeliverySettings) =>
  Schedule.exponential(Duration.millis(s.baseDelayMs), s.factor).pipe(
    Schedule.modifyDelay(({ duration }) => Effect.succeed(Duration.min(duration, Duration.millis(s.maxDelayMs)))),
    Schedule.upTo({ times: s.maxAttempts - 1 })
  )

/**
 * Delivers `job` (see the module header): skips the phases `ledger` has as
 * done, runs the others in order with retries, and keeps the payload in the
 * `UndeliveredStore` (logging its location) when a phase's retries run out.
 * Unusable settings are a defect (a `RangeError` naming the setting).
 */
export const deliver = (
  job: DeliveryJob,
  ledger: PhaseLedger,
  settings: Partial<DeliverySettings> = {}
): Effect.Effect<DeliveryOutcome, UndeliveredStoreFailed | DeliveryMarksFailed, UndeliveredStore> =>
  Effect.gen(function*() {
    const s = { ...DEFAULT_DELIVERY_SETTINGS, ...settings }
    const problem = deliverySettingsProblem(s)
    if (problem !== undefined) return yield* Effect.die(new RangeError(problem))
    const confirmed: Array<string> = []
    const skipped: Array<string> = []
    for (const phase of job.phases) {
      if (yield* ledger.isDone(job.key, phase.name)) {
        skipped.push(phase.name)
        continue
      }
      const attempts = yield* Ref.make(0)
      // A phase that succeeded is recorded before anything can interrupt: the run stays
      // interruptible (a wait inside it may be cut, and then counts as not done), but once it
      // returned, its mark is written in the same uninterruptible step (C-WFD-11).
      // A mark that could not be written is not a refused attempt: it is not retried (that would
      // run the phase again) and fails the delivery, as before.
      const confirmedAndMarked = Effect.uninterruptibleMask((restore) =>
        Effect.andThen(restore(phase.run), Effect.exit(ledger.markDone(job.key, phase.name)))
      )
      const outcome = yield* Ref.update(attempts, (n) => n + 1).pipe(
        Effect.andThen(confirmedAndMarked),
        Effect.retry(retrySchedule(s)),
        Effect.result
      )
      if (outcome._tag === "Failure") {
        const tried = yield* Ref.get(attempts)
        const store = yield* UndeliveredStore
        const entry = yield* store.keep({
          run: job.run,
          target: job.target,
          kind: job.kind,
          body: job.body,
          reason: outcome.failure.reason,
          attempts: tried
        })
        yield* Effect.logWarning(
          `The ${job.kind} of workflow run ${job.run} for ${job.target} was not delivered after ${tried} attempts ` +
            `(${outcome.failure.reason}); it is kept at ${entry.location} and will not be retried`
        )
        return { _tag: "Kept", phase: phase.name, attempts: tried, entry } satisfies DeliveryOutcome
      }
      if (Exit.isFailure(outcome.success)) return yield* Effect.failCause(outcome.success.cause)
      confirmed.push(phase.name)
    }
    return { _tag: "Delivered", confirmed, skipped } satisfies DeliveryOutcome
  })
