/**
 * The store's part of the broker's failure notices (issue 13, known issue 5):
 * an `expired` or `superseded` receipt the broker owes a message's sender is
 * stored in the same commit that drops the message, and deleted once its
 * sender's client confirmed reading it (`received-v1`) or, for a base client,
 * once the write that carried it completed. So a notice outlives a crash
 * like the mail it stands for: there is no moment where neither the mail nor
 * its notice is stored.
 *
 * Owns the shape of a stored notice and how both `MailStore`s keep it: the
 * `owed_notices` table (migrations/0008_owed_notices.ts) and the memory
 * store's map. Kept apart from MailStore.ts so that the mail, record and
 * notice code of a commit stay separate functions. The broker's in-memory
 * owed notices (MailDelivery.ts) are the working set; this is their
 * write-behind copy, read once at startup. An `ask_expired` (`ask-expiry-v1`)
 * is never stored now; one stored by the build that first had the extension
 * (it owed them) still decodes, and the broker drops it at startup
 * (MailDelivery.restoreNotice).
 */
import { Effect, Schema } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { CorruptRow } from "./mailCodec.ts"
import { textOfHex } from "./nulText.ts"
import type { BatchStep } from "./SqliteClient.ts"

/** A failure notice the broker owes a sender, as stored. */
export interface StoredNotice {
  /** The notice's number, increasing across restarts: its key in the store. */
  readonly seq: number
  /** The registry key of the sender it is for. */
  readonly senderKey: string
  /** The `message_receipt` frame, as it will be written (or an earlier build's `ask_expired`, dropped at startup). */
  readonly frame: string
  /** When it was first owed (broker clock, ms): it is kept a day from then. */
  readonly at: number
}

/** The notice changes of one commit (both optional, so a commit without notices names none). */
export interface NoticeChanges {
  /** Notices issued. */
  readonly noticePuts?: ReadonlyArray<StoredNotice> | undefined
  /** Notices read (or written to a base client) or dropped, by `seq`. */
  readonly noticeDeletes?: ReadonlyArray<number> | undefined
}

/** The notices `load` found, and the next notice number. */
export interface RecoveredNotices {
  /** Stored notices, in the order they were issued (`seq`). */
  readonly notices: ReadonlyArray<StoredNotice>
  /** One more than the highest notice number stored. */
  readonly nextNoticeSeq: number
}

/** Whether a commit changes no notice. */
export const noNoticeChanges = (change: NoticeChanges): boolean =>
  (change.noticePuts === undefined || change.noticePuts.length === 0) &&
  (change.noticeDeletes === undefined || change.noticeDeletes.length === 0)

const ReceiptFrame = Schema.Union([
  Schema.Struct({
    type: Schema.Literal("message_receipt"),
    receipt: Schema.Struct({ messageId: Schema.String, status: Schema.Literals(["expired", "superseded"]) })
  }),
  Schema.Struct({ type: Schema.Literal("ask_expired"), messageId: Schema.String, expiredAt: Schema.Finite })
])
const decodeReceipt = Schema.decodeUnknownResult(ReceiptFrame)

/** Checks a stored notice's frame: a broker's failure receipt or ask expiry notice, or a `CorruptRow` naming it. */
export const checkNotice = (notice: StoredNotice): StoredNotice | CorruptRow => {
  const key = String(notice.seq)
  let json: unknown
  try {
    json = JSON.parse(notice.frame)
  } catch (cause) {
    return new CorruptRow({ table: "owed notice", key, detail: cause instanceof Error ? cause.message : String(cause) })
  }
  const result = decodeReceipt(json)
  return result._tag === "Success"
    ? notice
    : new CorruptRow({ table: "owed notice", key, detail: String(result.failure) })
}

// ---------------------------------------------------------------------------------------------
// The memory store's notices.

/** The memory store's notices by `seq` (its "disk", MemoryMailState.notices). */
export type MemoryNotices = Map<number, { readonly senderKey: string; readonly frame: string; readonly at: number }>

/** Applies a commit's notice changes to the memory store's map. */
export const applyMemoryNotices = (notices: MemoryNotices, change: NoticeChanges): void => {
  for (const put of change.noticePuts ?? []) notices.set(put.seq, { senderKey: put.senderKey, frame: put.frame, at: put.at })
  for (const seq of change.noticeDeletes ?? []) notices.delete(seq)
}

/** The memory store's notices, checked, in `seq` order. */
export const loadMemoryNotices = (notices: MemoryNotices): RecoveredNotices | CorruptRow => {
  const out: Array<StoredNotice> = []
  let next = 1
  for (const [seq, row] of notices) {
    const notice = checkNotice({ seq, ...row })
    if (notice instanceof CorruptRow) return notice
    out.push(notice)
    if (seq >= next) next = seq + 1
  }
  out.sort((a, b) => a.seq - b.seq)
  return { notices: out, nextNoticeSeq: next }
}

// ---------------------------------------------------------------------------------------------
// The SQLite store's notices (schema: migrations/0008_owed_notices.ts).

/** The statements of a commit's notice changes (run after its mail and records, in the same transaction). */
export const noticeSteps = (change: NoticeChanges): ReadonlyArray<BatchStep> => {
  if (noNoticeChanges(change)) return []
  return [
    {
      sql: "INSERT OR REPLACE INTO owed_notices (seq, sender_key, owed_at, frame) VALUES (?, ?, ?, ?)",
      rows: (change.noticePuts ?? []).map((n) => [n.seq, n.senderKey, n.at, n.frame])
    },
    { sql: "DELETE FROM owed_notices WHERE seq = ?", rows: (change.noticeDeletes ?? []).map((seq) => [seq]) }
  ]
}

const NoticeRow = Schema.Struct({
  seq: Schema.Number,
  sender_key: Schema.String,
  owed_at: Schema.Number,
  frame: Schema.String
})
const decodeNoticeRow = Schema.decodeUnknownResult(NoticeRow)

/** The stored notices, checked, in `seq` order; a row that does not decode fails the load. */
export const loadSqliteNotices: Effect.Effect<
  RecoveredNotices | CorruptRow,
  SqlError.SqlError,
  SqlClient.SqlClient
> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // A sender's key holds a NUL: read as hex (nulText.ts).
  const rows = yield* sql`SELECT seq, hex(sender_key) AS sender_key, owed_at, frame FROM owed_notices ORDER BY seq`
  const notices: Array<StoredNotice> = []
  let next = 1
  for (const raw of rows) {
    const row = decodeNoticeRow(raw)
    if (row._tag === "Failure") return new CorruptRow({ table: "owed notice", key: "(a row)", detail: String(row.failure) })
    const { frame, owed_at, sender_key, seq } = row.success
    const notice = checkNotice({ seq, senderKey: textOfHex(sender_key), frame, at: owed_at })
    if (notice instanceof CorruptRow) return notice
    notices.push(notice)
    next = seq + 1
  }
  return { notices, nextNoticeSeq: next }
})
