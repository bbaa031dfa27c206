/**
 * Migration 0004: the undelivered area (`UndeliveredStore`, C-WFD-12). One
 * row per workflow result that could not be delivered after its retries;
 * `seq` orders them. Rows are never updated or deleted: the area is evidence
 * a person reads (and re-sends by hand), not a queue.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/** Creates the `undelivered` table and its lookup index by run. */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`CREATE TABLE undelivered (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    run TEXT NOT NULL,
    target TEXT NOT NULL,
    kind TEXT NOT NULL,
    body TEXT NOT NULL,
    reason TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    kept_at INTEGER NOT NULL
  )`
  yield* sql`CREATE INDEX undelivered_by_run ON undelivered (run, seq)`
})
