/**
 * Migration 0011: a format marker, no schema change — replay blocks may
 * hold the outcome `r` (delivered to another session than the record's
 * target, P49's other holder: `Outcome.receiverId`, replayBlock.ts).
 *
 * A build through 0010 reads a block's outcomes by tag and takes an unknown
 * tag for damage: it would fail the whole load with a "corrupt" error about
 * a file that is whole, only newer. Recording this migration makes such a
 * build refuse the file at open instead, as written by a newer
 * effect-intercom (`DatabaseTooNew`, which says what to do), before it reads
 * a block. A build with this migration reads both tags' blocks, so an older
 * file needs nothing rewritten.
 */
import { Effect } from "effect"

/** Changes nothing: recorded, it tells an older build the replay blocks may hold `r`. */
export const migration = Effect.void
