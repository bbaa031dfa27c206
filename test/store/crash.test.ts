/**
 * The durability promise of docs/store.md: with WAL and synchronous=NORMAL,
 * what a commit returned for survives the process being SIGKILLed, and the
 * next open (quick_check, migrations, mode fixing) replays the `-wal` file
 * the dead process left.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as Database from "../../src/store/Database.ts"
import { spawnNode } from "../support/process.ts"
import { crashMigrations } from "./fixtures/schema.ts"
import { tempDir } from "./support.ts"

const child = fileURLToPath(new URL("./fixtures/commitThenHang.ts", import.meta.url))

describe("durability", () => {
  it.live("a commit survives SIGKILL of the process that made it; the next open replays its -wal file", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "intercom.db")
      const proc = yield* spawnNode([child, file, "300"])
      yield* proc.waitStdout(/committed\n/)
      yield* proc.kill("SIGKILL")
      const outcome = yield* proc.waitExit()
      assert.strictEqual(outcome.signal, "SIGKILL")
      assert.isAbove(fs.statSync(`${file}-wal`).size, 0, "the commits are in the -wal file the process left")

      const rows = yield* Effect.scoped(
        Effect.flatMap(Layer.build(Database.layer({ file, migrations: crashMigrations })), (context) =>
          Effect.provide(
            Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ n: number; last: string }>`
              SELECT count(*) AS n, (SELECT v FROM items WHERE id = 301) AS last FROM items`),
            context
          ))
      )
      assert.deepStrictEqual(rows, [{ n: 301, last: "last" }])
    }))
})
