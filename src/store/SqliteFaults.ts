/**
 * How the driver reports `node:sqlite`'s errors: as effect's `SqlError`, so
 * callers handle one error type whatever the driver.
 *
 * A full disk (`SQLITE_FULL`) or an I/O error (`SQLITE_IOERR*`) carries a
 * `DatabaseWriteFailed` naming the file as its reason's cause and message; a
 * `PRIMARY KEY` conflict is a `UniqueViolation`, like a `UNIQUE` index
 * conflict (effect's classifier calls the former a `ConstraintError`), so
 * "insert, and lose if it exists" needs one check; the rest goes through
 * effect's `classifySqliteError`.
 */
import { SqlError } from "effect/sql"
import { DatabaseCorrupt, DatabaseWriteFailed } from "./errors.ts"

const SQLITE_IOERR = 10
const SQLITE_FULL = 13
const SQLITE_CONSTRAINT_PRIMARYKEY = 1555
/** SQLite's result code for a damaged file (also Database.ts's, at open). */
export const SQLITE_CORRUPT = 11
/** SQLite's result code for a file that is not a database (also Database.ts's, at open). */
export const SQLITE_NOTADB = 26

/**
 * Whether `cause` (a `node:sqlite` error) says the file itself may be
 * damaged: SQLITE_CORRUPT, SQLITE_NOTADB or an I/O error. A connection that
 * met one is not marked closed cleanly (Database.ts), so the next open checks
 * the whole file.
 */
export const isDamage = (cause: unknown): boolean => {
  const errcode = sqliteErrcode(cause)
  const primary = errcode === undefined ? undefined : errcode & 0xff
  return primary === SQLITE_CORRUPT || primary === SQLITE_NOTADB || primary === SQLITE_IOERR
}

/** SQLite's extended result code of a `node:sqlite` error, if it is one. */
export const sqliteErrcode = (error: unknown): number | undefined =>
  typeof error === "object" && error !== null && "errcode" in error && typeof error.errcode === "number"
    ? error.errcode
    : undefined

const describe = (error: unknown): string => error instanceof Error ? error.message : String(error)

/** A `node:sqlite` error as effect's `SqlError`; disk-full and I/O errors carry a {@link DatabaseWriteFailed}. */
export const toSqlError = (file: string, cause: unknown, operation: string): SqlError.SqlError => {
  if (cause instanceof DatabaseCorrupt) {
    return new SqlError.SqlError({
      reason: new SqlError.UnknownError({ cause, message: cause.message, operation })
    })
  }
  const errcode = sqliteErrcode(cause)
  const primary = errcode === undefined ? undefined : errcode & 0xff
  if (primary === SQLITE_FULL || primary === SQLITE_IOERR) {
    const failure = new DatabaseWriteFailed({
      file,
      reason: primary === SQLITE_FULL ? "disk-full" : "io-error",
      detail: describe(cause)
    })
    return new SqlError.SqlError({
      reason: new SqlError.UnknownError({ cause: failure, message: failure.message, operation })
    })
  }
  if (errcode === SQLITE_CONSTRAINT_PRIMARYKEY) {
    // "UNIQUE constraint failed: t.id", like a UNIQUE index: one uniqueness error for both.
    const message = describe(cause)
    const at = message.indexOf(":")
    return new SqlError.SqlError({
      reason: new SqlError.UniqueViolation({
        cause,
        message: `${operation} failed: ${message}`,
        operation,
        constraint: at === -1 ? "unknown" : message.slice(at + 1).trim()
      })
    })
  }
  // effect's classifier reads SQLite's code from `errno`; node:sqlite calls it `errcode`.
  const classified = SqlError.classifySqliteError(
    errcode === undefined ? cause : { errno: errcode, message: describe(cause), cause },
    { message: `${operation} failed: ${describe(cause)}`, operation }
  )
  return new SqlError.SqlError({ reason: classified })
}

/** A statement refused before SQLite ran it (unbindable parameter, several statements in one text). */
export const statementError = (message: string, operation: string): SqlError.SqlError =>
  new SqlError.SqlError({ reason: new SqlError.SqlSyntaxError({ cause: message, message, operation }) })
