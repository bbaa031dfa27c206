/**
 * Size: about 525 lines, one concept: the store's interface and its two
 * implementations side by side, so that they cannot drift apart. Each kind of
 * row has its own module (OwedNotices.ts, WithdrawnAsks.ts, SilencedAsks.ts,
 * the codecs in mailCodec.ts and replayBlock.ts); what is left here is the
 * commit and the load that join them.
 *
 * `MailStore`: the broker's durable routing state — mail that was
 * acknowledged and not yet written to its recipient, the replay records that
 * answer a retried send (P46), the open ask edges a reply needs (P61), the
 * asks withdrawn after their reply closed them (WithdrawnAsks.ts), the
 * failure notices owed to senders (OwedNotices.ts), and the `expired`
 * receipts owed for asks that went silently as answered (SilencedAsks.ts),
 * and the highest stamp the broker gave (0013_stamp_high.ts, BrokerStamps.ts).
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
import { randomUUID } from "node:crypto"
import { SqlClient } from "effect/sql"
import type { AskEdge, Mail } from "./records.ts"
import { textOfHex } from "./nulText.ts"
import { writeFailureOf } from "./errors.ts"
import {
  CorruptRow,
  decodeEdge,
  type DecodedMail,
  decodeMailRow,
  decodeRecord,
  encodeEdge,
  encodeFingerprint,
  encodeMail,
  encodeOutcome,
  type StoredRecord
} from "./mailCodec.ts"
import {
  applyMemoryNotices,
  loadMemoryNotices,
  loadSqliteNotices,
  type MemoryNotices,
  type NoticeChanges,
  noNoticeChanges,
  noticeSteps,
  type RecoveredNotices
} from "./OwedNotices.ts"
import { decodeBlock, encodeBlock, newestAt } from "./replayBlock.ts"
import { type BatchStep, SqliteBatch } from "./SqliteClient.ts"
import {
  applyMemoryWithdrawals,
  loadMemoryWithdrawals,
  loadSqliteWithdrawals,
  type MemoryWithdrawals,
  noWithdrawalChanges,
  type RecoveredWithdrawals,
  type WithdrawalChanges,
  withdrawalSteps
} from "./WithdrawnAsks.ts"
import {
  applyMemorySilenced,
  loadMemorySilenced,
  loadSqliteSilenced,
  type MemorySilenced,
  noSilencedChanges,
  type RecoveredSilenced,
  type SilencedChanges,
  silencedSteps
} from "./SilencedAsks.ts"
import { causeText } from "../protocol/causeText.ts"

export type { StoredRecord } from "./mailCodec.ts"
export type { StoredNotice } from "./OwedNotices.ts"
export type { StoredWithdrawal } from "./WithdrawnAsks.ts"
export type { StoredSilenced } from "./SilencedAsks.ts"

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
      ? `The broker's saved mail cannot be read: ${causeText(this.detail)}`
      : `The broker could not save its mail: ${causeText(this.detail)}`
  }
}

/** Undelivered mail as stored, in acceptance order. */
export interface StoredMail {
  /** Acceptance order, increasing across restarts. */
  readonly seq: number
  readonly mail: Mail
  /**
   * Given back to the mailbox since it was accepted (its recipient's connection closed before confirming it,
   * MailReturns.requeue): the first `seq` the mail accepted after that return got (or will get). `mail.queuedAt`
   * is then when it was given back — the mailbox's retention counts from then — not its acceptance, so it is out
   * of `seq` order: the restore dates it as it restores that `seq`, not its own (Router.restore; docs/store.md).
   * The row keeps its `seq`, its acceptance's. So is marked an ask put back after its reply was lost, stored again
   * under its old row's `seq` (StoreJournal.putAgain): the first `seq` accepted after it was put back.
   */
  readonly givenBack?: number | undefined
}

/**
 * One batch of changes, applied in one transaction (failure notices:
 * `NoticeChanges`; asks withdrawn after their reply closed them: `WithdrawalChanges`;
 * `expired` owed for asks that went silently as answered: `SilencedChanges`).
 */
