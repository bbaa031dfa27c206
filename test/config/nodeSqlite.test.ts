/**
 * `node:sqlite` where this Node.js has none (Node 20, the system node here):
 * a lock of the agent dir, or a workflow parent's journal lock, said
 * "Cannot destructure property 'DatabaseSync'" before; `requireNodeSqlite`
 * says which Node.js lacks it and what to do, and the durable store and the
 * broker's start say the same (`sqliteMissingMessage`). Where the module is
 * there (the Node 24 the tests run on), it is returned as loaded.
 */
import { assert, describe, it } from "@effect/vitest"
import { loadNodeSqlite, requireNodeSqlite, sqliteMissingMessage } from "../../src/config/nodeSqlite.ts"
import { SqliteUnavailable } from "../../src/store/errors.ts"

describe("node:sqlite, present or not", () => {
  it("a Node.js without it gets an error naming that Node.js and the version to upgrade to", () => {
    assert.throws(
      () => requireNodeSqlite("The lock of an intercom file", () => undefined, "v20.19.0"),
      "The lock of an intercom file needs node:sqlite, which this Node.js (v20.19.0) does not provide. " +
        "Upgrade Node.js to 22.19 or later, the versions effect-intercom supports."
    )
  })

  it("the durable store says the same", () => {
    assert.strictEqual(
      new SqliteUnavailable({ nodeVersion: "v20.19.0" }).message,
      sqliteMissingMessage("The durable store", "v20.19.0")
    )
  })

  it("where it is present, the loaded module is returned", () => {
    const sqlite = loadNodeSqlite()
    assert.isDefined(sqlite, "this Node.js has no node:sqlite: the tests run on Node 24")
    assert.strictEqual(requireNodeSqlite("The durable store"), sqlite)
  })
})
