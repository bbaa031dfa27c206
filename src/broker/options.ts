/**
 * Broker settings, with the pi-intercom defaults (section 0 of the protocol
 * spec), and what each may hold (`BROKER_OPTION_RULES`): the one definition
 * that `Broker.make`/`runBroker` check (`checkCoreOptions`) and the CLI's
 * flags filter with (`brokerOptionProblem`), so that the two cannot drift.
 */
import { Duration, Effect, Option, Schema } from "effect"
import { MAX_IDS } from "./ClientInstances.ts"
import { BrokerOptionError } from "./errors.ts"
import type { MailStoreService } from "../store/MailStore.ts"
import type { WarmUpPlan } from "./WarmUp.ts"

/** Routing settings: what the broker core needs, whatever the transport. */
export interface BrokerCoreOptions {
  /**
   * Where the broker keeps its routing state durably (mail not yet written,
   * replay records, open ask edges; `MailStore`): restored at startup,
   * committed in batches, and no output leaves before what preceded it is
   * stored. Omitted: memory only, lost with the process.
   */
  readonly store?: MailStoreService | undefined
  /** Live sessions allowed at once (P18; ours is configurable). Default 50,000. */
  readonly maxSessions?: number
  /**
   * Connections that may wait to register at once (P15); more connections
   * wait, until one of those registers or closes; one that closes while it
   * waits never registers (Waiting.ts). Default 32.
   */
  readonly maxUnregistered?: number
  /** How long a connection may stay unregistered (P15). Default 1 s. */
  readonly registrationTimeout?: Duration.Input
  /**
   * Exit this long after the last session leaves (P92), or after startup if
   * no session has come yet; `null` never exits. Default 5 s.
   */
  readonly idleExit?: Duration.Input | null
  /** Lifetime of an ask edge (P61). Default 10 minutes. */
  readonly askTimeout?: Duration.Input
  /**
   * The coalescing window of `replace` messages (`delivery-v1`, C-DLV-5): how
   * long after the first message of a (sender, recipient, thread) is staged
   * the latest one is delivered. Default 1500 ms.
   */
  readonly replaceWindow?: Duration.Input
  /** Frames a connection's outbound queue holds before its senders are slowed. Default 1024. */
  readonly outboxCapacity?: number
  /**
   * Characters of frame text a connection held back behind its parked output
   * keeps before it stops being read at all (PeerReader.ts); the same bound
   * for a connection waiting for admission (Waiting.ts). Default 1 MiB
   * (`DEFAULT_HELD_LIMIT`); the simulation makes it small so that its
   * workloads reach a paused reader without megabytes of traffic.
   */
  readonly heldLimit?: number
  /**
   * Characters of frame text a connection's outbound queue holds before its
   * senders are slowed (one frame is always let in). Default 4 Mi (4–12 MiB).
   */
  readonly outboxChars?: number
  /**
   * Characters of frame text all outbound queues together hold before
   * senders are slowed (each queue still takes one frame when it is empty).
   * Default 32 Mi (32–96 MiB): sessions that do not read cannot together
   * make the broker hold more.
   */
  readonly outboxCharsTotal?: number
  /**
   * Messages the mailbox keeps for disconnected sessions, overall. Default
   * 4,096 (pi-intercom keeps 256, P49; the byte bounds below are what bound
   * memory, and more places mean one busy sender evicts less).
   */
  readonly mailboxCapacity?: number
  /** About how many bytes of mail the mailbox keeps, overall. Default 64 MiB. */
  readonly mailboxBytes?: number
  /** About how many bytes of mail the mailbox keeps for one recipient. Default 16 MiB. */
  readonly mailboxBytesPerTarget?: number
  /**
   * How long mail waits in the mailbox for a session that is away before it
   * expires and its sender is told (an `expired` receipt). From 1 second to
   * 30 days (`BROKER_OPTION_RULES`; anything else fails the broker's start).
   * Default 24 hours.
   */
  readonly mailboxRetention?: Duration.Input
  /**
   * Replay records kept at most, overall (P46; see DeliveryRecords.ts). Each is
   * kept at least REPLAY_WINDOW_MS; past this bound the heaviest sender loses
   * its oldest first. Default 262,144.
   */
  readonly replayRecords?: number
  /** Approximate bytes the replay records may take, overall. Default 64 MiB. */
  readonly replayBytes?: number
  /**
   * Topic records and subscriptions one group of a scope keeps together
   * (extension `topics-v1`); past it a new one is refused. Default 4,096.
   */
  readonly topicEntriesPerGroup?: number
  /**
   * Topic records the broker keeps over all groups and scopes (extension
   * `topics-v1`); past it the records of publishers that left go first,
   * oldest departure first, then the records published longest ago, and
   * the new one is kept. Default 65,536.
   */
  readonly topicRecords?: number
  /**
   * About how many bytes the topic records may take over all groups and
   * scopes (`topicRecordBytes` in Topics.ts); evicted past it in the same
   * order as past `topicRecords`. Default 64 MiB.
   */
  readonly topicBytes?: number
  /**
   * Departed session ids whose client instances the broker keeps, over all
   * scopes (ClientInstances.ts: whether a later registration of the id is
   * one of them returning); past it the id noted least recently is
   * forgotten. An internal bound with no CLI flag: tests make it small so
   * as to cross it without 65,536 registrations. The table's bytes stay
   * bounded by `MAX_BYTES` (about 24 MiB) whatever this is. Default 65,536
   * (`MAX_IDS`).
   */
  readonly clientInstanceIds?: number
}

