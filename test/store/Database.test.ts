/**
 * `Database.layer` on real files: the file's mode, migrations run once, and
 * the faults that fail closed (a corrupt file, a newer schema, an unreadable
 * file), each leaving the file as it was: its bytes, a leftover -wal's bytes,
 * and whether a -wal or -shm exists.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"
import { SqlClient } from "effect/sql"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Database from "../../src/store/Database.ts"
import * as SqliteClient from "../../src/store/SqliteClient.ts"
import { toSqlError } from "../../src/store/SqliteFaults.ts"
import { DatabaseBusy, DatabaseCorrupt, DatabaseForeign, DatabaseOpenWriteFailed, DatabaseTooNew, DatabaseUnreadable, SqliteUnavailable } from "../../src/store/errors.ts"
import { type Migration, migrations } from "../../src/store/migrations/index.ts"
import { countedMigrations } from "./fixtures/schema.ts"
import { isRoot, modeOf, tempDir } from "./support.ts"

/** Runs `use` against `Database.layer(options)`, closing the database afterwards. */
const withDatabase = <A, E>(
  options: Database.DatabaseOptions,
  use: Effect.Effect<A, E, SqlClient.SqlClient>
) => Effect.scoped(Layer.build(Database.layer(options)).pipe(Effect.flatMap((context) => Effect.provide(use, context))))

const openOnly = (options: Database.DatabaseOptions) => withDatabase(options, Effect.void)

/** A migration creating `items` and counting its own runs in `runs`. */
const testMigrations = countedMigrations

const dbFile = Effect.map(tempDir, (dir) => path.join(dir, "intercom", "intercom.db"))

/**
 * A database file that opens but fails `PRAGMA quick_check`: a NULL under a
 * NOT NULL column, written before the constraint, which is then edited into
 * the schema; and unmarked, as a broker killed while it ran leaves it, so the
 * full check runs at open.
 */
const unmarkedFailingQuickCheck = Effect.gen(function*() {
  const file = yield* dbFile
  yield* openOnly({ file, migrations: testMigrations })
  const { DatabaseSync } = yield* Effect.sync(() => process.getBuiltinModule("node:sqlite"))
  const raw = new DatabaseSync(file, { defensive: false })
  raw.exec("CREATE TABLE loose (v TEXT)")
  raw.exec("INSERT INTO loose (v) VALUES (NULL)")
  raw.exec("PRAGMA writable_schema = ON")
  raw.exec("UPDATE sqlite_master SET sql = 'CREATE TABLE loose (v TEXT NOT NULL)' WHERE name = 'loose'")
  raw.exec("PRAGMA application_id = 0")
  raw.close()
  return file
})

