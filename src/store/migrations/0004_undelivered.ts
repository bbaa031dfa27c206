/**
 * Migration 0004: the workflow layer's delivery state. `undelivered`
 * (`UndeliveredStore`, C-WFD-12): one row per workflow result that could not
 * be delivered after its retries; `seq` orders them. Rows are never updated
 * or deleted: the area is evidence a person reads (and re-sends by hand), not
 * a queue. `delivery_marks` (`DeliveryMarks`, C-WFD-11, C-WFD-14): one row
 * per confirmed delivery step — a result's phase, a lifecycle notice's
 * occurrence — written only after the bus acknowledged it.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/** Creates the `undelivered` table with its lookup index by run, and the `delivery_marks` table. */
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
  yield* sql`CREATE TABLE delivery_marks (
    mark TEXT PRIMARY KEY NOT NULL,
    marked_at INTEGER NOT NULL
  ) WITHOUT ROWID`
})