/** The Unix-socket broker: core settings plus where its files live. */
export interface BrokerOptions extends BrokerCoreOptions {
  /** `<agentDir>/intercom`: created with mode 0700 and re-chmodded on every start (P81). */
  readonly intercomDir: string
  /** Where to listen; normally `<intercomDir>/broker.sock`, or a short fallback path. */
  readonly socketPath: string
  /** Write `broker.pid` (P91). Default true; in-process test brokers may turn it off. */
  readonly writePidFile?: boolean
  /**
   * Where the broker keeps its state (docs/store.md): `"sqlite"` (default)
   * opens `<intercomDir>/intercom.db` and loses no acknowledged message when
   * the process dies; `"memory"` keeps it in memory only. Ignored when a
   * `store` is given.
   */
  readonly durability?: "sqlite" | "memory" | undefined
  /**
   * Once it listens, run the broker's own per-frame path on synthetic
   * traffic, in a private copy, until V8 has optimized it (WarmUp.ts): about
   * a quarter of a second of CPU, in the background, invisible to clients.
   * Default false here; `intercom broker` turns it on (`--warm-up on|off`).
   * A plan instead of `true` sizes it (tests).
   */
  readonly warmUp?: boolean | WarmUpPlan | undefined
}

/** `BrokerCoreOptions` with every default applied and durations in milliseconds. */
export interface ResolvedCoreOptions {
  readonly maxSessions: number
  readonly maxUnregistered: number
  readonly registrationTimeoutMs: number
  readonly idleExitMs: number | null
  readonly askTimeoutMs: number
  readonly replaceWindowMs: number
  readonly outboxCapacity: number
  readonly heldLimit: number
  readonly outboxChars: number
  readonly outboxCharsTotal: number
  readonly mailboxCapacity: number
  readonly mailboxBytes: number
  readonly mailboxBytesPerTarget: number
  readonly mailboxRetentionMs: number
  readonly replayRecords: number
  readonly replayBytes: number
  readonly topicEntriesPerGroup: number
  readonly topicRecords: number
  readonly topicBytes: number
  readonly clientInstanceIds: number
}

/** The default mailbox retention (`--mailbox-retention`): 24 hours. */
export const DEFAULT_MAILBOX_RETENTION_MS = 86_400_000

/** The shortest mailbox retention: 1 second. */
export const MIN_MAILBOX_RETENTION_MS = 1_000

/** The longest mailbox retention: 30 days (the mailbox is memory; its byte bounds still apply). */
export const MAX_MAILBOX_RETENTION_MS = 30 * 86_400_000

/** The default bound on topic records and subscriptions per group (`--topic-entries`). */
export const DEFAULT_TOPIC_ENTRIES_PER_GROUP = 4096

/** The default bound on topic records over all groups (`--topic-records`). */
export const DEFAULT_TOPIC_RECORDS = 65_536

