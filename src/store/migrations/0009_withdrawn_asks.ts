/**
 * Migration 0009: asks their asker withdrew (`withdrawn_asks`,
 * WithdrawnAsks.ts).
 *
 * An asker that withdraws its ask (`cancel_ask`, or `cancel_message` on the
 * ask) after a reply closed the ask's edge must not see the ask reopened
 * should that reply be lost from the mailbox (Asks.answerLost). The broker
 * remembered that only in memory, so after a restart a restored reply that
 * was then lost reopened the ask. Since then the table also holds asks
 * withdrawn while their edge was open, before their deadline: a copy of one
 * restored past its deadline goes silently, not as expired
 * (Asks.withdrawnEarly). A row here is written with the withdrawal and goes
 * once no ask can outlive it (`MAX_ASK_TIMEOUT_MS` after it was made) or the
 * broker's bound on them pushes it out. Keyed by the ask's record key, as
 * `ask_edges` is.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Creates `withdrawn_asks`. */
export const migration = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE withdrawn_asks (
    message_key TEXT PRIMARY KEY NOT NULL,
    withdrawn_at INTEGER NOT NULL
  ) WITHOUT ROWID`
})
