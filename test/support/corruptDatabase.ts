/**
 * A broker database whose replay block does not decode: migrated as a broker
 * would leave it, then one block cut short, as a torn write would leave it.
 * For the tests of how a broker refuses to start on it.
 */
import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import * as Database from "../../src/store/Database.ts"

/** Creates (or migrates) `file` and stores one replay block that does not decode, within the replay window. */
export const storeCorruptReplayBlock = (file: string) =>
  Effect.scoped(Effect.gen(function*() {
    const context = yield* Database.make({ file })
    const now = yield* Clock.currentTimeMillis
    yield* Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO replay_blocks (newest_at, body) VALUES (${now}, ${"b1:1;"})`
    }).pipe(Effect.provide(context))
  }))