/** The default bound on the bytes of topic records over all groups (`--topic-bytes`): 64 MiB. */
export const DEFAULT_TOPIC_BYTES = 64 * 1024 * 1024

/** The default coalescing window of `replace` messages (`--replace-window`). */
export const DEFAULT_REPLACE_WINDOW_MS = 1500

/** The default `heldLimit`: 1 MiB of held frame text. */
export const DEFAULT_HELD_LIMIT = 1_048_576

/** The default session cap (`--max-sessions`). */
export const DEFAULT_MAX_SESSIONS = 50_000

const millis = (input: Duration.Input | undefined, fallback: Duration.Duration): number =>
  Duration.toMillis(input === undefined ? fallback : Duration.fromInputUnsafe(input))

/**
 * Applies the defaults to `BrokerCoreOptions`, which `checkCoreOptions` has
 * accepted (an unchecked invalid duration string throws here).
 */
export const resolveCoreOptions = (options: BrokerCoreOptions): ResolvedCoreOptions => ({
  maxSessions: options.maxSessions ?? DEFAULT_MAX_SESSIONS,
  maxUnregistered: options.maxUnregistered ?? 32,
  registrationTimeoutMs: millis(options.registrationTimeout, Duration.seconds(1)),
  idleExitMs: options.idleExit === null ? null : millis(options.idleExit, Duration.seconds(5)),
  askTimeoutMs: millis(options.askTimeout, Duration.minutes(10)),
  replaceWindowMs: millis(options.replaceWindow, Duration.millis(DEFAULT_REPLACE_WINDOW_MS)),
  outboxCapacity: options.outboxCapacity ?? 1024,
  heldLimit: options.heldLimit ?? DEFAULT_HELD_LIMIT,
  outboxChars: options.outboxChars ?? 4 * 1024 * 1024,
  outboxCharsTotal: options.outboxCharsTotal ?? 32 * 1024 * 1024,
  mailboxCapacity: options.mailboxCapacity ?? 4096,
  mailboxBytes: options.mailboxBytes ?? 64 * 1024 * 1024,
  mailboxBytesPerTarget: options.mailboxBytesPerTarget ?? 16 * 1024 * 1024,
  mailboxRetentionMs: millis(options.mailboxRetention, Duration.millis(DEFAULT_MAILBOX_RETENTION_MS)),
  replayRecords: options.replayRecords ?? 262_144,
  replayBytes: options.replayBytes ?? 64 * 1024 * 1024,
  topicEntriesPerGroup: options.topicEntriesPerGroup ?? DEFAULT_TOPIC_ENTRIES_PER_GROUP,
  topicRecords: options.topicRecords ?? DEFAULT_TOPIC_RECORDS,
  topicBytes: options.topicBytes ?? DEFAULT_TOPIC_BYTES,
  clientInstanceIds: options.clientInstanceIds ?? MAX_IDS
})

/** The longest duration a broker option takes: 30 days (what `mailboxRetention` and `askTimeout` allow). */
export const MAX_OPTION_DURATION_MS = 30 * 86_400_000

/** A count (sessions, frames, messages, records): a whole number from 1. */
export const OptionCount = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))

/** A size (bytes, or characters of frame text): a whole number from 1. */
export const OptionSize = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))

/** A duration, in milliseconds: a whole number from 1 to `MAX_OPTION_DURATION_MS`. */
export const OptionDurationMs = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: MAX_OPTION_DURATION_MS }))

/** A mailbox retention, in milliseconds: a whole number from 1 second to 30 days. */
export const MailboxRetentionMs = Schema.Int.check(
  Schema.isBetween({ minimum: MIN_MAILBOX_RETENTION_MS, maximum: MAX_MAILBOX_RETENTION_MS })
)

/**
 * How one broker option is checked: `kind` says whether its value is a
 * number (`count`, `size`) or a `Duration.Input` checked in milliseconds
 * (`duration`); `is` is its Schema's guard; `allowed` says what it allows,
 * in the words of the error.
 */
export interface OptionRule {
  readonly kind: "count" | "size" | "duration"
  readonly is: (value: unknown) => boolean
  readonly allowed: string
}

const rule = (kind: OptionRule["kind"], schema: Schema.Top, allowed: string): OptionRule => ({
  kind,
  is: Schema.is(schema),
  allowed
})

