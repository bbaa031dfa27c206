/**
 * Migration 0007: replay records are stored a commit's worth per row
 * (`replay_blocks`), no longer one row each (`replay_log`, 0005).
 *
 * Between `received-v1` clients most mail is read before its commit and
 * never written, so a commit of such traffic was mostly one `replay_log` row
 * per message, each paying SQLite's per-row cost (a statement step, a b-tree
 * cell, its share of the WAL). A block holds all of one commit's records in
 * order, in the text of `replayBlock.ts`, with the newest record's time in
 * `newest_at` for the hourly prune, which drops whole blocks
 * (docs/performance.md, "Replay records in blocks, sixth stop").
 *
 * Existing rows are copied in `n` order, `CHUNK` to a block, so a key's last
 * row is still its last record. A row that does not decode fails the
 * migration (and so the broker's start), naming it: a corrupt database is
 * never treated as empty.
 */
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { CorruptRow, decodeRecord, type StoredRecord } from "../mailCodec.ts"
import { encodeBlock, newestAt } from "../replayBlock.ts"
import { textOfHex } from "../nulText.ts"

/** Rows of `replay_log` per block written. */
const CHUNK = 1_000

const LogRow = Schema.Struct({
  n: Schema.Number,
  record_key: Schema.String,
  sender_key: Schema.String,
  fingerprint: Schema.String,
  outcome: Schema.String,
  recorded_at: Schema.Number
})
const decodeLogRow = Schema.decodeUnknownResult(LogRow)

/** Creates `replay_blocks`, copies `replay_log` into it in order, and drops `replay_log`. */
export const migration = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE replay_blocks (
    n INTEGER PRIMARY KEY,
    newest_at INTEGER NOT NULL,
    body TEXT NOT NULL
  )`
  let after = -1
  for (;;) {
    // The keys hold NULs, which Node 22's node:sqlite cuts TEXT at: read as hex (nulText.ts).
    const rows = yield* sql`SELECT n, hex(record_key) AS record_key, hex(sender_key) AS sender_key, fingerprint, outcome, recorded_at FROM replay_log
      WHERE n > ${after} ORDER BY n LIMIT ${CHUNK}`
    if (rows.length === 0) break
    const records: Array<StoredRecord> = []
    for (const raw of rows) {
      const row = decodeLogRow(raw)
      if (row._tag === "Failure") {
        return yield* new CorruptRow({ table: "replay record", key: "(a row)", detail: String(row.failure) })
      }
      const { n, record_key, sender_key, fingerprint, outcome, recorded_at } = row.success
      const record = decodeRecord(textOfHex(record_key), textOfHex(sender_key), fingerprint, outcome, recorded_at)
      if (record instanceof CorruptRow) return yield* record
      records.push(record)
      after = n
    }
    yield* sql`INSERT INTO replay_blocks (newest_at, body) VALUES (${newestAt(records)}, ${encodeBlock(records)})`
  }
  yield* sql`DROP TABLE replay_log`
})
