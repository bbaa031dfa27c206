/**
 * The store's part of the withdrawn asks (Asks.ts, `withdrawn`): an asker
 * that withdrew its ask (`cancel_ask` or `cancel_message`, while its edge was
 * open before its deadline, or once a reply had closed it) keeps it withdrawn
 * should that reply be lost later — evicted or expired from the mailbox —
 * also when the broker restarted in between, with the reply restored from
 * the store and then lost (`Asks.answerLost`); and a copy of the ask
 * restored past its deadline goes silently, not as expired
 * (`Asks.withdrawnEarly`). Each counts only for the ask open when it was
 * made (its time is kept for that), not a later one under the same id.
 *
 * Owns the shape of a stored withdrawal and how both `MailStore`s keep it:
 * the `withdrawn_asks` table (migrations/0009_withdrawn_asks.ts) and the
 * memory store's map. The broker's in-memory table (Asks.ts) is the working
 * set, bounded; this is its write-behind copy, read once at startup. A row
 * goes when the in-memory bound pushes its withdrawal out, or with the
 * store's prune once no ask can outlive it (`MAX_ASK_TIMEOUT_MS` after it).
 */
import { Effect, Schema } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { MAX_ASK_TIMEOUT_MS } from "../protocol/constants.ts"
import { CorruptRow } from "./mailCodec.ts"
import { textOfHex } from "./nulText.ts"
import type { BatchStep } from "./SqliteClient.ts"

/** An ask its asker withdrew (see the module header), as stored. */
export interface StoredWithdrawal {
  /** The ask's record key (its asker's registry key and its message id), as its edge was keyed. */
  readonly messageKey: string
  /**
   * When it was withdrawn (the broker's stamp, ms: the scale of its ask's `brokerReceivedAt`, Asks.ts): it counts for the ask open then
   * (AskWithdrawals.withdrawnWithin), and is kept `MAX_ASK_TIMEOUT_MS` from then.
   */
  readonly at: number
}

/** The withdrawal changes of one commit (both optional, so a commit without any names none). */
export interface WithdrawalChanges {
  /** Withdrawals made. */
  readonly withdrawalPuts?: ReadonlyArray<StoredWithdrawal> | undefined
  /** Withdrawals the broker's bound pushed out, by ask key. */
  readonly withdrawalDeletes?: ReadonlyArray<string> | undefined
}

/** The withdrawals `load` found, oldest first. */
export interface RecoveredWithdrawals {
  readonly withdrawals: ReadonlyArray<StoredWithdrawal>
}

/** Whether a commit changes no withdrawal. */
export const noWithdrawalChanges = (change: WithdrawalChanges): boolean =>
  (change.withdrawalPuts === undefined || change.withdrawalPuts.length === 0) &&
  (change.withdrawalDeletes === undefined || change.withdrawalDeletes.length === 0)

/** The last time a withdrawal made at or before it can be dropped by a prune at `now`. */
const expiredAtOrBefore = (now: number): number => now - MAX_ASK_TIMEOUT_MS

/** A stored withdrawal time that is not a finite number is a `CorruptRow` naming its ask. */
const checkWithdrawal = (withdrawal: StoredWithdrawal): StoredWithdrawal | CorruptRow =>
  Number.isFinite(withdrawal.at)
    ? withdrawal
    : new CorruptRow({ table: "withdrawn ask", key: withdrawal.messageKey, detail: `withdrawn_at is ${withdrawal.at}` })

// ---------------------------------------------------------------------------------------------
// The memory store's withdrawals.

/** The memory store's withdrawals: when each ask was withdrawn, by its key (MemoryMailState.withdrawals). */
export type MemoryWithdrawals = Map<string, number>

/** Applies a commit's withdrawal changes, and its prune (`pruneAt`, when it has one), to the memory store's map. */
export const applyMemoryWithdrawals = (
  withdrawals: MemoryWithdrawals,
  change: WithdrawalChanges,
  pruneAt: number | undefined
): void => {
  for (const put of change.withdrawalPuts ?? []) withdrawals.set(put.messageKey, put.at)
  for (const key of change.withdrawalDeletes ?? []) withdrawals.delete(key)
  if (pruneAt === undefined) return
  const cutoff = expiredAtOrBefore(pruneAt)
  for (const [key, at] of withdrawals) if (at <= cutoff) withdrawals.delete(key)
}

/** The memory store's withdrawals, checked, oldest first. */
export const loadMemoryWithdrawals = (withdrawals: MemoryWithdrawals): RecoveredWithdrawals | CorruptRow => {
  const out: Array<StoredWithdrawal> = []
  for (const [messageKey, at] of withdrawals) {
    const withdrawal = checkWithdrawal({ messageKey, at })
    if (withdrawal instanceof CorruptRow) return withdrawal
    out.push(withdrawal)
  }
  out.sort((a, b) => a.at - b.at)
  return { withdrawals: out }
}

// ---------------------------------------------------------------------------------------------
// The SQLite store's withdrawals (schema: migrations/0009_withdrawn_asks.ts).

/**
 * The statements of a commit's withdrawal changes and of its prune
 * (`pruneAt`, the prune's `edgesUntil`), run after its mail, records and
 * edges, in the same transaction.
 */
export const withdrawalSteps = (change: WithdrawalChanges, pruneAt: number | undefined): ReadonlyArray<BatchStep> => {
  const steps: Array<BatchStep> = []
  if (!noWithdrawalChanges(change)) {
    steps.push(
      {
        sql: "INSERT OR REPLACE INTO withdrawn_asks (message_key, withdrawn_at) VALUES (?, ?)",
        rows: (change.withdrawalPuts ?? []).map((w) => [w.messageKey, w.at])
      },
      { sql: "DELETE FROM withdrawn_asks WHERE message_key = ?", rows: (change.withdrawalDeletes ?? []).map((key) => [key]) }
    )
  }
  if (pruneAt !== undefined) {
    steps.push({ sql: "DELETE FROM withdrawn_asks WHERE withdrawn_at <= ?", rows: [[expiredAtOrBefore(pruneAt)]] })
  }
  return steps
}

const WithdrawalRow = Schema.Struct({ message_key: Schema.String, withdrawn_at: Schema.Number })
const decodeWithdrawalRow = Schema.decodeUnknownResult(WithdrawalRow)

/** The stored withdrawals, checked, oldest first; a row that does not decode fails the load. */
export const loadSqliteWithdrawals: Effect.Effect<
  RecoveredWithdrawals | CorruptRow,
  SqlError.SqlError,
  SqlClient.SqlClient
> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // An ask's key holds a NUL: read as hex (nulText.ts).
  const rows = yield* sql`SELECT hex(message_key) AS message_key, withdrawn_at FROM withdrawn_asks ORDER BY withdrawn_at`
  const withdrawals: Array<StoredWithdrawal> = []
  for (const raw of rows) {
    const row = decodeWithdrawalRow(raw)
    if (row._tag === "Failure") {
      return new CorruptRow({ table: "withdrawn ask", key: "(a row)", detail: String(row.failure) })
    }
    const withdrawal = checkWithdrawal({ messageKey: textOfHex(row.success.message_key), at: row.success.withdrawn_at })
    if (withdrawal instanceof CorruptRow) return withdrawal
    withdrawals.push(withdrawal)
  }
  return { withdrawals }
})