const COUNT = rule("count", OptionCount, "a whole number ≥ 1")
const SIZE = rule("size", OptionSize, "a whole number ≥ 1")
const DURATION = rule(
  "duration",
  OptionDurationMs,
  "a duration from 1 ms to 30 days (a whole number of milliseconds)"
)

/** A broker option that `BROKER_OPTION_RULES` checks: every one of `BrokerCoreOptions` but `store`. */
export type CheckedOption = Exclude<keyof BrokerCoreOptions, "store">

/**
 * What every broker option may hold, as a Schema check and in words: the one
 * definition behind `checkCoreOptions` (code) and the CLI's flags
 * (`brokerOptionProblem`). An option left out takes its default; `idleExit`
 * may also be `null` (never exit).
 */
export const BROKER_OPTION_RULES: { readonly [K in CheckedOption]: OptionRule } = {
  maxSessions: COUNT,
  maxUnregistered: COUNT,
  registrationTimeout: DURATION,
  idleExit: { ...DURATION, allowed: `${DURATION.allowed}, or null (never)` },
  askTimeout: DURATION,
  replaceWindow: DURATION,
  outboxCapacity: COUNT,
  heldLimit: SIZE,
  outboxChars: SIZE,
  outboxCharsTotal: SIZE,
  mailboxCapacity: COUNT,
  mailboxBytes: SIZE,
  mailboxBytesPerTarget: SIZE,
  mailboxRetention: rule(
    "duration",
    MailboxRetentionMs,
    `a duration from 1 second to 30 days (a whole number of milliseconds from ${MIN_MAILBOX_RETENTION_MS} to ${MAX_MAILBOX_RETENTION_MS})`
  ),
  replayRecords: COUNT,
  replayBytes: COUNT,
  topicEntriesPerGroup: COUNT,
  topicRecords: COUNT,
  topicBytes: SIZE,
  clientInstanceIds: COUNT
}

const CHECKED_OPTIONS = Object.keys(BROKER_OPTION_RULES).filter((key): key is CheckedOption =>
  Object.hasOwn(BROKER_OPTION_RULES, key)
)

/** A duration input in milliseconds (a number is milliseconds already); undefined when it is no duration. */
const durationMillis = (value: Duration.Input): number | undefined =>
  typeof value === "number" ? value : Option.getOrUndefined(Option.map(Duration.fromInput(value), Duration.toMillis))

/** `value` as the error shows it: numbers as they print (`NaN`, `-1`), strings quoted, other durations in ms. */
const shown = (value: Duration.Input | null): string => {
  if (typeof value === "string") return JSON.stringify(value)
  if (typeof value === "number" || typeof value === "bigint" || value === null) return String(value)
  const ms = durationMillis(value)
  return ms === undefined ? String(value) : `${ms} ms`
}

/**
 * Why `value` cannot be broker option `option`, or undefined when it can
 * (undefined, the default, always can): `BROKER_OPTION_RULES` applied to one
 * value. The CLI's flags filter with it, so a flag and the same option set in
 * code are held to the same rule.
 *
 * @example
 * brokerOptionProblem("topicRecords", NaN)?.message // "topicRecords must be a whole number ≥ 1, got NaN"
 */
export const brokerOptionProblem = (
  option: CheckedOption,
  value: Duration.Input | null | undefined
): BrokerOptionError | undefined => {
  if (value === undefined || (option === "idleExit" && value === null)) return undefined
  const check = BROKER_OPTION_RULES[option]
  const ok = value !== null && (check.kind === "duration" ? check.is(durationMillis(value)) : check.is(value))
  return ok ? undefined : new BrokerOptionError({ option, allowed: check.allowed, value: shown(value) })
}

/**
 * Fails with the first option of `options` that `BROKER_OPTION_RULES` does not
 * allow (`BrokerOptionError`, which names it, what it allows and the value);
 * succeeds with nothing when all are allowed. `Broker.make` and `runBroker`
 * run it before they start anything.
 */
export const checkCoreOptions = (options: BrokerCoreOptions): Effect.Effect<void, BrokerOptionError> => {
  for (const option of CHECKED_OPTIONS) {
    const problem = brokerOptionProblem(option, options[option])
    if (problem !== undefined) return Effect.fail(problem)
  }
  return Effect.void
}
