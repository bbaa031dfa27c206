/**
 * Node 22's `node:sqlite` as far as TEXT goes, on any Node: it reads a TEXT
 * value only up to its first NUL. The emulation wraps this Node's module:
 * writes keep every byte, reads cut every string at its first NUL.
 */
import type { SQLInputValue, StatementSync } from "node:sqlite"
import * as SqliteClient from "../../src/store/SqliteClient.ts"

const cut = (value: unknown): unknown =>
  typeof value === "string" && value.includes("\u0000") ? value.slice(0, value.indexOf("\u0000")) : value

const cutRow = (row: unknown): unknown =>
  Array.isArray(row)
    ? row.map(cut)
    : typeof row === "object" && row !== null
    ? Object.fromEntries(Object.entries(row).map(([name, value]) => [name, cut(value)]))
    : row

/** Node 24's `node:sqlite`, reading TEXT as Node 22's does: up to its first NUL. */
export const cutsAtNul = (): SqliteClient.SqliteModule | undefined => {
  const sqlite = SqliteClient.loadNodeSqlite()
  if (sqlite === undefined) return undefined
  class DatabaseSync extends sqlite.DatabaseSync {
    override prepare(sql: string): StatementSync {
      const statement = super.prepare(sql)
      return new Proxy(statement, {
        get(target, property) {
          if (property === "all") return (...binds: Array<SQLInputValue>) => target.all(...binds).map(cutRow)
          if (property === "get") return (...binds: Array<SQLInputValue>) => cutRow(target.get(...binds))
          const value: unknown = Reflect.get(target, property, target)
          return typeof value === "function" ? value.bind(target) : value
        }
      })
    }
  }
  return { ...sqlite, DatabaseSync }
}