export interface MailCommit extends NoticeChanges, WithdrawalChanges, SilencedChanges {
  /** Replay records written or rewritten (the last state of each key). */
  readonly records: ReadonlyArray<StoredRecord>
  /** Mail accepted and not yet written. */
  readonly mailPuts: ReadonlyArray<StoredMail>
  /** Mail written to its recipient or dropped (its sender was told), by sequence number (`StoredMail.seq`). */
  readonly mailDeletes: ReadonlyArray<number>
  /**
   * Stored mail written again under its `seq`: given back to the mailbox since it was stored (`StoredMail.givenBack`,
   * its new date). A row no longer there (deleted) is not written again.
   */
  readonly mailUpdates?: ReadonlyArray<StoredMail> | undefined
  /** Ask edges opened. */
  readonly edgePuts: ReadonlyArray<AskEdge>
  /** Ask edges closed (replied, cancelled), by message key. */
  readonly edgeDeletes: ReadonlyArray<string>
  /**
   * Housekeeping, when set: drop replay records recorded before
   * `recordsBefore`, edges whose deadline is at or before `edgesUntil`, and
   * withdrawals no ask can outlive by then (WithdrawnAsks.ts).
   */
  readonly prune?: { readonly recordsBefore: number; readonly edgesUntil: number } | undefined
  /**
   * The highest stamp the broker gave (BrokerStamps.ts), when it changed since the last commit: it replaces
   * the stored one (0013_stamp_high.ts), read back as `Recovered.stampHigh`.
   */
  readonly stampHigh?: number | undefined
}

/** What `load` returns: the state to restore, and the next mail and notice sequence numbers. */
export interface Recovered extends RecoveredNotices, RecoveredWithdrawals, RecoveredSilenced {
  /** Replay records recorded at or after `since`, oldest first. */
  readonly records: ReadonlyArray<StoredRecord>
  /** Undelivered mail, in acceptance order. */
  readonly mail: ReadonlyArray<StoredMail>
  /** Ask edges, in no particular order (expired ones included: the broker prunes them). */
  readonly edges: ReadonlyArray<AskEdge>
  /** One more than the highest mail sequence number ever stored. */
  readonly nextSeq: number
  /**
   * The id of the state this store holds (`state-epoch-v1`): made once, with
   * the store, and the same for every later load of it.
   */
  readonly stateEpoch: string
  /** The highest stamp the last run stored (`MailCommit.stampHigh`), if any: the floor of this run's stamps. */
  readonly stampHigh?: number | undefined
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

/** Stored mail from a decoded row under `seq`: marked given back only when the row says so. */
const storedMailOf = (seq: number, decoded: DecodedMail): StoredMail =>
  decoded.givenBack === undefined ? { seq, mail: decoded.mail } : { seq, mail: decoded.mail, givenBack: decoded.givenBack }

/** A commit that has nothing in it (the writer skips those). */
export const isEmptyCommit = (batch: MailCommit): boolean =>
  batch.records.length === 0 && batch.mailPuts.length === 0 && batch.mailDeletes.length === 0 &&
  (batch.mailUpdates === undefined || batch.mailUpdates.length === 0) &&
  batch.edgePuts.length === 0 && batch.edgeDeletes.length === 0 && batch.prune === undefined && batch.stampHigh === undefined &&
  noNoticeChanges(batch) && noWithdrawalChanges(batch) && noSilencedChanges(batch)

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
  /** Mail by sequence number, as the `mail` table keys it (0006_mail_by_seq.ts). */
  readonly mail: Map<number, { readonly recordKey: string; readonly text: string }>
  readonly edges: Map<string, { readonly deadline: number; readonly text: string }>
  /** Failure notices owed to senders, by their number (OwedNotices.ts). */
  readonly notices: MemoryNotices
  /** Asks withdrawn after their reply closed them: when, by ask key (WithdrawnAsks.ts). */
  readonly withdrawals: MemoryWithdrawals
  /** `expired` owed for asks that went silently as answered, by their reply's key (SilencedAsks.ts). */
  readonly silencedAsks: MemorySilenced
  /** One more than the highest mail sequence number stored. */
  nextSeq: number
  /** The id of the state held here (`Recovered.stateEpoch`): made with the state, outlives every broker that uses it. */
  readonly stateEpoch: string
  /** The highest stamp stored (`MailCommit.stampHigh`, the `stamp_high` row), undefined before the first. */
  stampHigh: number | undefined
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
  notices: new Map(),
  withdrawals: new Map(),
  silencedAsks: new Map(),
  nextSeq: 1,
  stateEpoch: randomUUID(),
  stampHigh: undefined,
  commits: 0,
  down: false
})

