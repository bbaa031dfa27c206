/**
 * The registry of the broker database's migrations, run in id order by
 * effect's `Migrator` (`Database.layer` and `Database.layerMemory`).
 *
 * Numbering rule: one file per migration, `NNNN_name.ts` beside this one,
 * registered here under the key `"NNNN_name"`; `Migrator.fromRecord` reads the
 * id from the digits before the first `_`. Ids are fixed by owner so that
 * branches do not clash:
 *
 * - `0001_mail`      undelivered mail and replay records (`MailStore`)
 * - `0002_questions` durable supervisor questions (`QuestionStore`)
 * - `0003_results`   the result archive (`ResultArchive`)
 * - `0004_undelivered` workflow results kept after their retries ran out (`UndeliveredStore`) and
 *   confirmed delivery steps (`DeliveryMarks`)
 * - `0005_replay_log` replay records as an append-only log (`MailStore`)
 * - `0006_mail_by_seq` undelivered mail keyed by its sequence number (`MailStore`)
 * - `0007_replay_blocks` replay records a commit's worth per row (`MailStore`)
 * - `0008_owed_notices` failure notices owed to senders (`MailStore`, OwedNotices.ts)
 * - `0009_withdrawn_asks` asks withdrawn after their reply closed them (`MailStore`, WithdrawnAsks.ts)
 * - `0010_state_epoch` the broker's state epoch, kept across restarts (`MailStore`, `state-epoch-v1`)
 * - `0011_replay_receiver` a marker, no schema: replay blocks may hold the outcome `r` (`MailStore`,
 *   replayBlock.ts), so an older build refuses the file as newer rather than failing its load as corrupt
 * - `0012_silenced_asks` the `expired` owed for asks that went silently as answered (`MailStore`, SilencedAsks.ts)
 * - `0013_stamp_high` the highest stamp the broker gave, its floor at a restart (`MailStore`, BrokerStamps.ts)
 *
 * Later migrations take the next free number. A released migration is never
 * edited: change the schema with a new one. The Migrator only runs ids above
 * the highest id a database has recorded, so a new migration must always get
 * a higher id than every one already released. A database that records an id
 * above the highest one registered here was written by a newer build and is
 * refused (`DatabaseTooNew`).
 *
 * A change to what a row's body holds (a new mail or fingerprint field, a
 * new replay outcome tag) is a migration too, a marker with no schema change
 * like 0011: a build without it would drop the field silently or call the
 * block corrupt, and the marker makes it refuse the file as newer instead.
 * test/store/formatHistory.test.ts fails until such a change names its marker.
 *
 * A new, empty file is not migrated: it gets `snapshot.ts`, the schema these
 * migrations leave, in one step. So a new migration also updates the
 * snapshot (its `through` and statements); test/store/snapshot.test.ts fails
 * until it does, and prints the statements it expects.
 *
 * Each migration is one Effect over `SqlClient`, run inside the Migrator's
 * transaction; one statement per `sql` call (the driver refuses SQL text with
 * several statements rather than silently running only the first).
 */
import type { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { migration as mail } from "./0001_mail.ts"
import questions from "./0002_questions.ts"
import results0003 from "./0003_results.ts"
import undelivered0004 from "./0004_undelivered.ts"
import { migration as replayLog } from "./0005_replay_log.ts"
import { migration as mailBySeq } from "./0006_mail_by_seq.ts"
import { migration as replayBlocks } from "./0007_replay_blocks.ts"
import { migration as owedNotices } from "./0008_owed_notices.ts"
import { migration as withdrawnAsks } from "./0009_withdrawn_asks.ts"
import { migration as stateEpoch } from "./0010_state_epoch.ts"
import { migration as replayReceiver } from "./0011_replay_receiver.ts"
import { migration as silencedAsks } from "./0012_silenced_asks.ts"
import { migration as stampHigh } from "./0013_stamp_high.ts"

/** One migration: an Effect that changes the schema through `SqlClient`. */
export type Migration = Effect.Effect<void, unknown, SqlClient.SqlClient>

/** Every migration of this build, keyed `"NNNN_name"`. */
export const migrations: Readonly<Record<string, Migration>> = {
  "0001_mail": mail,
  "0002_questions": questions,
  "0003_results": results0003,
  "0004_undelivered": undelivered0004,
  "0005_replay_log": replayLog,
  "0006_mail_by_seq": mailBySeq,
  "0007_replay_blocks": replayBlocks,
  "0008_owed_notices": owedNotices,
  "0009_withdrawn_asks": withdrawnAsks,
  "0010_state_epoch": stateEpoch,
  "0011_replay_receiver": replayReceiver,
  "0012_silenced_asks": silencedAsks,
  "0013_stamp_high": stampHigh
}
