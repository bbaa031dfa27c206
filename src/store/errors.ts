/**
 * The store's typed faults: what can go wrong with the broker's database
 * file, each with a message that names the file and says what to do.
 *
 * They fail closed. A file that cannot be read, is not a database, fails its
 * integrity check or was written by a newer build stops the broker from
 * starting; it is never treated as empty, so nothing in it is silently
 * dropped or overwritten. A write that cannot be stored (disk full, I/O
 * error) fails the statement, so nothing unstored is ever acknowledged.
 *
 * Statement failures at run time stay effect's `SqlError` (the `SqlClient`
 * contract); a write failure carries a {@link DatabaseWriteFailed} as its
 * reason's cause and its message, so {@link writeFailureOf} finds it.
 */
import { Data } from "effect"
import type { SqlError } from "effect/sql/SqlError"
import { sqliteMissingMessage } from "../config/nodeSqlite.ts"
import { causeText } from "../protocol/causeText.ts"

/** `node:sqlite` cannot be loaded: this Node.js is too old (or started without it). */
export class SqliteUnavailable extends Data.TaggedError("SqliteUnavailable")<{
  readonly nodeVersion: string
}> {
  override get message(): string {
    return sqliteMissingMessage("The durable store", this.nodeVersion)
  }
}

/**
 * The file is not a SQLite database, or it fails `PRAGMA quick_check`. It
 * was looked at read-only and left as it was, `-wal` included.
 */
export class DatabaseCorrupt extends Data.TaggedError("DatabaseCorrupt")<{
  readonly file: string
  readonly detail: string
}> {
  override get message(): string {
    return `${this.file} is damaged or is not an intercom database (${this.detail}). ` +
      `The broker left it as it was (it was only read; any ${this.file}-wal beside it too). To start with an empty database, stop the broker and move the file aside, e.g. ` +
      `mv ${this.file} ${this.file}.corrupt (also move any ${this.file}-wal and ${this.file}-shm beside it); ` +
      `the data stored in it (undelivered mail, questions, results) is then not used.`
  }
}

/**
 * The file is a SQLite database of another program: it holds tables but no
 * `effect_sql_migrations` table, which every intercom database has from its
 * first open. It was looked at read-only and left as it was; intercom adds
 * nothing to it and does not switch it to WAL mode.
 */
export class DatabaseForeign extends Data.TaggedError("DatabaseForeign")<{
  readonly file: string
  /** Some of the schema objects it holds (tables first), for the message. */
  readonly objects: ReadonlyArray<string>
}> {
  override get message(): string {
    const shown = this.objects.slice(0, 5).join(", ") + (this.objects.length > 5 ? ", …" : "")
    return `${this.file} is not an intercom database: it is a SQLite database of another program (it holds ${shown} ` +
      `and no effect_sql_migrations table). The broker left it as it was (it was only read). Move that file ` +
      `away (e.g. mv ${this.file} ${this.file}.other), or start intercom with --dir pointing at another agent dir; ` +
      `the broker then creates its own database.`
  }
}

/** The file or its directory cannot be read or written by this user. */
export class DatabaseUnreadable extends Data.TaggedError("DatabaseUnreadable")<{
  readonly file: string
  readonly detail: string
}> {
  override get message(): string {
    return `Cannot open ${this.file}: ${causeText(this.detail)}. The broker must be able to read and write the file and its ` +
      `directory: check their owner and modes (the file is expected to be 0600 and owned by you).`
  }
}

/** The database records a migration this build does not know: a newer effect-intercom wrote it. */
export class DatabaseTooNew extends Data.TaggedError("DatabaseTooNew")<{
  readonly file: string
  /** The highest migration id recorded in the file. */
  readonly found: number
  /** The highest migration id this build knows. */
  readonly known: number
}> {
  override get message(): string {
    return `${this.file} was written by a newer effect-intercom (schema migration ${this.found}; this build knows up ` +
      `to ${this.known}). The broker left it as it was (it was only read; any ${this.file}-wal beside it too). ` +
      `Upgrade effect-intercom, or use another agent dir.`
  }
}

/** Why a write could not be stored. */
export type WriteFailure = "disk-full" | "io-error"

/** A write could not be stored: the disk is full or the file system reported an I/O error. Nothing of it was kept. */
export class DatabaseWriteFailed extends Data.TaggedError("DatabaseWriteFailed")<{
  readonly file: string
  readonly reason: WriteFailure
  readonly detail: string
}> {
  override get message(): string {
    return this.reason === "disk-full"
      ? `Cannot write to ${this.file}: the disk is full (${this.detail}). Nothing of this write was stored. ` +
        `Free space on that file system; the broker keeps running and the next write tries again.`
      : `Cannot write to ${this.file}: an I/O error (${this.detail}). Nothing of this write was stored. ` +
        `Check the disk and the file system (dmesg, df) and restart the broker.`
  }
}

/**
 * Another process held a lock on the file for the whole of the open's wait
 * (`Database.OPEN_BUSY_WAIT`): a `sqlite3` shell with an open transaction, or
 * a second program writing the file.
 */
export class DatabaseBusy extends Data.TaggedError("DatabaseBusy")<{
  readonly file: string
  /** How long the open waited for the lock, e.g. "10s". */
  readonly waited: string
  readonly detail: string
}> {
  override get message(): string {
    return `${this.file} stayed locked by another process for ${this.waited} while the broker opened it ` +
      `(${this.detail}). Close the other program's transaction (e.g. a sqlite3 shell ` +
      `left in BEGIN) and start the broker again.`
  }
}

/**
 * Opening the database needed a write the file system refused: the disk is
 * full, or an I/O error (creating the file, its `-wal` or `-shm`, or the
 * schema). The broker did not start; unlike {@link DatabaseWriteFailed},
 * nothing keeps running to try again.
 */
export class DatabaseOpenWriteFailed extends Data.TaggedError("DatabaseOpenWriteFailed")<{
  readonly file: string
  readonly reason: WriteFailure
  readonly detail: string
}> {
  override get message(): string {
    return this.reason === "disk-full"
      ? `Cannot open ${this.file}: the disk is full (${this.detail}). Opening the database writes to it and ` +
        `beside it (its -wal and -shm files). Free space on that file system and start the broker again.`
      : `Cannot open ${this.file}: an I/O error (${this.detail}). Check the disk and the file system ` +
        `(dmesg, df) and start the broker again.`
  }
}

/** Any other failure while opening or migrating the database. */
export class DatabaseOpenFailed extends Data.TaggedError("DatabaseOpenFailed")<{
  readonly file: string
  readonly detail: string
}> {
  override get message(): string {
    return `Cannot open the intercom database ${this.file}: ${causeText(this.detail)}. It was not treated as empty.`
  }
}

/** Every way opening the store can fail (`Database.layer`). */
export type StoreOpenError =
  | SqliteUnavailable
  | DatabaseCorrupt
  | DatabaseForeign
  | DatabaseUnreadable
  | DatabaseTooNew
  | DatabaseBusy
  | DatabaseOpenWriteFailed
  | DatabaseOpenFailed

/**
 * The {@link DatabaseWriteFailed} behind a statement's `SqlError`, if the
 * statement failed because the disk is full or on an I/O error. Services map
 * it to their own "not stored" outcome.
 */
export const writeFailureOf = (error: SqlError): DatabaseWriteFailed | undefined => {
  const cause = error.reason.cause
  return cause instanceof DatabaseWriteFailed ? cause : undefined
}
