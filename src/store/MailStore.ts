/**
 * `MailStore`: the broker's durable routing state — mail that was
 * acknowledged and not yet written to its recipient, the replay records that
 * answer a retried send (P46), and the open ask edges a reply needs (P61).
 *
 * The broker never reads it while it routes: its in-memory tables are the
 * working set, and the store is their write-behind copy, committed in batches
 * (one transaction per `commit`) by the broker's store writer
 * (`src/broker/StoreWriter.ts`) and read once, at startup (`load`), to
 * restore them after a crash or a restart.
 *
 * Two implementations: `MailStore.sqlite` over effect's `SqlClient` (the
 * broker's database, docs/store.md) and `MailStore.memory`, whose state can
 * be made outside a broker so that it outlives a simulated crash, as a disk
 * would.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { MailStore, makeMemoryMailState } from "effect-intercom/store"
 *
 * const disk = makeMemoryMailState() // outlives every broker that uses it
 * const program = Effect.gen(function*() {
 *   const store = yield* MailStore
 *   const recovered = yield* store.load(0)
 *   return recovered.mail.length
 * }).pipe(Effect.provide(MailStore.memory(disk)))
 * ```
 */
import { Context, Data, Effect, Layer, Schema } from "effect"
import type { AskEdge } from "../broker/AskEdges.ts"
import type { Fingerprint, Outcome } from "../broker/DeliveryRecords.ts"
import type { Mail } from "../broker/Peer.ts"
import { decodeMessage, isFrameDecodeError } from "../protocol/decode.ts"
import { DeliveryCode } from "../protocol/delivery.ts"

/**
 * The store could not load or commit: `detail` says what went wrong, and the
 * message what it means for the caller. A failed commit stored nothing of its
 * batch; the broker keeps the batch and refuses new sends until it can.
 */
export class MailStoreError extends Data.TaggedError("MailStoreError")<{
  readonly operation: "load" | "commit"
  readonly detail: string
}> {
  override get message(): string {
    return this.operation === "load"
      ? `The broker's saved mail cannot be read: ${this.detail}`
      : `The broker could not save its mail: ${this.detail}`
  }
}

/** A replay record as stored: the outcome of one (sender, message id). */
export interface StoredRecord {
  /** The record key (`recordKeyOf(sender, id)`). */
  readonly key: string
  /** The sender's registry key. */
  readonly sender: string
  readonly fingerprint: Fingerprint
  readonly outcome: Outcome
  /** When it was recorded (broker clock, ms). */
  readonly at: number
}

/** Undelivered mail as stored, in acceptance order. */
export interface StoredMail {
  /** Acceptance order, increasing across restarts. */
  readonly seq: number
  readonly mail: Mail
}

/** One batch of changes, applied in one transaction. */
export interface MailCommit {
  /** Replay records written or rewritten (the last state of each key). */
  readonly records: ReadonlyArray<StoredRecord>
  /** Mail accepted and not yet written. */
  readonly mailPuts: ReadonlyArray<StoredMail>
  /** Mail written to its recipient or dropped (its sender was told), by record key. */
  readonly mailDeletes: ReadonlyArray<string>
  /** Ask edges opened. */
  readonly edgePuts: ReadonlyArray<AskEdge>
  /** Ask edges closed (replied, cancelled), by message key. */
  readonly edgeDeletes: ReadonlyArray<string>
  /**
   * Housekeeping, when set: drop replay records recorded before
   * `recordsBefore` and edges whose deadline is at or before `edgesUntil`.
   */
  readonly prune?: { readonly recordsBefore: number; readonly edgesUntil: number } | undefined
}

/** What `load` returns: the state to restore, and the next mail sequence number. */
export interface Recovered {
  /** Replay records recorded at or after `since`, oldest first. */
  readonly records: ReadonlyArray<StoredRecord>
  /** Undelivered mail, in acceptance order. */
  readonly mail: ReadonlyArray<StoredMail>
  /** Ask edges, in no particular order (expired ones included: the broker prunes them). */
  readonly edges: ReadonlyArray<AskEdge>
  /** One more than the highest mail sequence number ever stored. */
  readonly nextSeq: number
}

/** The store's operations; see the module header. */
export interface MailStoreService {
  /** Whether what it stores survives the process (`sqlite`) or not (`memory`). */
  readonly durable: boolean
  /** The saved state, with replay records recorded at or after `since` (broker clock, ms). */
  readonly load: (since: number) => Effect.Effect<Recovered, MailStoreError>
  /** Applies one batch in one transaction: all of it is stored, or none of it and the error says why. */
  readonly commit: (batch: MailCommit) => Effect.Effect<void, MailStoreError>
}

/** A commit that has nothing in it (the writer skips those). */
export const isEmptyCommit = (batch: MailCommit): boolean =>
  batch.records.length === 0 && batch.mailPuts.length === 0 && batch.mailDeletes.length === 0 &&
  batch.edgePuts.length === 0 && batch.edgeDeletes.length === 0 && batch.prune === undefined

