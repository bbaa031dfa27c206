/**
 * Migration 0005: replay records become an append-only log (`replay_log`).
 *
 * `replay_records` (0001) was one b-tree keyed by (sender, message id). Real
 * message ids are random (UUIDs), so every record landed on a different leaf
 * page and a commit wrote one page per message to the WAL: with 32 records
 * per commit, about 32 µs of CPU per message in SQLite alone, against 9 µs
 * when the rows are appended (docs/performance.md, Issue 16, "Durable").
 * `replay_log` is keyed by an increasing integer, so a commit's records share
 * the last page or two. A record rewritten later is appended again; the last
 * row of a key wins when the broker loads them (MailStore.ts), and all rows
 * of a key share its `recorded_at`, so the hourly prune drops them together.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Creates `replay_log`, copies `replay_records` into it in time order, and drops `replay_records`. */
export const migration = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE replay_log (
    n INTEGER PRIMARY KEY,
    record_key TEXT NOT NULL,
    sender_key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    outcome TEXT NOT NULL,
    recorded_at INTEGER NOT NULL
  )`
  yield* sql`INSERT INTO replay_log (record_key, sender_key, fingerprint, outcome, recorded_at)
    SELECT record_key, sender_key, fingerprint, outcome, recorded_at FROM replay_records ORDER BY recorded_at`
  yield* sql`DROP TABLE replay_records`
})
