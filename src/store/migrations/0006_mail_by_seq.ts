/**
 * Migration 0006: undelivered mail is keyed by its sequence number.
 *
 * `mail` (0001) was keyed by its record key, (sender, message id), which
 * SQLite kept as a second b-tree beside the rows. Real message ids are
 * random (UUIDs), so every message put or deleted touched a different leaf
 * page of that index, and each commit wrote one such page per message to
 * the WAL (the cost 0005 removed from the replay records). The new `mail`
 * has one b-tree, keyed by `seq`, the order the broker accepted the mail in:
 * puts append at its end and deletes follow in about the same order, so a
 * commit touches a page or two. The broker deletes a row by the `seq` it
 * assigned (StoreJournal.ts keeps each stored record key's `seq`).
 *
 * Rows are copied in their old `seq` order and numbered afresh from 1, so
 * the order mail comes back in at the next start is unchanged.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Creates `mail_by_seq`, copies `mail` into it in acceptance order, and puts it in `mail`'s place. */
export const migration = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE mail_by_seq (
    seq INTEGER PRIMARY KEY,
    record_key TEXT NOT NULL,
    body TEXT NOT NULL
  )`
  yield* sql`INSERT INTO mail_by_seq (record_key, body) SELECT record_key, body FROM mail ORDER BY seq`
  yield* sql`DROP TABLE mail`
  yield* sql`ALTER TABLE mail_by_seq RENAME TO mail`
})