describe("Database.layer", () => {
  it.effect("creates the file 0600 in a new 0700 directory", () =>
    Effect.gen(function*() {
      const file = yield* dbFile
      yield* openOnly({ file })
      assert.strictEqual(modeOf(file), 0o600)
      assert.strictEqual(modeOf(path.dirname(file)), 0o700)
    }))

  it.effect("fixes the mode of an existing file to 0600", () =>
    Effect.gen(function*() {
      const file = yield* dbFile
      yield* openOnly({ file })
      fs.chmodSync(file, 0o644)
      yield* openOnly({ file })
      assert.strictEqual(modeOf(file), 0o600)
    }))

  it.effect("the -wal and -shm files SQLite creates beside it are 0600 too, and go when it closes", () =>
    Effect.gen(function*() {
      const file = yield* dbFile
      const previous = process.umask(0o022)
      const modes = yield* withDatabase(
        { file, migrations: testMigrations },
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          yield* sql`INSERT INTO items (id, v) VALUES (1, 'a')`
          return [modeOf(`${file}-wal`), modeOf(`${file}-shm`)]
        })
      ).pipe(Effect.ensuring(Effect.sync(() => process.umask(previous))))
      assert.deepStrictEqual(modes, [0o600, 0o600])
      assert.isFalse(fs.existsSync(`${file}-wal`))
    }))

  it.effect("runs each migration once across reopenings and records it", () =>
    Effect.gen(function*() {
      const file = yield* dbFile
      yield* openOnly({ file, migrations: testMigrations })
      const [runs, recorded] = yield* withDatabase(
        { file, migrations: testMigrations },
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          return [
            yield* sql<{ n: number }>`SELECT n FROM runs`,
            yield* sql<{ migration_id: number; name: string }>`SELECT migration_id, name FROM effect_sql_migrations`
          ] as const
        })
      )
      assert.strictEqual(runs.length, 1)
      assert.deepStrictEqual(recorded, [{ migration_id: 1, name: "items" }])
    }))

  it.effect("a file an older build migrated gets only the migrations it lacks when a newer build opens it", () =>
    Effect.gen(function*() {
      const file = yield* dbFile
      yield* openOnly({ file, migrations: testMigrations })
      const newer: Record<string, Migration> = {
        ...testMigrations,
        "0002_more": Effect.flatMap(SqlClient.SqlClient, (sql) => sql`INSERT INTO runs (n) VALUES (2)`)
      }
      yield* openOnly({ file, migrations: newer })
      const [runs, recorded] = yield* withDatabase(
        { file, migrations: newer },
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          return [
            yield* sql<{ n: number }>`SELECT n FROM runs ORDER BY n`,
            yield* sql<{ migration_id: number }>`SELECT migration_id FROM effect_sql_migrations ORDER BY migration_id`
          ] as const
        })
      )
      assert.deepStrictEqual(runs, [{ n: 1 }, { n: 2 }])
      assert.deepStrictEqual(recorded, [{ migration_id: 1 }, { migration_id: 2 }])
    }))

  it.effect("a migration an earlier build skipped (an id below the highest it recorded) runs when a build that has it opens the file", () =>
    Effect.gen(function*() {
      const file = yield* dbFile
      // As main's build of 2026-12-02 17:30 did: 0008 registered, 0007 not yet.
      const { "0007_replay_blocks": _skipped, ...without } = migrations
      yield* openOnly({ file, migrations: without })
      const [recorded, tables] = yield* withDatabase(
        { file },
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          return [
            (yield* sql<{ migration_id: number }>`SELECT migration_id FROM effect_sql_migrations ORDER BY migration_id`)
              .map((row) => row.migration_id),
            (yield* sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'replay_%'`)
              .map((row) => row.name)
          ] as const
        })
      )
      assert.deepStrictEqual(recorded, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13])
      assert.deepStrictEqual(tables, ["replay_blocks"])
    }))

  it.effect("keeps committed data across reopening, in WAL mode", () =>
    Effect.gen(function*() {
      const file = yield* dbFile
      yield* withDatabase(
        { file, migrations: testMigrations },
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql`INSERT INTO items (id, v) VALUES (1, 'kept')`)
      )
      const [rows, journal] = yield* withDatabase(
        { file, migrations: testMigrations },
        Effect.flatMap(SqlClient.SqlClient, (sql) =>
          Effect.all([sql`SELECT id, v FROM items`, sql<{ journal_mode: string }>`PRAGMA journal_mode`]))
      )
      assert.deepStrictEqual(rows, [{ id: 1, v: "kept" }])
      assert.strictEqual(journal[0]?.journal_mode, "wal")
    }))

  it.effect("refuses a database with a migration newer than this build knows, and leaves it as it was", () =>
    Effect.gen(function*() {
      const file = yield* dbFile
      yield* withDatabase(
        { file, migrations: testMigrations },
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => sql`INSERT INTO effect_sql_migrations (migration_id, name) VALUES (99, 'future')`
        )
      )
      const before = fs.readFileSync(file)
      const error = yield* Effect.flip(openOnly({ file, migrations: testMigrations }))
      assert.instanceOf(error, DatabaseTooNew)
      assert.include(error.message, file)
      assert.include(error.message, "written by a newer effect-intercom")
      assert.include(error.message, "use another agent dir")
      assert.deepInclude(error, { found: 99, known: 1 })
      assert.isTrue(fs.readFileSync(file).equals(before))
      // This build's registry (no migration yet) refuses it too.
      assert.instanceOf(yield* Effect.flip(openOnly({ file })), DatabaseTooNew)
    }))

  // The file, its -wal's bytes (or null), and whether a -shm exists: what a refusal must leave as it found it.
  const filesOf = (file: string) => ({
    db: fs.readFileSync(file).toString("hex"),
    wal: fs.existsSync(`${file}-wal`) ? fs.readFileSync(`${file}-wal`).toString("hex") : null,
    shm: fs.existsSync(`${file}-shm`)
  })

  it.effect("refuses a newer database, in WAL mode with a leftover -wal or in rollback mode, leaving its files as they were", () =>
    Effect.gen(function*() {
      const sqlite = SqliteClient.loadNodeSqlite()
      if (sqlite === undefined) return
      const dir = yield* tempDir
      const newer = (name: string, journal: "WAL" | "DELETE") => {
        const source = path.join(dir, `${name}-source.db`)
        const writer = new sqlite.DatabaseSync(source)
        writer.exec(`PRAGMA journal_mode = ${journal}`)
        writer.exec("PRAGMA wal_autocheckpoint = 0")
        writer.exec("CREATE TABLE effect_sql_migrations (migration_id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        writer.exec("INSERT INTO effect_sql_migrations (migration_id, name) VALUES (99, 'future')")
        // What a broker killed now leaves behind: the file and its -wal, the commits only in the -wal.
        const file = path.join(dir, name, "intercom.db")
        fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
        fs.copyFileSync(source, file)
        if (journal === "WAL") fs.copyFileSync(`${source}-wal`, `${file}-wal`)
        writer.close()
        return file
      }
      for (const file of [newer("wal", "WAL"), newer("rollback", "DELETE")]) {
        const before = filesOf(file)
        const error = yield* Effect.flip(openOnly({ file }))
        assert.instanceOf(error, DatabaseTooNew)
        assert.deepInclude(error, { found: 99 })
        assert.include(error.message, "left it as it was")
        assert.deepStrictEqual(filesOf(file), before, file)
      }
      // The -wal was read, not copied into the file: the refused file's newer migration is only in it.
      assert.isTrue(filesOf(path.join(dir, "wal", "intercom.db")).wal !== null)
    }))

  it.effect("refuses a newer database closed cleanly in WAL mode without leaving a -wal or -shm beside it", () =>
    Effect.gen(function*() {
      const file = yield* dbFile
      yield* withDatabase(
        { file, migrations: testMigrations },
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => sql`INSERT INTO effect_sql_migrations (migration_id, name) VALUES (99, 'future')`
        )
      )
      const before = filesOf(file)
      assert.deepStrictEqual([before.wal, before.shm], [null, false])
      assert.instanceOf(yield* Effect.flip(openOnly({ file, migrations: testMigrations })), DatabaseTooNew)
      assert.deepStrictEqual(filesOf(file), before)
    }))

  it.effect("refuses a file that is not a database, naming it, and leaves its bytes untouched", () =>
    Effect.gen(function*() {
      const file = yield* dbFile
      fs.mkdirSync(path.dirname(file), { recursive: true })
      const garbage = Buffer.from(Array.from({ length: 8192 }, (_, i) => (i * 7919) & 0xff))
      fs.writeFileSync(file, garbage, { mode: 0o600 })
      const error = yield* Effect.flip(openOnly({ file }))
      assert.instanceOf(error, DatabaseCorrupt)
      assert.include(error.message, file)
      assert.include(error.message, `mv ${file} ${file}.corrupt`)
      assert.include(error.message, "not used")
      assert.isTrue(fs.readFileSync(file).equals(garbage))
      assert.isFalse(fs.existsSync(`${file}-wal`))
    }))

  it.effect("refuses another program's SQLite database (tables, no migrations table), naming it, and leaves it as it was", () =>
    Effect.gen(function*() {
      const file = yield* dbFile
      fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
      const { DatabaseSync } = yield* Effect.sync(() => process.getBuiltinModule("node:sqlite"))
      const raw = new DatabaseSync(file)
      raw.exec("CREATE TABLE contacts (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO contacts VALUES (1, 'x')")
      raw.exec("CREATE INDEX contacts_by_name ON contacts (name)")
      raw.close()
      const before = fs.readFileSync(file)
      const error = yield* Effect.flip(openOnly({ file }))
      assert.instanceOf(error, DatabaseForeign)
      assert.include(error.message, `${file} is not an intercom database`)
      assert.include(error.message, "table contacts, index contacts_by_name")
      assert.include(error.message, `mv ${file} ${file}.other`)
      assert.include(error.message, "--dir")
      // Left as it was: the same bytes (rollback mode, no intercom table), and no -wal or -shm beside it.
      assert.isTrue(fs.readFileSync(file).equals(before))
      assert.isFalse(fs.existsSync(`${file}-wal`))
      assert.isFalse(fs.existsSync(`${file}-shm`))
      const after = new DatabaseSync(file, { readOnly: true })
      const tables = after.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all().map((row) => row["name"])
      const mode = after.prepare("PRAGMA journal_mode").get()?.["journal_mode"]
      after.close()
      assert.deepStrictEqual(tables, ["contacts"])
      assert.strictEqual(mode, "delete")
    }))

  it.effect("refuses a current database that lacks a table or index of its schema, naming them, and leaves it as it was", () =>
    Effect.gen(function*() {
      const file = yield* dbFile
      yield* openOnly({ file })
      const { DatabaseSync } = yield* Effect.sync(() => process.getBuiltinModule("node:sqlite"))
      const raw = new DatabaseSync(file)
      raw.exec("DROP TABLE results")
      raw.exec("DROP INDEX questions_by_child")
      raw.close()
      const before = fs.readFileSync(file)
      const error = yield* Effect.flip(openOnly({ file }))
      assert.instanceOf(error, DatabaseCorrupt)
      assert.include(error.message, file)
      assert.include(error.message, "lacks table results, index questions_by_child, index results_space, index results_supervisor, index results_created")
      assert.include(error.message, `mv ${file} ${file}.corrupt`)
      assert.isTrue(fs.readFileSync(file).equals(before))
      assert.isFalse(fs.existsSync(`${file}-wal`))
    }))

  it.effect("an existing empty file (no tables) is still given the schema", () =>
    Effect.gen(function*() {
      const file = yield* dbFile
      fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
      fs.writeFileSync(file, "", { mode: 0o600 })
      const count = yield* withDatabase(
        { file },
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ readonly n: number }>`SELECT count(*) AS n FROM results`)
      )
      assert.deepStrictEqual(count, [{ n: 0 }])
    }))

  it.effect("refuses a database whose pages fail quick_check, and leaves its bytes untouched", () =>
    Effect.gen(function*() {
      const file = yield* dbFile
      yield* withDatabase(
        { file, migrations: testMigrations },
        Effect.flatMap(SqlClient.SqlClient, (sql) =>
          Effect.forEach(
            Array.from({ length: 200 }, (_, i) => i),
            (i) => sql`INSERT INTO items (id, v) VALUES (${i}, ${"v".repeat(200)})`,
            { discard: true }
          ))
      )
      // Scribble over the middle of the file: past the header, inside the table's pages.
      const bytes = fs.readFileSync(file)
      const pageSize = bytes.readUInt16BE(16)
      bytes.fill(0xa5, pageSize * 3, pageSize * 5)
      // As a broker killed while it ran leaves it: without the clean-close mark (application_id, at byte 68).
      bytes.writeUInt32BE(0, 68)
      fs.writeFileSync(file, bytes)
      const error = yield* Effect.flip(openOnly({ file, migrations: testMigrations }))
      assert.instanceOf(error, DatabaseCorrupt)
      assert.include(error.message, file)
      assert.isTrue(fs.readFileSync(file).equals(bytes))
    }))

  it.effect("refuses a database that opens but fails quick_check, quoting its finding", () =>
    Effect.gen(function*() {
      const file = yield* unmarkedFailingQuickCheck
      const before = fs.readFileSync(file)
      const error = yield* Effect.flip(openOnly({ file, migrations: testMigrations }))
      assert.instanceOf(error, DatabaseCorrupt)
      assert.include(error.message, "quick_check")
      assert.include(error.message, "loose.v")
      assert.isTrue(fs.readFileSync(file).equals(before))
    }))

  it.effect("skips the full quick_check for a file its broker closed cleanly, and runs it on one left by a crash", () =>
    Effect.gen(function*() {
      const file = yield* dbFile
      yield* openOnly({ file, migrations: testMigrations })
      // A NULL under a NOT NULL column, as above: only quick_check finds it.
      const { DatabaseSync } = yield* Effect.sync(() => process.getBuiltinModule("node:sqlite"))
      const raw = new DatabaseSync(file, { defensive: false })
      assert.strictEqual(raw.prepare("PRAGMA application_id").get()?.["application_id"], Database.CLEAN_MARK)
      raw.exec("CREATE TABLE loose (v TEXT)")
      raw.exec("INSERT INTO loose (v) VALUES (NULL)")
      raw.exec("PRAGMA writable_schema = ON")
      raw.exec("UPDATE sqlite_master SET sql = 'CREATE TABLE loose (v TEXT NOT NULL)' WHERE name = 'loose'")
      raw.close()
      // Closed cleanly: opened without the full check. A copy of its files taken while it is open is what a
      // broker killed then (kill -9, a crash) leaves: unmarked, it gets the full check and is refused.
      const crashed = path.join(path.dirname(file), "crashed.db")
      yield* withDatabase(
        { file, migrations: testMigrations },
        Effect.sync(() => {
          fs.copyFileSync(file, crashed)
          if (fs.existsSync(`${file}-wal`)) fs.copyFileSync(`${file}-wal`, `${crashed}-wal`)
        })
      )
      const error = yield* Effect.flip(openOnly({ file: crashed, migrations: testMigrations }))
      assert.instanceOf(error, DatabaseCorrupt)
      assert.include(error.message, "quick_check")
    }))

  it.effect("broker.checking names this process while the full check runs, and is gone once it ends", () =>
    Effect.gen(function*() {
      const file = yield* dbFile
      const mark = path.join(path.dirname(file), "broker.checking")
      // What the mark held at the moment each open ran PRAGMA quick_check.
      const seen: Array<string | undefined> = []
      const seesMark = (): SqliteClient.SqliteModule | undefined => {
        const sqlite = SqliteClient.loadNodeSqlite()
        if (sqlite === undefined) return undefined
        class DatabaseSync extends sqlite.DatabaseSync {
          override prepare(sql: string) {
            if (sql === "PRAGMA quick_check") seen.push(fs.existsSync(mark) ? fs.readFileSync(mark, "utf8") : undefined)
            return super.prepare(sql)
          }
        }
        return { ...sqlite, DatabaseSync }
      }
      yield* openOnly({ file, migrations: testMigrations })
      const crashed = path.join(path.dirname(file), "crashed.db")
      yield* withDatabase({ file, migrations: testMigrations }, Effect.sync(() => fs.copyFileSync(file, crashed)))
      // Unmarked (a copy taken while open, as a crash leaves it): checked in full, under the mark.
      yield* openOnly({ file: crashed, migrations: testMigrations, loadSqlite: seesMark, checkingMark: mark })
      assert.deepStrictEqual(seen, [String(process.pid)])
      assert.isFalse(fs.existsSync(mark), "removed after the check")
      // Closed cleanly: no full check, and no mark.
      yield* openOnly({ file: crashed, migrations: testMigrations, loadSqlite: seesMark, checkingMark: mark })
      assert.deepStrictEqual(seen, [String(process.pid)])
      assert.isFalse(fs.existsSync(mark))
    }))

  it.effect("a database refused by the full check leaves no broker.checking behind", () =>
    Effect.gen(function*() {
      const file = yield* unmarkedFailingQuickCheck
      const mark = path.join(path.dirname(file), "broker.checking")
      const error = yield* Effect.flip(openOnly({ file, migrations: testMigrations, checkingMark: mark }))
      assert.instanceOf(error, DatabaseCorrupt)
      assert.include(error.message, "quick_check")
      assert.isFalse(fs.existsSync(mark))
    }))

  it.effect("a copy of the main file alone, taken while the database is open, does not hold the clean-close mark", () =>
    Effect.gen(function*() {
      const file = yield* dbFile
      yield* openOnly({ file, migrations: testMigrations })
      const copy = path.join(path.dirname(file), "copy.db")
      yield* withDatabase({ file, migrations: testMigrations }, Effect.sync(() => fs.copyFileSync(file, copy)))
      const { DatabaseSync } = yield* Effect.sync(() => process.getBuiltinModule("node:sqlite"))
      const raw = new DatabaseSync(copy, { readOnly: true })
      const id = raw.prepare("PRAGMA application_id").get()?.["application_id"]
      raw.close()
      assert.notStrictEqual(id, Database.CLEAN_MARK)
    }))

  it.effect("a reader that kept the open's checkpoint out does not leave the clean-close mark in the main file once it has gone", () =>
    Effect.gen(function*() {
      const file = yield* dbFile
      yield* openOnly({ file, migrations: testMigrations })
      const { DatabaseSync } = yield* Effect.sync(() => process.getBuiltinModule("node:sqlite"))
      const markOfCopy = (name: string) => {
        const copy = path.join(path.dirname(file), name)
        fs.copyFileSync(file, copy)
        const raw = new DatabaseSync(copy, { readOnly: true })
        const id = raw.prepare("PRAGMA application_id").get()?.["application_id"]
        raw.close()
        return id
      }
      // A reader (a backup, an `sqlite3` shell) holding a snapshot from before the open's clear of the mark.
      const reader = new DatabaseSync(file, { readOnly: true })
      reader.exec("BEGIN")
      reader.prepare("SELECT count(*) FROM sqlite_master").get()
      yield* withDatabase(
        { file, migrations: testMigrations },
        Effect.gen(function*() {
          assert.strictEqual(markOfCopy("while-read.db"), Database.CLEAN_MARK, "the reader kept the clear out")
          reader.exec("COMMIT")
          reader.close()
          yield* TestClock.adjust("250 millis")
          assert.notStrictEqual(markOfCopy("after-read.db"), Database.CLEAN_MARK)
        })
      )
    }))

  it.effect("a database that met SQLITE_CORRUPT while open is not marked closed cleanly", () =>
    Effect.gen(function*() {
      const file = yield* dbFile
      yield* openOnly({ file, migrations: testMigrations })
      const { DatabaseSync } = yield* Effect.sync(() => process.getBuiltinModule("node:sqlite"))
      const raw = new DatabaseSync(file)
      raw.exec("CREATE TABLE junk (x INTEGER)")
      raw.exec("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000) INSERT INTO junk SELECT i FROM n")
      raw.exec("CREATE INDEX junk_x ON junk (x)")
      raw.exec("PRAGMA wal_checkpoint(TRUNCATE)")
      const root = Number(raw.prepare("SELECT rootpage FROM sqlite_master WHERE name = 'junk_x'").get()?.["rootpage"])
      const pageSize = Number(raw.prepare("PRAGMA page_size").get()?.["page_size"])
      raw.exec(`PRAGMA application_id = ${Database.CLEAN_MARK}`)
      raw.close()
      // Opened without the full check (marked), then the index's root page is overwritten under it.
      const seen = yield* withDatabase(
        { file, migrations: testMigrations },
        Effect.flatMap(SqlClient.SqlClient, (sql) =>
          Effect.andThen(
            Effect.sync(() => {
              const fd = fs.openSync(file, "r+")
              fs.writeSync(fd, Buffer.alloc(pageSize, 0xa5), 0, pageSize, (root - 1) * pageSize)
              fs.closeSync(fd)
            }),
            sql`SELECT count(*) AS n FROM junk INDEXED BY junk_x WHERE x > 0`.pipe(
              Effect.map(() => "no error"),
              Effect.catch((error) => Effect.succeed(String(error)))
            )
          ))
      )
      assert.include(seen, "malformed")
      const check = new DatabaseSync(file, { readOnly: true })
      const id = check.prepare("PRAGMA application_id").get()?.["application_id"]
      check.close()
      assert.notStrictEqual(id, Database.CLEAN_MARK)
    }))

  // Root ignores modes, so this runs only as another user. (Checked by hand as `nobody` too: a root-owned 0600
  // file is refused the same way.) A file of one's own with a wrong mode is fixed, not refused.
  it.effect.skipIf(isRoot)("refuses a database in a directory it may not write, naming the file", () =>
    Effect.gen(function*() {
      const file = yield* dbFile
      yield* openOnly({ file })
      fs.chmodSync(path.dirname(file), 0o500)
      const error = yield* Effect.flip(openOnly({ file }))
      fs.chmodSync(path.dirname(file), 0o700)
      assert.instanceOf(error, DatabaseUnreadable)
      assert.include(error.message, file)
    }))

  it.effect("without node:sqlite, fails with SqliteUnavailable", () =>
    Effect.gen(function*() {
      const file = yield* dbFile
      const error = yield* Effect.flip(openOnly({ file, loadSqlite: () => undefined }))
      assert.instanceOf(error, SqliteUnavailable)
    }))
})

describe("Database.layerMemory", () => {
  it.effect("is an in-memory database with the migrations table and every registered migration applied", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const tables = yield* sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table'`
      assert.include(tables.map((t) => t.name), "effect_sql_migrations")
      const applied = yield* sql<{ name: string }>`SELECT name FROM effect_sql_migrations ORDER BY migration_id`
      assert.deepStrictEqual(applied.map((m) => m.name), Object.keys(migrations).map((key) => key.replace(/^\d+_/, "")))
    }).pipe(Effect.provide(Database.layerMemory)))
})

describe("Database.layer with another process holding the file's lock at open", () => {
  /** A second connection to `file` holding its write lock (`BEGIN IMMEDIATE`), closed with the scope. */
  const lockedBy = (file: string) =>
    Effect.gen(function*() {
      const sqlite = SqliteClient.loadNodeSqlite()
      if (sqlite === undefined) return yield* Effect.die("no node:sqlite")
      fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
      const other = yield* Effect.acquireRelease(
        Effect.sync(() => new sqlite.DatabaseSync(file)),
        (db) => Effect.sync(() => db.isOpen && db.close())
      )
      other.exec("BEGIN IMMEDIATE")
      return other
    })

  it.live("waits for a lock released within the open's wait, then opens and migrates", () =>
    Effect.gen(function*() {
      const file = yield* dbFile
      const other = yield* lockedBy(file)
      const release = yield* Effect.forkChild(Effect.delay(Effect.sync(() => other.exec("COMMIT")), "400 millis"))
      const tables = yield* withDatabase(
        { file },
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          return yield* sql<{ readonly name: string }>`SELECT name FROM sqlite_master WHERE name = ${Database.MIGRATIONS_TABLE}`
        })
      )
      yield* Fiber.join(release)
      assert.strictEqual(tables.length, 1)
    }))

  it.live("fails with DatabaseBusy naming the file and the wait when the lock outlasts it", () =>
    Effect.gen(function*() {
      const file = yield* dbFile
      yield* lockedBy(file)
      const error = yield* Effect.flip(openOnly({ file, openBusyWait: "300 millis" }))
      assert.instanceOf(error, DatabaseBusy)
      assert.include(error.message, file)
      assert.include(error.message, "300ms")
    }))
})

