/**
 * Migration 0001: the broker's routing state (`MailStore`) — mail not yet
 * written to its recipient, replay records, open ask edges. Values are JSON
 * text decoded by Schema on load (MailStore.ts); keys are the broker's own.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Creates the mail, replay-record and ask-edge tables. */
export const migration = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE mail (
    record_key TEXT PRIMARY KEY NOT NULL,
    seq INTEGER NOT NULL,
    body TEXT NOT NULL
  )`
  // One b-tree each (WITHOUT ROWID, no second index): a commit rewrites a page per b-tree it touches,
  // and a replay record is written for every message. Half the cost of a rowid table with a time index
  // (measured in docs/store.md); the once-a-minute prune scans instead.
  yield* sql`CREATE TABLE replay_records (
    record_key TEXT PRIMARY KEY NOT NULL,
    sender_key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    outcome TEXT NOT NULL,
    recorded_at INTEGER NOT NULL
  ) WITHOUT ROWID`
  yield* sql`CREATE TABLE ask_edges (
    message_key TEXT PRIMARY KEY NOT NULL,
    deadline INTEGER NOT NULL,
    body TEXT NOT NULL
  ) WITHOUT ROWID`
})
