/**
 * Migration 0013: the highest stamp the broker gave (`stamp_high`; review
 * revbq bq1).
 *
 * A client compares the broker's stamps (`brokerReceivedAt`, a control's
 * `timestamp`), which never go backwards within a run (BrokerStamps.ts). A
 * durable broker restarted on a host whose clock is behind must not start
 * below what its last run gave, whether or not the message stamped then is
 * still in the mail table (a delivered one is not, yet a cancel of it is
 * routed by its replay record). One row, written with the commits, read at
 * the start and taken as the floor of the new run's stamps (Router.restore).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Creates `stamp_high`. */
export const migration = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE stamp_high (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    stamp INTEGER NOT NULL
  )`
})