/**
 * A row that does not decode fails the load: never skipped, never treated as
 * absent. The error names the row; whoever opened the database names the
 * file (runBroker.ts: `BrokerStartupError`, "StoreUnreadable").
 */
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
      for (const [seq, row] of state.mail) {
        const decoded = decodeMailRow(row.recordKey, row.text)
        if (decoded instanceof CorruptRow) return failCorrupt(decoded)
        mail.push(storedMailOf(seq, decoded))
      }
      mail.sort((a, b) => a.seq - b.seq)
      const edges: Array<AskEdge> = []
      for (const [key, row] of state.edges) {
        const edge = decodeEdge(key, row.text)
        if (edge instanceof CorruptRow) return failCorrupt(edge)
        edges.push(edge)
      }
      const notices = loadMemoryNotices(state.notices)
      if (notices instanceof CorruptRow) return failCorrupt(notices)
      const withdrawals = loadMemoryWithdrawals(state.withdrawals)
      if (withdrawals instanceof CorruptRow) return failCorrupt(withdrawals)
      const silenced = loadMemorySilenced(state.silencedAsks)
      if (silenced instanceof CorruptRow) return failCorrupt(silenced)
      return Effect.succeed({
        records,
        mail,
        edges,
        nextSeq: state.nextSeq,
        stateEpoch: state.stateEpoch,
        stampHigh: state.stampHigh,
        ...notices,
        ...withdrawals,
        ...silenced
      })
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
      // Deletes first, as the SQLite commit: a row put again under its seq (StoreJournal.putAgain) outlives its old delete.
      for (const seq of batch.mailDeletes) state.mail.delete(seq)
      for (const put of batch.mailPuts) {
        state.mail.set(put.seq, { recordKey: put.mail.recordKey, text: encodeMail(put.mail, put.givenBack) })
        if (put.seq >= state.nextSeq) state.nextSeq = put.seq + 1
      }
      for (const update of batch.mailUpdates ?? []) {
        if (state.mail.has(update.seq)) state.mail.set(update.seq, { recordKey: update.mail.recordKey, text: encodeMail(update.mail, update.givenBack) })
      }
      for (const edge of batch.edgePuts) state.edges.set(edge.messageKey, { deadline: edge.deadline, text: encodeEdge(edge) })
      for (const key of batch.edgeDeletes) state.edges.delete(key)
      applyMemoryNotices(state.notices, batch)
      applyMemoryWithdrawals(state.withdrawals, batch, batch.prune?.edgesUntil)
      applyMemorySilenced(state.silencedAsks, batch)
      if (batch.stampHigh !== undefined) state.stampHigh = batch.stampHigh
      if (batch.prune !== undefined) {
        const { edgesUntil, recordsBefore } = batch.prune
        for (const [key, row] of state.records) if (row.at < recordsBefore) state.records.delete(key)
        for (const [key, row] of state.edges) if (row.deadline <= edgesUntil) state.edges.delete(key)
      }
      state.commits++
    })
})

// ---------------------------------------------------------------------------------------------
// The SQLite implementation (schema: migrations/0001_mail.ts, 0006_mail_by_seq.ts, 0007_replay_blocks.ts,
// 0008_owed_notices.ts, 0009_withdrawn_asks.ts, 0010_state_epoch.ts, 0012_silenced_asks.ts, 0013_stamp_high.ts).

const BlockRow = Schema.Struct({ n: Schema.Number, body: Schema.String })
const MailRow = Schema.Struct({ record_key: Schema.String, seq: Schema.Number, body: Schema.String })
const EdgeRow = Schema.Struct({ message_key: Schema.String, body: Schema.String })
const NextSeqRow = Schema.Struct({ next: Schema.Number })
const EpochRow = Schema.Struct({ epoch: Schema.String })
const StampRow = Schema.Struct({ stamp: Schema.Number })

/** Rows of a query, each decoded by `schema`; a row that does not decode fails the load. */
const rowsOf = <S extends Schema.Top>(schema: S, table: string, rows: ReadonlyArray<unknown>) => {
  const decode = Schema.decodeUnknownResult(Schema.toType(schema))
  const out: Array<S["Type"]> = []
  for (const row of rows) {
    const result = decode(row)
    if (result._tag === "Failure") {
      return new CorruptRow({ table, key: "(a row)", detail: String(result.failure) })
    }
    out.push(result.success)
  }
  return out
}

const sqlFailure = (operation: "load" | "commit") => (error: { readonly message: string }) =>
  new MailStoreError({ operation, detail: error.message })

/**
 * Rows per statement run of the commit's mail inserts (`BatchStep.rowsPerInsert`):
 * a commit of a busy tick puts mail for many messages (its replay records
 * are one row, a block, whatever their number).
 */
export const ROWS_PER_INSERT = 16

