/**
 * The store's part of the `expired` receipts owed for asks that went
 * silently as answered (StaleAsks.ts, `silenced`; review revs
 * S1): an ask given back past its deadline whose copy a reply had answered
 * is dropped without a word, and its asker is owed the ask's `expired`
 * should that reply be lost later — also after a durable broker's restart,
 * with the reply restored from the store and lost then.
 *
 * Owns the shape of a stored debt and how both `MailStore`s keep it: the
 * `silenced_asks` table (migrations/0012_silenced_asks.ts) and the memory
 * store's map. A row is keyed by the reply's record key and holds the ask
 * (as the `mail` table's body holds mail, mailCodec.ts), so that the receipt
 * can be issued after a restart. It is written only when such an ask is
 * dropped (never on a send) while its reply is still stored (one its asker
 * has read already can be lost no more: review revu U1), and deleted when
 * its reply leaves the store (read by its asker, or lost), or at startup
 * when its reply was not restored: there are never more rows than stored
 * replies.
 */
import { Effect, Schema } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import type { Mail } from "./records.ts"
import { CorruptRow, decodeMail, encodeMail } from "./mailCodec.ts"
import { textOfHex } from "./nulText.ts"
import type { BatchStep } from "./SqliteClient.ts"

/** An ask that went silently as answered, owed its `expired` should its reply be lost, as stored. */
export interface StoredSilenced {
  /** The record key (sender key and message id) of the reply that answered it. */
  readonly replyKey: string
  /** When the ask was dropped (broker clock, ms). */
  readonly at: number
  /** The ask, for its `expired` receipt. */
  readonly ask: Mail
}

/** The changes of one commit (both optional, so a commit without any names none). */
export interface SilencedChanges {
  /** Debts recorded. */
  readonly silencedPuts?: ReadonlyArray<StoredSilenced> | undefined
  /** Debts ended (their reply left the store), by reply key. */
  readonly silencedDeletes?: ReadonlyArray<string> | undefined
}

/** The debts `load` found, oldest first. */
export interface RecoveredSilenced {
  readonly silenced: ReadonlyArray<StoredSilenced>
}

/** Whether a commit changes no debt. */
export const noSilencedChanges = (change: SilencedChanges): boolean =>
  (change.silencedPuts === undefined || change.silencedPuts.length === 0) &&
  (change.silencedDeletes === undefined || change.silencedDeletes.length === 0)

/** A stored row: its time checked, its ask decoded, or a `CorruptRow` naming its reply. */
const decodeSilenced = (replyKey: string, at: number, text: string): StoredSilenced | CorruptRow => {
  if (!Number.isFinite(at)) return new CorruptRow({ table: "silenced ask", key: replyKey, detail: `silenced_at is ${at}` })
  const ask = decodeMail(replyKey, text)
  if (ask instanceof CorruptRow) return new CorruptRow({ table: "silenced ask", key: replyKey, detail: ask.detail })
  return { replyKey, at, ask }
}

// ---------------------------------------------------------------------------------------------
// The memory store's debts.

/** The memory store's debts, by reply key (MemoryMailState.silencedAsks): the ask as a `mail` body. */
export type MemorySilenced = Map<string, { readonly at: number; readonly text: string }>

/** Applies a commit's changes to the memory store's map. */
export const applyMemorySilenced = (silenced: MemorySilenced, change: SilencedChanges): void => {
  for (const put of change.silencedPuts ?? []) silenced.set(put.replyKey, { at: put.at, text: encodeMail(put.ask) })
  for (const key of change.silencedDeletes ?? []) silenced.delete(key)
}

/** The memory store's debts, decoded, oldest first. */
export const loadMemorySilenced = (silenced: MemorySilenced): RecoveredSilenced | CorruptRow => {
  const out: Array<StoredSilenced> = []
  for (const [replyKey, row] of silenced) {
    const decoded = decodeSilenced(replyKey, row.at, row.text)
    if (decoded instanceof CorruptRow) return decoded
    out.push(decoded)
  }
  out.sort((a, b) => a.at - b.at)
  return { silenced: out }
}

// ---------------------------------------------------------------------------------------------
// The SQLite store's debts (schema: migrations/0012_silenced_asks.ts).

/** The statements of a commit's changes, run after its mail, records and edges, in the same transaction. */
export const silencedSteps = (change: SilencedChanges): ReadonlyArray<BatchStep> => {
  if (noSilencedChanges(change)) return []
  return [
    {
      sql: "INSERT OR REPLACE INTO silenced_asks (reply_key, silenced_at, body) VALUES (?, ?, ?)",
      rows: (change.silencedPuts ?? []).map((s) => [s.replyKey, s.at, encodeMail(s.ask)])
    },
    { sql: "DELETE FROM silenced_asks WHERE reply_key = ?", rows: (change.silencedDeletes ?? []).map((key) => [key]) }
  ]
}

const SilencedRow = Schema.Struct({ reply_key: Schema.String, silenced_at: Schema.Number, body: Schema.String })
const decodeSilencedRow = Schema.decodeUnknownResult(SilencedRow)

/** The stored debts, decoded, oldest first; a row that does not decode fails the load. */
export const loadSqliteSilenced: Effect.Effect<
  RecoveredSilenced | CorruptRow,
  SqlError.SqlError,
  SqlClient.SqlClient
> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // A reply's key holds a NUL: read as hex (nulText.ts).
  const rows = yield* sql`SELECT hex(reply_key) AS reply_key, silenced_at, body FROM silenced_asks ORDER BY silenced_at`
  const silenced: Array<StoredSilenced> = []
  for (const raw of rows) {
    const row = decodeSilencedRow(raw)
    if (row._tag === "Failure") return new CorruptRow({ table: "silenced ask", key: "(a row)", detail: String(row.failure) })
    const decoded = decodeSilenced(textOfHex(row.success.reply_key), row.success.silenced_at, row.success.body)
    if (decoded instanceof CorruptRow) return decoded
    silenced.push(decoded)
  }
  return { silenced }
})
