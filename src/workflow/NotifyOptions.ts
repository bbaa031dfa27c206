/**
 * How a workflow run's intercom notifications are configured (C-WFD-1…5,
 * C-WFD-8, C-WFD-10, C-WFD-14): the `intercom` option and the rules that turn
 * it into a delivery mode, a target, and the event lists.
 *
 * It owns no state: every function here is pure, so the engine resolves a
 * run's settings once at launch and hands the result to `RunNotifications`.
 */
import { Schema } from "effect"

/** The four delivery modes (C-WFD-1). */
export const INTERCOM_DELIVERIES = ["off", "notify", "result", "control-and-result"] as const

/** One delivery mode: what a run sends over intercom (C-WFD-3). */
export type IntercomDelivery = (typeof INTERCOM_DELIVERIES)[number]

/** The control events a run can notify about (C-WFD-5). */
export const CONTROL_EVENTS = ["active_long_running", "needs_attention", "completed", "failed"] as const

/** One control event. */
export type ControlEvent = (typeof CONTROL_EVENTS)[number]

/** The channels a control event can travel on (C-WFD-8). */
export const NOTIFY_CHANNELS = ["event", "async", "intercom"] as const

/** One channel. */
export type NotifyChannel = (typeof NOTIFY_CHANNELS)[number]

/** A subagent's `control.notifyOn` when nothing is given (C-WFD-8). */
export const DEFAULT_SUBAGENT_NOTIFY_ON: ReadonlyArray<ControlEvent> = ["active_long_running", "needs_attention"]

/** A workflow's `intercom.notifyOn` when nothing is given (open question 9). */
export const DEFAULT_WORKFLOW_NOTIFY_ON: ReadonlyArray<ControlEvent> = ["needs_attention", "completed", "failed"]

/** `notifyChannels` when nothing is given (C-WFD-8). */
export const DEFAULT_NOTIFY_CHANNELS: ReadonlyArray<NotifyChannel> = ["event", "async", "intercom"]

/** The workflow lifecycle events (C-WFD-14). */
export const LIFECYCLE_EVENTS = ["completed", "failed", "blocked", "awaiting_input"] as const

/** One lifecycle event. */
export type LifecycleEvent = (typeof LIFECYCLE_EVENTS)[number]

/** `workflowNotifications.notifyOn` when nothing is given (C-WFD-14). */
export const DEFAULT_LIFECYCLE_NOTIFY_ON: ReadonlyArray<LifecycleEvent> = LIFECYCLE_EVENTS

/**
 * The workflow `intercom` option as an engine's configuration writes it
 * (C-WFD-1). `notifyOn` entries are strings: unknown ones are dropped when
 * the list is resolved (C-WFD-8).
 */
export const IntercomOption = Schema.Struct({
  enabled: Schema.optionalKey(Schema.Boolean),
  delivery: Schema.optionalKey(Schema.Literals(INTERCOM_DELIVERIES)),
  parentSession: Schema.optionalKey(Schema.String),
  notifyOn: Schema.optionalKey(Schema.Array(Schema.String))
})

/** The `intercom` option (C-WFD-1). */
export type IntercomOption = typeof IntercomOption.Type

/** What the resolution order needs to know about a run besides its option (C-WFD-2). */
export interface RunShape {
  /** The run returns at once and delivers later (a background run). */
  readonly async: boolean
  /** A direct run (the engine's own tool call), not a nested stage. */
  readonly direct: boolean
  /** `single`, `parallel` or `chain`. */
  readonly kind: "single" | "parallel" | "chain"
  /** Whether the intercom port is available (the session is on the bus). */
  readonly intercomAvailable: boolean
}

/**
 * The delivery mode of a run (C-WFD-2, open question 8): `enabled: false` is
 * always `off`; otherwise an explicit `delivery`; otherwise `enabled: true`
 * is `control-and-result`; otherwise an async direct `parallel`/`chain` run
 * with intercom available is `control-and-result`; otherwise `off`.
 */
