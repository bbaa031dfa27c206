/**
 * Migration 0012: the `expired` receipts owed for asks that went silently as
 * answered (`silenced_asks`, SilencedAsks.ts; review revs S1).
 *
 * An ask given back past its deadline goes silently when a reply had
 * answered that very copy; should that reply be lost later, its asker is
 * owed the ask's `expired` after all (StaleAsks.replyLost). The broker
 * remembered that debt only in memory, so a reply restored after a restart
 * and then lost left the asker told nothing. A row here is written when such
 * an ask is dropped, keyed by the reply's record key (its sender's key and
 * its id, as the reply's `mail` row is found), and goes when that reply
 * leaves the store: read by its asker, or lost (its notice is stored in the
 * same commit). One whose reply is not stored at a restart goes then.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Creates `silenced_asks`. */
export const migration = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE silenced_asks (
    reply_key TEXT PRIMARY KEY NOT NULL,
    silenced_at INTEGER NOT NULL,
    body TEXT NOT NULL
  ) WITHOUT ROWID`
})
