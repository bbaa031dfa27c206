/**
 * A new database file's schema in one step (`migrations/snapshot.ts`): it
 * must be exactly what the migrations make, it is used only on a file that
 * holds nothing, the migrations after it still run, and an old file still
 * upgrades through the Migrator.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as fs from "node:fs"
import * as path from "node:path"
import { DatabaseSync } from "node:sqlite"
import * as Database from "../../src/store/Database.ts"
import { DatabaseOpenFailed } from "../../src/store/errors.ts"
import { type Migration, migrations } from "../../src/store/migrations/index.ts"
import { CREATE_MIGRATIONS_TABLE, snapshot } from "../../src/store/migrations/snapshot.ts"
import { countedMigrations } from "./fixtures/schema.ts"
import { tempDir } from "./support.ts"

const openOnly = (options: Database.DatabaseOptions) => Effect.scoped(Effect.asVoid(Layer.build(Database.layer(options))))

/** Everything of a file's schema that a migration decides, read with `node:sqlite` after the broker's connection closed. */
const schemaOf = (file: string) => {
  const db = new DatabaseSync(file, { readOnly: true })
  try {
    return {
      // rootpage is where SQLite put the b-tree, not the schema.
      objects: db.prepare("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name").all()
        .map((row) => ({ ...row })),
      migrations: db.prepare(`SELECT migration_id, name FROM ${Database.MIGRATIONS_TABLE} ORDER BY migration_id`).all()
        .map((row) => ({ ...row })),
      userVersion: db.prepare("PRAGMA user_version").get()?.["user_version"]
    }
  } finally {
    db.close()
  }
}

/** The first `count` migrations of this build's registry, in id order. */
const firstMigrations = (count: number): Record<string, Migration> =>
  Object.fromEntries(Object.entries(migrations).sort(([a], [b]) => a.localeCompare(b)).slice(0, count))

/** A file in a fresh temp directory. */
const fileIn = (name: string) => Effect.map(tempDir, (dir) => path.join(dir, name))

/** Counts its runs in `runs`: 0001 makes the tables and writes 1, 0002 writes 2. */
const counted: Record<string, Migration> = {
  ...countedMigrations,
  "0002_more": Effect.flatMap(SqlClient.SqlClient, (sql) => sql`INSERT INTO runs (n) VALUES (2)`)
}

/** 0001's tables, and a table no migration makes: a file made from it says so. */
const countedSnapshot = {
  through: 1,
  statements: [
    "CREATE TABLE items (id INTEGER PRIMARY KEY, v TEXT NOT NULL)",
    "CREATE TABLE runs (n INTEGER NOT NULL)",
    "CREATE TABLE from_snapshot (x INTEGER)"
  ]
}

const readRuns = (file: string) => {
  const db = new DatabaseSync(file, { readOnly: true })
  try {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all()
      .map((row) => String(row["name"]))
    const runs = db.prepare("SELECT n FROM runs ORDER BY n").all().map((row) => Number(row["n"]))
    const recorded = db.prepare(`SELECT migration_id, name FROM ${Database.MIGRATIONS_TABLE} ORDER BY migration_id`)
      .all().map((row) => `${String(row["migration_id"])}_${String(row["name"])}`)
    return { tables, runs, recorded }
  } finally {
    db.close()
  }
}

describe("the schema snapshot", () => {
  it.effect("a new file gets the same sqlite_master, recorded migrations and user_version as one migrated one migration at a time from version 0", () =>
    Effect.gen(function*() {
      const fresh = yield* fileIn("fresh.db")
      const stepped = yield* fileIn("stepped.db")
      yield* openOnly({ file: fresh })
      // Each open is a newer build meeting the file the one before left: an upgrade from every version.
      for (let count = 1; count <= Object.keys(migrations).length; count++) {
        yield* openOnly({ file: stepped, migrations: firstMigrations(count) })
      }
      const expected = schemaOf(stepped)
      assert.deepStrictEqual(schemaOf(fresh), expected)
      assert.isAbove(expected.objects.length, 10)
    }))

  it.effect("stands for every registered migration", () =>
    Effect.gen(function*() {
      const file = yield* fileIn("migrated.db")
      yield* openOnly({ file, migrations })
      const made = schemaOf(file).objects.flatMap((object) => object.sql === null ? [] : [String(object.sql)])
      assert.strictEqual(
        snapshot.through,
        Database.highestMigrationId(migrations),
        `a migration was added: set snapshot.through to its id and the statements to the migrated file's:\n${
          made.join(";\n\n")
        }`
      )
    }))

  it.effect("is given to a new file in one step, and the migrations after it still run", () =>
    Effect.gen(function*() {
      const file = yield* fileIn("new.db")
      yield* openOnly({ file, migrations: counted, snapshot: countedSnapshot })
      const { recorded, runs, tables } = readRuns(file)
      assert.include(tables, "from_snapshot")
      assert.deepStrictEqual(runs, [2]) // 0001 was not run, 0002 was
      assert.deepStrictEqual(recorded, ["1_items", "2_more"])
    }))

  // A file holding tables but no migrations table is another program's and is refused (Database.test.ts); one
  // whose migrations table records nothing yet is intercom's, and runs every migration.
  it.effect("is not given to a file that holds anything: that one is migrated from version 0", () =>
    Effect.gen(function*() {
      const file = yield* fileIn("started.db")
      const db = new DatabaseSync(file)
      db.exec(CREATE_MIGRATIONS_TABLE)
      db.exec("CREATE TABLE unrelated (x INTEGER)")
      db.close()
      yield* openOnly({ file, migrations: counted, snapshot: countedSnapshot })
      const { recorded, runs, tables } = readRuns(file)
      assert.notInclude(tables, "from_snapshot")
      assert.deepStrictEqual(runs, [1, 2])
      assert.deepStrictEqual(recorded, ["1_items", "2_more"])
    }))

  it.effect("an old file upgrades through the Migrator, keeping its rows, to the schema a new file gets", () =>
    Effect.gen(function*() {
      const old = yield* fileIn("old.db")
      const fresh = yield* fileIn("fresh.db")
      yield* openOnly({ file: old, migrations: firstMigrations(4) })
      const db = new DatabaseSync(old)
      db.exec("INSERT INTO delivery_marks (mark, marked_at) VALUES ('kept', 1)")
      db.close()
      yield* openOnly({ file: old })
      yield* openOnly({ file: fresh })
      assert.deepStrictEqual(schemaOf(old), schemaOf(fresh))
      const reopened = new DatabaseSync(old, { readOnly: true })
      const marks = reopened.prepare("SELECT mark FROM delivery_marks").all().map((row) => row["mark"])
      reopened.close()
      assert.deepStrictEqual(marks, ["kept"])
    }))

  it.effect("a statement that fails fails the open, naming the file, and leaves the file empty", () =>
    Effect.gen(function*() {
      const file = yield* fileIn("broken.db")
      const error = yield* Effect.flip(openOnly({
        file,
        migrations: counted,
        snapshot: { through: 1, statements: ["CREATE TABLE items (id INTEGER PRIMARY KEY)", "CREATE TABLE items (x)"] }
      }))
      assert.instanceOf(error, DatabaseOpenFailed)
      assert.include(error.message, file)
      assert.include(error.message, "already exists")
      const db = new DatabaseSync(file, { readOnly: true })
      const objects = db.prepare("SELECT name FROM sqlite_master").all()
      db.close()
      assert.deepStrictEqual(objects, [])
      assert.isTrue(fs.existsSync(file))
    }))
})
