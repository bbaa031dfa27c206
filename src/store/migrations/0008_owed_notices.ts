/**
 * Migration 0008: failure notices owed to senders (`owed_notices`, issue 13).
 *
 * A message the broker drops after acknowledging it (evicted or expired from
 * the mailbox, replaced or dropped from replace staging) owes its sender an
 * `expired` or `superseded` receipt. That notice used to live only in the
 * broker's memory, so a crash before the sender came back (or before its
 * client read the notice) lost it (docs/testing.md, known issue 5). A row here
 * is written in the same commit that drops the message and deleted once the
 * sender's client confirmed reading it (`received-v1`), or the write that
 * carried it completed (a base client), or the broker gave it up (a day old,
 * or past its bounds). Keyed by an increasing number, so puts append at the
 * table's end (as `mail` since 0006).
 *
 * (0007 is another branch's; ids only need to be higher than every released one.)
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Creates `owed_notices`. */
export const migration = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE owed_notices (
    seq INTEGER PRIMARY KEY,
    sender_key TEXT NOT NULL,
    owed_at INTEGER NOT NULL,
    frame TEXT NOT NULL
  )`
})
