/**
 * `monitorChild`: a child's `ControlMonitor` wired to its run's
 * `RunNotifications` — each threshold signal (C-WFD-9) becomes a control
 * notice to the parent, filtered by mode and `notifyOn` (C-WFD-3, C-WFD-10),
 * with "Waiting for supervisor input" when the child has an unresolved
 * durable question (C-DQ-17). The monitor lives in the caller's Scope (the
 * child's); a notice that cannot be sent is logged and the monitor goes on.
 */
import type { Effect, Scope } from "effect"
import { type ControlMonitor, type ControlSettings, type ControlSettingsInvalid, type ControlSignal, makeControlMonitor } from "./ControlMonitor.ts"
import type { RunNotifications } from "./RunNotifications.ts"

/** A child as its parent addresses it. */
export interface MonitoredChild {
  /** The intercom target the parent uses (name or id). */
  readonly target: string
  /** Its session id, to find its durable questions. */
  readonly id?: string | undefined
}

const seconds = (ms: number) => `${Math.round(ms / 1000)} s`

/** The few words a notice says about `signal`. */
export const signalDetail = (signal: ControlSignal): string => {
  if (signal.event === "active_long_running") return `running for ${seconds(signal.runningMs)}`
  return signal.cause === "inactive"
    ? `no activity for ${seconds(signal.idleMs)}`
    : `${signal.failures} failed tool attempts in a row`
}

/** Starts the monitor of `child` in the current Scope, its signals sent through `notifications`. */
export const monitorChild = (
  notifications: RunNotifications,
  child: MonitoredChild,
  settings?: Partial<ControlSettings>
): Effect.Effect<ControlMonitor, ControlSettingsInvalid, Scope.Scope> =>
  makeControlMonitor(
    (signal) => notifications.control({ event: signal.event, child: child.target, childId: child.id, detail: signalDetail(signal) }),
    settings
  )