/** The statements of one commit, in order, each with its rows (steps with no rows are skipped). */
export const commitSteps = (change: MailCommit): ReadonlyArray<BatchStep> => {
  const steps: Array<BatchStep> = [
    {
      // All of the commit's records in one appended row (0007_replay_blocks.ts, replayBlock.ts): blocks
      // are read back in `n` order and their records in order, so a key's last record wins at load.
      sql: "INSERT INTO replay_blocks (newest_at, body) VALUES (?, ?)",
      rows: change.records.length === 0 ? [] : [[newestAt(change.records), encodeBlock(change.records)]]
    },
    {
      // One statement run for all of them (its seqs as one JSON array): a run per row cost about as much
      // again as the row (docs/performance.md, "Durable, seventh stop"). Before the puts: a row put again
      // under its seq (an ask asked again, StoreJournal.putAgain) must outlive its old row's delete.
      sql: "DELETE FROM mail WHERE seq IN (SELECT value FROM json_each(?))",
      rows: change.mailDeletes.length === 0 ? [] : [[JSON.stringify(change.mailDeletes)]]
    },
    {
      // Keyed by its sequence number (0006_mail_by_seq.ts): puts append at the table's end and
      // deletes come in about the same order, so a commit touches a page or two, not one per message.
      sql: "INSERT INTO mail (seq, record_key, body) VALUES (?, ?, ?)",
      rows: change.mailPuts.map((put) => [put.seq, put.mail.recordKey, encodeMail(put.mail, put.givenBack)]),
      rowsPerInsert: ROWS_PER_INSERT
    },
    {
      // Mail given back to the mailbox since it was stored: its row, in its place, takes the new date (`StoredMail.givenBack`).
      sql: "UPDATE mail SET body = ? WHERE seq = ?",
      rows: (change.mailUpdates ?? []).map((update) => [encodeMail(update.mail, update.givenBack), update.seq])
    },
    {
      sql: "INSERT OR REPLACE INTO ask_edges (message_key, deadline, body) VALUES (?, ?, ?)",
      rows: change.edgePuts.map((edge) => [edge.messageKey, edge.deadline, encodeEdge(edge)])
    },
    { sql: "DELETE FROM ask_edges WHERE message_key = ?", rows: change.edgeDeletes.map((key) => [key]) },
    {
      // One row: the highest stamp given so far replaces the one before (lower after a far-future one was capped).
      sql: "INSERT INTO stamp_high (id, stamp) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET stamp = excluded.stamp",
      rows: change.stampHigh === undefined ? [] : [[change.stampHigh]]
    }
  ]
  if (change.prune !== undefined) {
    // A block goes once its newest record is past the window and every block before it has gone: a
    // key's later write (a rewrite keeps the record's first time, so a block of rewrites can be older
    // than the block before it) never goes while an earlier one stays. A record may so outlive the
    // window by as long as a block at or before its own holds a younger record: at most an hour
    // after its block was committed (docs/store.md, "The durability promise").
    steps.push({
      sql: "DELETE FROM replay_blocks WHERE n < (SELECT COALESCE(MIN(n), 9223372036854775807) FROM replay_blocks WHERE newest_at >= ?)",
      rows: [[change.prune.recordsBefore]]
    })
    steps.push({ sql: "DELETE FROM ask_edges WHERE deadline <= ?", rows: [[change.prune.edgesUntil]] })
  }
  steps.push(...noticeSteps(change))
  steps.push(...withdrawalSteps(change, change.prune?.edgesUntil))
  steps.push(...silencedSteps(change))
  return steps
}

/**
 * A `MailStoreService` over the broker's database: one transaction per
 * commit, run as one synchronous step (`SqliteBatch.transact`), each kind of
 * change one prepared statement run for all its rows.
 */
