/**
 * Every migration of the broker's database, by `<id>_<name>` for effect's
 * `Migrator.fromRecord`. One file per migration; never edit one that shipped.
 */
import type { Effect } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import results0003 from "./0003_results.ts"

/** The migrations, keyed `<id>_<name>`. */
export const migrations: Record<string, Effect.Effect<void, unknown, SqlClient>> = {
  "0003_results": results0003
}
