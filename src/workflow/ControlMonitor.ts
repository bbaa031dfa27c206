/**
 * `ControlMonitor`: the control thresholds of one running child (C-WFD-9).
 * It owns the child's activity clock and failed-tool count, and decides when
 * the child needs attention (no activity for `attentionAfterMs`, or
 * `maxFailedTools` failed tool attempts in a row) and when it is a
 * long-running child (`longRunningAfterMs` after it started).
 *
 * One actor fiber per child: inputs arrive on its queue, deadlines are
 * `Clock` time (a `TestClock` drives them), and the fiber lives in the
 * caller's Scope, so closing the child's Scope stops it. Each signal is
 * raised once per occurrence: inactivity again only after new activity,
 * failed tools again only after a success, long-running once.
 */
import { Clock, Data, Effect, Option, Queue, type Scope } from "effect"

/** The thresholds (C-WFD-9); every one a setting. */
export interface ControlSettings {
  /** Needs attention after this long without activity (default 60 s). */
  readonly attentionAfterMs: number
  /** The long-running notice this long after the start (default 240 s). */
  readonly longRunningAfterMs: number
  /** Needs attention after this many failed tool attempts in a row (default 3). */
  readonly maxFailedTools: number
}

/** The contract's defaults: 60 s, 240 s, 3 failures (C-WFD-9). */
export const DEFAULT_CONTROL_SETTINGS: ControlSettings = {
  attentionAfterMs: 60_000,
  longRunningAfterMs: 240_000,
  maxFailedTools: 3
}

/** A control signal the monitor raises. */
export type ControlSignal =
  | { readonly event: "needs_attention"; readonly cause: "inactive"; readonly idleMs: number }
  | { readonly event: "needs_attention"; readonly cause: "failed_tools"; readonly failures: number }
  | { readonly event: "active_long_running"; readonly runningMs: number }

/** Settings the monitor cannot run with: a defect naming the setting. */
export class ControlSettingsInvalid extends Data.TaggedError("ControlSettingsInvalid")<{ readonly detail: string }> {
  override get message(): string {
    return `Invalid control settings: ${this.detail}`
  }
}

/** Why `settings` cannot be used, or undefined when they can. */
export const controlSettingsProblem = (settings: ControlSettings): string | undefined => {
  const whole = (what: string, value: number) =>
    Number.isSafeInteger(value) && value >= 1 ? undefined : `${what} must be a whole number of at least 1, got ${value}`
  return whole("attentionAfterMs", settings.attentionAfterMs) ??
    whole("longRunningAfterMs", settings.longRunningAfterMs) ??
    whole("maxFailedTools", settings.maxFailedTools)
}

/** What the child reports to its monitor. */
type Input = "activity" | "toolFailed" | "toolSucceeded"

/** The monitor of one child: report what it does; `settled` stops the monitor. */
export interface ControlMonitor {
  /** The child did something (a message, a tool call, output). */
  readonly activity: Effect.Effect<void>
  /** A tool attempt failed (counts as activity too). */
  readonly toolFailed: Effect.Effect<void>
  /** A tool attempt succeeded: the failure count starts over. */
  readonly toolSucceeded: Effect.Effect<void>
  /** The child settled: no more signals. */
  readonly settled: Effect.Effect<void>
}

/**
 * Starts the monitor of one child in the current Scope; `emit` receives each
 * signal (its failure is logged, the monitor goes on). Fails with
 * `ControlSettingsInvalid` for unusable settings.
 */
export const makeControlMonitor = (
  emit: (signal: ControlSignal) => Effect.Effect<void, unknown>,
  settings: Partial<ControlSettings> = {}
): Effect.Effect<ControlMonitor, ControlSettingsInvalid, Scope.Scope> =>
  Effect.gen(function*() {
    const s = { ...DEFAULT_CONTROL_SETTINGS, ...settings }
    const problem = controlSettingsProblem(s)
    if (problem !== undefined) return yield* new ControlSettingsInvalid({ detail: problem })
    const inbox = yield* Queue.unbounded<Input | "settled">()
    yield* Effect.addFinalizer(() => Queue.shutdown(inbox))
    const startedAt = yield* Clock.currentTimeMillis
    // State touched only by the actor fiber below.
    let lastActivity = startedAt
    let attentionRaised = false
    let failures = 0
    let failuresRaised = false
    let longRunningSent = false
    const raise = (signal: ControlSignal) =>
      emit(signal).pipe(Effect.catchCause((cause) => Effect.logWarning("A control notice could not be sent", cause)))

    const nextDeadline = (): number | undefined => {
      const deadlines: Array<number> = []
      if (!attentionRaised) deadlines.push(lastActivity + s.attentionAfterMs)
      if (!longRunningSent) deadlines.push(startedAt + s.longRunningAfterMs)
      return deadlines.length === 0 ? undefined : Math.min(...deadlines)
    }

    const onDeadlines = (now: number) =>
      Effect.gen(function*() {
        if (!longRunningSent && now >= startedAt + s.longRunningAfterMs) {
          longRunningSent = true
          yield* raise({ event: "active_long_running", runningMs: now - startedAt })
        }
        if (!attentionRaised && now >= lastActivity + s.attentionAfterMs) {
          attentionRaised = true
          yield* raise({ event: "needs_attention", cause: "inactive", idleMs: now - lastActivity })
        }
      })

    const onInput = (input: Input, now: number) =>
      Effect.gen(function*() {
        lastActivity = now
        attentionRaised = false
        if (input === "toolSucceeded") {
          failures = 0
          failuresRaised = false
        } else if (input === "toolFailed") {
          failures++
          if (failures >= s.maxFailedTools && !failuresRaised) {
            failuresRaised = true
            yield* raise({ event: "needs_attention", cause: "failed_tools", failures })
          }
        }
      })

    const step: Effect.Effect<boolean> = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const deadline = nextDeadline()
      const next = deadline === undefined
        ? Option.some(yield* Queue.take(inbox))
        : yield* Queue.take(inbox).pipe(Effect.timeoutOption(Math.max(0, deadline - now)))
      if (Option.isNone(next)) {
        yield* onDeadlines(yield* Clock.currentTimeMillis)
        return true
      }
      if (next.value === "settled") return false
      yield* onInput(next.value, yield* Clock.currentTimeMillis)
      return true
    })
    const loop: Effect.Effect<void> = Effect.suspend(() => Effect.flatMap(step, (go) => (go ? loop : Effect.void)))
    yield* Effect.forkScoped(loop)
    return {
      activity: Queue.offer(inbox, "activity").pipe(Effect.asVoid),
      toolFailed: Queue.offer(inbox, "toolFailed").pipe(Effect.asVoid),
      toolSucceeded: Queue.offer(inbox, "toolSucceeded").pipe(Effect.asVoid),
      settled: Queue.offer(inbox, "settled").pipe(Effect.asVoid)
    }
  })
