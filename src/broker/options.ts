/** Broker settings, with the pi-intercom defaults (section 0 of the protocol spec). */
import { Duration } from "effect"

export interface BrokerOptions {
  /** `<agentDir>/intercom`: created with mode 0700 and re-chmodded on every start (P81). */
  readonly intercomDir: string
  /** Where to listen; normally `<intercomDir>/broker.sock`, or a short fallback path. */
  readonly socketPath: string
  /** Live sessions allowed at once (P18; ours is configurable). Default 16384. */
  readonly maxSessions?: number
  /** Connections allowed to sit unregistered; the oldest is dropped past it (P15). Default 32. */
  readonly maxUnregistered?: number
  /** How long a connection may stay unregistered (P15). Default 1 s. */
  readonly registrationTimeout?: Duration.Input
  /** Exit this long after the last session leaves (P92); `null` never exits. Default 5 s. */
  readonly idleExit?: Duration.Input | null
  /** Lifetime of an ask edge (P61). Default 10 minutes. */
  readonly askTimeout?: Duration.Input
  /** Frames a connection's outbound queue holds before its senders are slowed. Default 1024. */
  readonly outboxCapacity?: number
  /** Write `broker.pid` (P91). Default true; in-process test brokers may turn it off. */
  readonly writePidFile?: boolean
}

export interface ResolvedBrokerOptions {
  readonly intercomDir: string
  readonly socketPath: string
  readonly maxSessions: number
  readonly maxUnregistered: number
  readonly registrationTimeoutMs: number
  readonly idleExitMs: number | null
  readonly askTimeoutMs: number
  readonly outboxCapacity: number
  readonly writePidFile: boolean
}

export const DEFAULT_MAX_SESSIONS = 16_384

export const resolveOptions = (options: BrokerOptions): ResolvedBrokerOptions => ({
  intercomDir: options.intercomDir,
  socketPath: options.socketPath,
  maxSessions: options.maxSessions ?? DEFAULT_MAX_SESSIONS,
  maxUnregistered: options.maxUnregistered ?? 32,
  registrationTimeoutMs: Duration.toMillis(Duration.fromInputUnsafe(options.registrationTimeout ?? Duration.seconds(1))),
  idleExitMs: options.idleExit === null
    ? null
    : Duration.toMillis(Duration.fromInputUnsafe(options.idleExit ?? Duration.seconds(5))),
  askTimeoutMs: Duration.toMillis(Duration.fromInputUnsafe(options.askTimeout ?? Duration.minutes(10))),
  outboxCapacity: options.outboxCapacity ?? 1024,
  writePidFile: options.writePidFile ?? true
})
