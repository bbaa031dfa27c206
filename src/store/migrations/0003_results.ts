/**
 * Migration 0003: the result archive's table (`ResultArchive`, ResultSql.ts).
 * `seq` orders reports (newest first in listings, oldest pruned first);
 * `body` is the retained report as UTF-16LE code units; `space` and
 * `supervisor` decide who may read it.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`CREATE TABLE results (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    ref TEXT NOT NULL UNIQUE,
    space TEXT NOT NULL,
    supervisor TEXT,
    from_id TEXT NOT NULL,
    from_name TEXT,
    group_name TEXT NOT NULL,
    title TEXT,
    run TEXT,
    child TEXT,
    created_at INTEGER NOT NULL,
    total INTEGER NOT NULL,
    original_length INTEGER NOT NULL,
    body BLOB NOT NULL
  )`
  yield* sql`CREATE INDEX results_space ON results (space, seq)`
  yield* sql`CREATE INDEX results_supervisor ON results (supervisor, seq)`
  yield* sql`CREATE INDEX results_created ON results (created_at)`
})