export const resolveDelivery = (option: IntercomOption | undefined, run: RunShape): IntercomDelivery => {
  if (option?.enabled === false) return "off"
  if (option?.delivery !== undefined) return option.delivery
  if (option?.enabled === true) return "control-and-result"
  if (run.async && run.direct && run.kind !== "single" && run.intercomAvailable) return "control-and-result"
  return "off"
}

/** Whether `delivery` sends control notices (C-WFD-3). */
export const sendsControl = (delivery: IntercomDelivery): boolean =>
  delivery === "notify" || delivery === "control-and-result"

/** Whether `delivery` sends the result (C-WFD-3). */
export const sendsResult = (delivery: IntercomDelivery): boolean =>
  delivery === "result" || delivery === "control-and-result"

/**
 * Where notifications go (C-WFD-4): an explicit, non-blank `parentSession`
 * wins, else the intercom port's parent session; undefined when neither is known.
 */
export const resolveTarget = (option: IntercomOption | undefined, portParent: string | undefined): string | undefined => {
  const explicit = option?.parentSession?.trim()
  if (explicit !== undefined && explicit !== "") return explicit
  const fromPort = portParent?.trim()
  return fromPort === undefined || fromPort === "" ? undefined : fromPort
}

/** A resolved list, and whether it came from a level the user wrote (not the default). */
export interface ResolvedList<A extends string> {
  readonly values: ReadonlySet<A>
  readonly explicit: boolean
}

/**
 * Resolves a list setting over its levels, most specific first (C-WFD-8):
 * an absent level defers to the next; unknown entries are dropped; an
 * explicit empty array means nothing; a list whose entries are all unknown
 * falls back to the next level, and after the last one to `defaults`.
 */
export const resolveList = <A extends string>(
  known: ReadonlyArray<A>,
  levels: ReadonlyArray<ReadonlyArray<string> | undefined>,
  defaults: ReadonlyArray<A>
): ResolvedList<A> => {
  const isKnown = (entry: string): entry is A => known.some((k) => k === entry)
  for (const level of levels) {
    if (level === undefined) continue
    if (level.length === 0) return { values: new Set(), explicit: true }
    const valid = level.filter(isKnown)
    if (valid.length > 0) return { values: new Set(valid), explicit: true }
  }
  return { values: new Set(defaults), explicit: false }
}

/** `notifyOn` of control events over its levels (C-WFD-8); `defaults` per run kind (subagent or workflow). */
export const resolveNotifyOn = (
  levels: ReadonlyArray<ReadonlyArray<string> | undefined>,
  defaults: ReadonlyArray<ControlEvent> = DEFAULT_SUBAGENT_NOTIFY_ON
): ResolvedList<ControlEvent> => resolveList(CONTROL_EVENTS, levels, defaults)

/** `notifyChannels` over its levels (C-WFD-8). */
export const resolveNotifyChannels = (
  levels: ReadonlyArray<ReadonlyArray<string> | undefined>
): ResolvedList<NotifyChannel> => resolveList(NOTIFY_CHANNELS, levels, DEFAULT_NOTIFY_CHANNELS)

/** `workflowNotifications.notifyOn` over its levels (C-WFD-14). */
export const resolveLifecycleNotifyOn = (
  levels: ReadonlyArray<ReadonlyArray<string> | undefined>
): ResolvedList<LifecycleEvent> => resolveList(LIFECYCLE_EVENTS, levels, DEFAULT_LIFECYCLE_NOTIFY_ON)

/**
 * Whether `event` goes out on the intercom channel (C-WFD-10, open question
 * 9): only events in `notifyOn`, and `active_long_running` only when a user
 * level listed it explicitly — the default list never sends it over intercom.
 * Sending it when listed departs on purpose from C-WFD-10 (atomic never
 * sends it), as open question 9 suggests: see docs/workflow.md, "Event lists".
 */
export const intercomCarries = (event: ControlEvent, notifyOn: ResolvedList<ControlEvent>): boolean =>
  notifyOn.values.has(event) && (event !== "active_long_running" || notifyOn.explicit)
