/**
 * The schema a new, empty database file is given in one step: what the
 * registered migrations up to `snapshot.through` leave behind, as the
 * `CREATE` statements SQLite records for it in `sqlite_master` (text for
 * text), with those migrations recorded in `effect_sql_migrations` (made
 * first, as the Migrator makes it) as effect's `Migrator` records them.
 *
 * Why: a broker's first start in an agent dir (and every bench start) ran
 * all eight migrations through the `Migrator` — its table, its transaction,
 * one Effect, span and SQL compile per statement, tables made and then
 * dropped by later migrations — about 13 ms of CPU of a ~120 ms start
 * (docs/performance.md, "Startup, eleventh stop"). `Database.ts` runs these
 * statements in one synchronous transaction instead, and only on a file that
 * holds nothing yet; any other file still migrates through the `Migrator`,
 * which also runs whatever registered migration comes after the snapshot.
 *
 * A test builds a file both ways (this snapshot, and every migration from
 * version 0) and requires the same `sqlite_master`, the same recorded
 * migrations and the same `user_version`; another requires the snapshot to
 * reach the highest registered id. So a new migration comes with a new
 * snapshot: that test prints the statements it expects.
 */

/** A schema given to a new file in one step (`DatabaseOptions.snapshot`). */
export interface SchemaSnapshot {
  /** The highest migration id it stands for: every registered id up to it is recorded as applied. */
  readonly through: number
  /** The statements that make it, run in order in one transaction. */
  readonly statements: ReadonlyArray<string>
}

/** The table effect's `Migrator` records applied migrations in (as `Database.MIGRATIONS_TABLE`). */
const TABLE = "effect_sql_migrations"

/**
 * This build's statements, in the order the migrations made the objects. The text is
 * SQLite's record of each (`ALTER TABLE … RENAME` quoted `"mail"`), so that a
 * snapshot file and a migrated one compare equal in `sqlite_master`.
 */
const statements: ReadonlyArray<string> = [
  `CREATE TABLE ask_edges (
    message_key TEXT PRIMARY KEY NOT NULL,
    deadline INTEGER NOT NULL,
    body TEXT NOT NULL
  ) WITHOUT ROWID`,
  `CREATE TABLE questions (
    id TEXT PRIMARY KEY NOT NULL,
    owner_id TEXT NOT NULL,
    child_id TEXT NOT NULL,
    child_name TEXT NOT NULL,
    reason TEXT NOT NULL,
    message TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    answer TEXT,
    answered_at INTEGER,
    delivered_at INTEGER,
    cancelled_at INTEGER,
    revival_claimed_at INTEGER
  )`,
  `CREATE INDEX questions_by_owner ON questions (owner_id, created_at, id)`,
  `CREATE INDEX questions_by_child ON questions (child_id)`,
  `CREATE TABLE results (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    ref TEXT NOT NULL UNIQUE,
    space TEXT NOT NULL,
    supervisor TEXT,
    from_id TEXT NOT NULL,
    from_name TEXT,
    group_name TEXT NOT NULL,
    title TEXT,
    run TEXT,
    child TEXT,
    created_at INTEGER NOT NULL,
    total INTEGER NOT NULL,
    original_length INTEGER NOT NULL,
    body BLOB NOT NULL
  )`,
  `CREATE INDEX results_space ON results (space, seq)`,
  `CREATE INDEX results_supervisor ON results (supervisor, seq)`,
  `CREATE INDEX results_created ON results (created_at)`,
  `CREATE TABLE undelivered (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    run TEXT NOT NULL,
    target TEXT NOT NULL,
    kind TEXT NOT NULL,
    body TEXT NOT NULL,
    reason TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    kept_at INTEGER NOT NULL
  )`,
  `CREATE INDEX undelivered_by_run ON undelivered (run, seq)`,
  `CREATE TABLE delivery_marks (
    mark TEXT PRIMARY KEY NOT NULL,
    marked_at INTEGER NOT NULL
  ) WITHOUT ROWID`,
  `CREATE TABLE "mail" (
    seq INTEGER PRIMARY KEY,
    record_key TEXT NOT NULL,
    body TEXT NOT NULL
  )`,
  `CREATE TABLE replay_blocks (
    n INTEGER PRIMARY KEY,
    newest_at INTEGER NOT NULL,
    body TEXT NOT NULL
  )`,
  `CREATE TABLE owed_notices (
    seq INTEGER PRIMARY KEY,
    sender_key TEXT NOT NULL,
    owed_at INTEGER NOT NULL,
    frame TEXT NOT NULL
  )`,
  `CREATE TABLE withdrawn_asks (
    message_key TEXT PRIMARY KEY NOT NULL,
    withdrawn_at INTEGER NOT NULL
  ) WITHOUT ROWID`,
  `CREATE TABLE state_epoch (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    epoch TEXT NOT NULL
  )`,
  `CREATE TABLE silenced_asks (
    reply_key TEXT PRIMARY KEY NOT NULL,
    silenced_at INTEGER NOT NULL,
    body TEXT NOT NULL
  ) WITHOUT ROWID`,
  `CREATE TABLE stamp_high (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    stamp INTEGER NOT NULL
  )`
]

/** This build's snapshot: the schema of migrations 0001–0013. */
export const snapshot: SchemaSnapshot = { through: 13, statements }

/** The Migrator's table as the Migrator makes it (SQLite keeps the text without `IF NOT EXISTS`). */
export const CREATE_MIGRATIONS_TABLE = `CREATE TABLE "${TABLE}" (
  migration_id integer PRIMARY KEY NOT NULL,
  created_at datetime NOT NULL DEFAULT current_timestamp,
  name VARCHAR(255) NOT NULL
)`

/** Records one applied migration, as the `Migrator` does (`created_at` takes its default). */
export const RECORD_MIGRATION = `INSERT INTO "${TABLE}" (migration_id, name) VALUES (?, ?)`
