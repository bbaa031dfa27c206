/** How `node:sqlite`'s errors become `SqlError`s: write failures, uniqueness, and the rest. */
import { assert, describe, it } from "@effect/vitest"
import { DatabaseWriteFailed, writeFailureOf } from "../../src/store/errors.ts"
import { toSqlError } from "../../src/store/SqliteFaults.ts"

/** An error shaped like node:sqlite's (`code: "ERR_SQLITE_ERROR"`, `errcode`, `errstr`). */
const nodeSqliteError = (errcode: number, message: string) =>
  Object.assign(new Error(message), { code: "ERR_SQLITE_ERROR", errcode, errstr: message })

describe("toSqlError", () => {
  it("maps SQLITE_IOERR_WRITE (an extended I/O code) to an io-error DatabaseWriteFailed naming the file", () => {
    const error = toSqlError("/a/intercom.db", nodeSqliteError(10 | (3 << 8), "disk I/O error"), "execute")
    const failure = writeFailureOf(error)
    assert.instanceOf(failure, DatabaseWriteFailed)
    assert.strictEqual(failure?.reason, "io-error")
    assert.include(error.message, "/a/intercom.db")
    assert.include(error.message, "Nothing of this write was stored")
  })

  it("maps SQLITE_FULL to a disk-full DatabaseWriteFailed", () => {
    const error = toSqlError("/a/intercom.db", nodeSqliteError(13, "database or disk is full"), "execute")
    assert.strictEqual(writeFailureOf(error)?.reason, "disk-full")
  })

  it("maps a PRIMARY KEY conflict to UniqueViolation with the constraint named", () => {
    const error = toSqlError("/a/intercom.db", nodeSqliteError(1555, "UNIQUE constraint failed: t.id"), "execute")
    assert.strictEqual(error.reason._tag, "UniqueViolation")
    assert.deepInclude(error.reason, { constraint: "t.id" })
    assert.isUndefined(writeFailureOf(error))
  })

  it("leaves other codes to effect's classifier (SQLITE_BUSY is a lock timeout)", () => {
    const error = toSqlError("/a/intercom.db", nodeSqliteError(5, "database is locked"), "execute")
    assert.strictEqual(error.reason._tag, "LockTimeoutError")
    assert.include(error.message, "database is locked")
  })
})
