/**
 * Migration 0002: the `questions` table of durable supervisor questions
 * (QuestionStore.ts, C-DQ). One row per question; its markers (`answer`,
 * `delivered_at`, `cancelled_at`, `revival_claimed_at`) are nullable columns
 * written once. Rows are never removed by age (C-DQ-16).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/** Creates the `questions` table and its two lookup indexes (by owner, by child). */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`CREATE TABLE questions (
    id TEXT PRIMARY KEY NOT NULL,
    owner_id TEXT NOT NULL,
    child_id TEXT NOT NULL,
    child_name TEXT NOT NULL,
    reason TEXT NOT NULL,
    message TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    answer TEXT,
    answered_at INTEGER,
    delivered_at INTEGER,
    cancelled_at INTEGER,
    revival_claimed_at INTEGER
  )`
  yield* sql`CREATE INDEX questions_by_owner ON questions (owner_id, created_at, id)`
  yield* sql`CREATE INDEX questions_by_child ON questions (child_id)`
})