export const makeSqlite: Effect.Effect<MailStoreService, never, SqlClient.SqlClient | SqliteBatch> = Effect.gen(
  function*() {
    const sql = yield* SqlClient.SqlClient
    const batch = yield* SqliteBatch

    const load = (since: number): Effect.Effect<Recovered, MailStoreError> =>
      Effect.gen(function*() {
        const blockRows = rowsOf(
          BlockRow,
          "replay block",
          // The keys in a block, a mail row's record key and an edge's key hold NULs: read as hex (nulText.ts).
          yield* sql`SELECT n, hex(body) AS body FROM replay_blocks WHERE newest_at >= ${since} ORDER BY n`
        )
        if (blockRows instanceof CorruptRow) return yield* failCorrupt(blockRows)
        // In the order they were written: a key's last record is its current state.
        const latest = new Map<string, StoredRecord>()
        for (const row of blockRows) {
          const block = decodeBlock(row.n, textOfHex(row.body))
          if (block instanceof CorruptRow) return yield* failCorrupt(block)
          for (const record of block) {
            if (record.at < since) continue
            latest.delete(record.key)
            latest.set(record.key, record)
          }
        }
        const records = [...latest.values()].sort((a, b) => a.at - b.at)
        const mailRows = rowsOf(MailRow, "mail", yield* sql`SELECT seq, hex(record_key) AS record_key, body FROM mail ORDER BY seq`)
        if (mailRows instanceof CorruptRow) return yield* failCorrupt(mailRows)
        const mail: Array<StoredMail> = []
        for (const row of mailRows) {
          const decoded = decodeMailRow(textOfHex(row.record_key), row.body)
          if (decoded instanceof CorruptRow) return yield* failCorrupt(decoded)
          mail.push(storedMailOf(row.seq, decoded))
        }
        const edgeRows = rowsOf(EdgeRow, "ask edge", yield* sql`SELECT hex(message_key) AS message_key, body FROM ask_edges`)
        if (edgeRows instanceof CorruptRow) return yield* failCorrupt(edgeRows)
        const edges: Array<AskEdge> = []
        for (const row of edgeRows) {
          const edge = decodeEdge(textOfHex(row.message_key), row.body)
          if (edge instanceof CorruptRow) return yield* failCorrupt(edge)
          edges.push(edge)
        }
        const next = rowsOf(NextSeqRow, "mail", yield* sql`SELECT COALESCE(MAX(seq), 0) + 1 AS next FROM mail`)
        if (next instanceof CorruptRow) return yield* failCorrupt(next)
        const notices = yield* Effect.provideService(loadSqliteNotices, SqlClient.SqlClient, sql)
        if (notices instanceof CorruptRow) return yield* failCorrupt(notices)
        const withdrawals = yield* Effect.provideService(loadSqliteWithdrawals, SqlClient.SqlClient, sql)
        if (withdrawals instanceof CorruptRow) return yield* failCorrupt(withdrawals)
        const silenced = yield* Effect.provideService(loadSqliteSilenced, SqlClient.SqlClient, sql)
        if (silenced instanceof CorruptRow) return yield* failCorrupt(silenced)
        // Made by the first load of a database (one row, never changed after), read by every load.
        yield* sql`INSERT OR IGNORE INTO state_epoch (id, epoch) VALUES (1, ${randomUUID()})`
        const epoch = rowsOf(EpochRow, "state epoch", yield* sql`SELECT epoch FROM state_epoch WHERE id = 1`)
        if (epoch instanceof CorruptRow) return yield* failCorrupt(epoch)
        const stateEpoch = epoch[0]?.epoch
        if (stateEpoch === undefined) {
          return yield* failCorrupt(new CorruptRow({ table: "state epoch", key: "1", detail: "the row is missing" }))
        }
        const stamp = rowsOf(StampRow, "stamp high", yield* sql`SELECT stamp FROM stamp_high WHERE id = 1`)
        if (stamp instanceof CorruptRow) return yield* failCorrupt(stamp)
        const stampHigh = stamp[0]?.stamp
        return { records, mail, edges, nextSeq: next[0]?.next ?? 1, stateEpoch, stampHigh, ...notices, ...withdrawals, ...silenced }
      }).pipe(Effect.catchTag("SqlError", (error) => Effect.fail(sqlFailure("load")(error))))

    // One synchronous step on prepared statements (SqliteBatch.transact): per commit, effect/sql's
    // transaction and per-statement Effects cost more CPU than SQLite's own work (docs/performance.md).
    const commit = (change: MailCommit): Effect.Effect<void, MailStoreError> =>
      batch.transact(commitSteps(change)).pipe(
        Effect.asVoid,
        Effect.catchTag("SqlError", (error) =>
          Effect.fail(new MailStoreError({ operation: "commit", detail: (writeFailureOf(error) ?? error).message })))
      )

    return { durable: true, load, commit } satisfies MailStoreService
  }
)

/**
 * The broker's durable routing state. `MailStore.memory(state)` keeps it in
 * `state` (tests, the simulation); `MailStore.sqlite` in the broker's database.
 */
export class MailStore extends Context.Service<MailStore, MailStoreService>()("effect-intercom/store/MailStore") {
  /** A memory store over `state` (a fresh one when omitted). */
  static readonly memory = (state: MemoryMailState = makeMemoryMailState()): Layer.Layer<MailStore> =>
    Layer.succeed(MailStore, makeMemory(state))
  /** The SQLite store, over the database's `SqlClient` and `SqliteBatch` (`Database.layer`). */
  static readonly sqlite: Layer.Layer<MailStore, never, SqlClient.SqlClient | SqliteBatch> = Layer.effect(
    MailStore,
    makeSqlite
  )
}