describe("Database.openError: a write the file system refuses at open", () => {
  /** An error shaped like node:sqlite's (`code: "ERR_SQLITE_ERROR"`, `errcode`, `errstr`), as SqliteClient reports it at open. */
  const atOpen = (errcode: number, message: string) =>
    toSqlError("/a/intercom.db", Object.assign(new Error(message), { code: "ERR_SQLITE_ERROR", errcode, errstr: message }), "open")
  const SQLITE_FULL = 13
  const SQLITE_IOERR_SHMSIZE = 10 | (19 << 8)
  const plenty = () => 10 * 1024 * 1024 * 1024

  /** The open-time text: the broker did not start, so nothing "keeps running" or "tries again" by itself. */
  const assertOpenText = (error: unknown) => {
    assert.instanceOf(error, DatabaseOpenWriteFailed)
    if (!(error instanceof DatabaseOpenWriteFailed)) return
    assert.include(error.message, "Cannot open /a/intercom.db")
    assert.include(error.message, "start the broker again")
    assert.notInclude(error.message, "keeps running")
    assert.notInclude(error.message, "next write")
  }

  it("a new database on a full disk (SQLITE_FULL) says the disk is full and to start the broker again", () => {
    const error = Database.openError("/a/intercom.db", atOpen(SQLITE_FULL, "database or disk is full"), plenty)
    assertOpenText(error)
    assert.strictEqual(error instanceof DatabaseOpenWriteFailed ? error.reason : undefined, "disk-full")
    assert.include(error.message, "the disk is full")
  })

  it("an existing database on a full disk (ENOSPC behind SQLITE_IOERR_SHMSIZE) says the disk is full, not an I/O error", () => {
    const error = Database.openError("/a/intercom.db", atOpen(SQLITE_IOERR_SHMSIZE, "disk I/O error"), () => 4096)
    assertOpenText(error)
    assert.strictEqual(error instanceof DatabaseOpenWriteFailed ? error.reason : undefined, "disk-full")
    assert.include(error.message, "the disk is full")
    assert.include(error.message, "4096 bytes free")
  })

  it("an I/O error at open with space to spare stays an I/O error", () => {
    const error = Database.openError("/a/intercom.db", atOpen(SQLITE_IOERR_SHMSIZE, "disk I/O error"), plenty)
    assertOpenText(error)
    assert.strictEqual(error instanceof DatabaseOpenWriteFailed ? error.reason : undefined, "io-error")
    assert.include(error.message, "an I/O error")
  })
})
