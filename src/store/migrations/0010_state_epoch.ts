/**
 * Migration 0010: the broker's state epoch (`state_epoch`, extension
 * `state-epoch-v1`, docs/protocol.md).
 *
 * `registered` tells a client that asked for it which routing state the
 * broker holds — an opaque id that stays the same as long as the state does.
 * A durable broker's state outlives its process, so the id must too: it is
 * kept here, one row, made by the first `load` of a database that has none
 * (`MailStore.sqlite`) and never changed after. A database file that is
 * deleted takes it along, and the next broker makes a new one: its state is
 * gone as well.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Creates `state_epoch`. */
export const migration = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE state_epoch (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    epoch TEXT NOT NULL
  )`
})