// ---------------------------------------------------------------------------------------------
// Encoding: rows keep JSON text, decoded by Schema on load (a row that does not decode is an error
// naming the row, never silently skipped).

const Code = Schema.Literals(Object.values(DeliveryCode))

const OutcomeSchema = Schema.Union([
  Schema.Struct({ ok: Schema.Literal(true), delivery: Schema.Literals(["socket_delivered", "queued"]) }),
  Schema.Struct({ ok: Schema.Literal(false), code: Code, reason: Schema.String, retryable: Schema.Boolean })
])

const FingerprintSchema = Schema.Struct({
  targetId: Schema.String,
  textLength: Schema.Number,
  textHash: Schema.Number,
  attachmentsLength: Schema.Number,
  attachmentsHash: Schema.Number,
  replyTo: Schema.optional(Schema.String),
  expectsReply: Schema.optional(Schema.Boolean),
  supersedes: Schema.optional(Schema.String),
  retryOf: Schema.optional(Schema.String),
  replyErrorLength: Schema.Number,
  replyErrorHash: Schema.Number
})

const DeliverySchema = Schema.Struct({
  delivery: Schema.Literals(["steer", "queue", "passive"]),
  queueMode: Schema.optional(Schema.Literals(["stack", "replace"])),
  threadId: Schema.optional(Schema.String)
})

const MailSchema = Schema.Struct({
  recordKey: Schema.String,
  senderKey: Schema.String,
  senderId: Schema.String,
  senderIdentity: Schema.optional(Schema.String),
  fromJson: Schema.String,
  message: Schema.Unknown,
  brokerReceivedAt: Schema.Number,
  spaceKey: Schema.String,
  targetKey: Schema.String,
  targetId: Schema.String,
  targetIdentity: Schema.optional(Schema.String),
  queuedAt: Schema.Number,
  askTimeoutMs: Schema.optional(Schema.Number),
  channel: Schema.optional(Schema.Literal("supervisor")),
  replyError: Schema.optional(Schema.String),
  delivery: Schema.optional(DeliverySchema)
})

const EdgeSchema = Schema.Struct({
  messageKey: Schema.String,
  messageId: Schema.String,
  askerKey: Schema.String,
  targetKey: Schema.String,
  deadline: Schema.Number
})

/** JSON text of a fingerprint (its `undefined` fields left out). */
export const encodeFingerprint = (fingerprint: Fingerprint): string => JSON.stringify(fingerprint)

/** JSON text of an outcome. */
export const encodeOutcome = (outcome: Outcome): string => JSON.stringify(outcome)

/** JSON text of mail, message included. */
export const encodeMail = (mail: Mail): string => JSON.stringify(mail)

/** JSON text of an ask edge. */
export const encodeEdge = (edge: AskEdge): string => JSON.stringify(edge)

/** A stored row that does not decode: what it was and why. */
export class CorruptRow extends Data.TaggedError("CorruptRow")<{
  readonly table: string
  readonly key: string
  readonly detail: string
}> {
  override get message(): string {
    return `stored ${this.table} ${JSON.stringify(this.key)} does not decode (${this.detail})`
  }
}

const parseJson = (table: string, key: string, text: string): unknown | CorruptRow => {
  try {
    return JSON.parse(text)
  } catch (cause) {
    return new CorruptRow({ table, key, detail: cause instanceof Error ? cause.message : String(cause) })
  }
}

const decodeWith = <S extends Schema.Top>(schema: S, table: string) => {
  const decode = Schema.decodeUnknownResult(Schema.toType(schema))
  return (key: string, text: string): S["Type"] | CorruptRow => {
    const json = parseJson(table, key, text)
    if (json instanceof CorruptRow) return json
    const result = decode(json)
    return result._tag === "Success" ? result.success : new CorruptRow({ table, key, detail: String(result.failure) })
  }
}

const decodeFingerprintRow = decodeWith(FingerprintSchema, "replay record")
const decodeOutcomeRow = decodeWith(OutcomeSchema, "replay record")
const decodeMailRow = decodeWith(MailSchema, "mail")
const decodeEdgeRow = decodeWith(EdgeSchema, "ask edge")

/** Decodes a stored replay record's fingerprint and outcome. */
export const decodeRecord = (
  key: string,
  sender: string,
  fingerprint: string,
  outcome: string,
  at: number
): StoredRecord | CorruptRow => {
  const f = decodeFingerprintRow(key, fingerprint)
  if (f instanceof CorruptRow) return f
  const o = decodeOutcomeRow(key, outcome)
  if (o instanceof CorruptRow) return o
  return {
    key,
    sender,
    fingerprint: { ...f, replyTo: f.replyTo, expectsReply: f.expectsReply, supersedes: f.supersedes, retryOf: f.retryOf },
    outcome: o,
    at
  }
}

/** Decodes stored mail (its message through the protocol's own decoder). */
export const decodeMail = (key: string, text: string): Mail | CorruptRow => {
  const row = decodeMailRow(key, text)
  if (row instanceof CorruptRow) return row
  const message = decodeMessage(row.message)
  if (isFrameDecodeError(message)) return new CorruptRow({ table: "mail", key, detail: message.message })
  return {
    ...row,
    senderIdentity: row.senderIdentity,
    targetIdentity: row.targetIdentity,
    askTimeoutMs: row.askTimeoutMs,
    message
  }
}

/** Decodes a stored ask edge. */
export const decodeEdge = (key: string, text: string): AskEdge | CorruptRow => decodeEdgeRow(key, text)

// ---------------------------------------------------------------------------------------------
// The memory implementation.

/**
 * The memory store's "disk": plain maps, made by the caller so that they can
 * outlive a broker (the simulation keeps one per world across crashes).
 * Values are kept as the JSON text a database would hold, so a restore
 * decodes exactly what the SQLite store would.
 */
export interface MemoryMailState {
  readonly records: Map<string, { readonly sender: string; readonly fingerprint: string; readonly outcome: string; readonly at: number }>
  readonly mail: Map<string, { readonly seq: number; readonly text: string }>
  readonly edges: Map<string, { readonly deadline: number; readonly text: string }>
  /** One more than the highest mail sequence number stored. */
  nextSeq: number
  /** Commits applied (for tests and the simulation's report). */
  commits: number
  /**
   * Set while the broker using it is dying (a simulated kill -9): its last
   * commits never reach the "disk", as a killed process's would not.
   */
  down: boolean
}

/** An empty memory store state. */
export const makeMemoryMailState = (): MemoryMailState => ({
  records: new Map(),
  mail: new Map(),
  edges: new Map(),
  nextSeq: 1,
  commits: 0,
  down: false
})

/** A row that does not decode fails the load: never skipped, never treated as absent. */
export const failCorrupt = (error: CorruptRow): Effect.Effect<never, MailStoreError> =>
  Effect.fail(new MailStoreError({ operation: "load", detail: error.message }))

/** A `MailStoreService` over `state` (see `MemoryMailState`). */
export const makeMemory = (state: MemoryMailState): MailStoreService => ({
  durable: false,
  load: (since) =>
    Effect.suspend(() => {
      const records: Array<StoredRecord> = []
      for (const [key, row] of state.records) {
        if (row.at < since) continue
        const record = decodeRecord(key, row.sender, row.fingerprint, row.outcome, row.at)
        if (record instanceof CorruptRow) return failCorrupt(record)
        records.push(record)
      }
      records.sort((a, b) => a.at - b.at)
      const mail: Array<StoredMail> = []
      for (const [key, row] of state.mail) {
        const decoded = decodeMail(key, row.text)
        if (decoded instanceof CorruptRow) return failCorrupt(decoded)
        mail.push({ seq: row.seq, mail: decoded })
      }
      mail.sort((a, b) => a.seq - b.seq)
      const edges: Array<AskEdge> = []
      for (const [key, row] of state.edges) {
        const edge = decodeEdge(key, row.text)
        if (edge instanceof CorruptRow) return failCorrupt(edge)
        edges.push(edge)
      }
      return Effect.succeed({ records, mail, edges, nextSeq: state.nextSeq })
    }),
  commit: (batch) =>
    state.down ? Effect.fail(new MailStoreError({ operation: "commit", detail: "the process is gone" })) : Effect.sync(() => {
      for (const record of batch.records) {
        state.records.set(record.key, {
          sender: record.sender,
          fingerprint: encodeFingerprint(record.fingerprint),
          outcome: encodeOutcome(record.outcome),
          at: record.at
        })
      }
      for (const put of batch.mailPuts) {
        state.mail.set(put.mail.recordKey, { seq: put.seq, text: encodeMail(put.mail) })
        if (put.seq >= state.nextSeq) state.nextSeq = put.seq + 1
      }
      for (const key of batch.mailDeletes) state.mail.delete(key)
      for (const edge of batch.edgePuts) state.edges.set(edge.messageKey, { deadline: edge.deadline, text: encodeEdge(edge) })
      for (const key of batch.edgeDeletes) state.edges.delete(key)
      if (batch.prune !== undefined) {
        const { edgesUntil, recordsBefore } = batch.prune
        for (const [key, row] of state.records) if (row.at < recordsBefore) state.records.delete(key)
        for (const [key, row] of state.edges) if (row.deadline <= edgesUntil) state.edges.delete(key)
      }
      state.commits++
    })
})

/**
 * The broker's durable routing state. `MailStore.memory(state)` keeps it in
 * `state` (tests, the simulation); `MailStore.sqlite` in the broker's database.
 */
export class MailStore extends Context.Service<MailStore, MailStoreService>()("effect-intercom/store/MailStore") {
  /** A memory store over `state` (a fresh one when omitted). */
  static readonly memory = (state: MemoryMailState = makeMemoryMailState()): Layer.Layer<MailStore> =>
    Layer.succeed(MailStore, makeMemory(state))
}
