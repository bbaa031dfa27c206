/**
 * The store's asks withdrawn after their reply closed them (WithdrawnAsks.ts,
 * migration 0009): SQLite and memory keep the same withdrawals through puts,
 * deletes and the prune, and load them back oldest first, keys with NULs
 * whole; a database written by the build before 0009 opens, gets the table
 * and keeps what it held; a stored withdrawal that does not decode fails
 * the load, naming it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as path from "node:path"
import { MAX_ASK_TIMEOUT_MS } from "../../src/protocol/constants.ts"
import * as Database from "../../src/store/Database.ts"
import {
  type MailCommit,
  MailStore,
  type MailStoreService,
  makeMemory,
  makeMemoryMailState,
  type StoredWithdrawal
} from "../../src/store/MailStore.ts"
import { migrations } from "../../src/store/migrations/index.ts"
import { tempDir } from "./support.ts"

const sqliteStore = Layer.provideMerge(MailStore.sqlite, Database.layerMemory)

/** An ask's key as the broker makes it: its asker's registry key (scope NUL id) and its message id. */
const withdrawalOf = (asker: string, id: string, at: number): StoredWithdrawal => ({
  messageKey: `scope\u0000${asker}\u0000${id}`,
  at
})

const commitOf = (change: Partial<MailCommit>): MailCommit => ({
  records: [],
  mailPuts: [],
  mailDeletes: [],
  edgePuts: [],
  edgeDeletes: [],
  ...change
})

const DAY = 86_400_000

/** Puts four withdrawals over two commits, deletes one, prunes past the oldest's age, and loads. */
const putDeletePrune = (store: MailStoreService) =>
  Effect.gen(function*() {
    yield* store.commit(commitOf({
      withdrawalPuts: [withdrawalOf("alice", "q2", 2 * DAY), withdrawalOf("alice", "q1", DAY), withdrawalOf("carol", "q3", 3 * DAY)]
    }))
    yield* store.commit(commitOf({
      withdrawalPuts: [withdrawalOf("alice", "q4", 4 * DAY)],
      withdrawalDeletes: [withdrawalOf("carol", "q3", 0).messageKey],
      // No ask outlives q1 (withdrawn on day 1) past day 1 + MAX_ASK_TIMEOUT_MS.
      prune: { recordsBefore: 0, edgesUntil: DAY + MAX_ASK_TIMEOUT_MS }
    }))
    return yield* store.load(0)
  })

describe("MailStore: asks withdrawn after their reply closed them", () => {
  it.effect("SQLite and memory load back the same withdrawals, oldest first, with their keys whole", () =>
    Effect.gen(function*() {
      const viaSqlite = yield* Effect.andThen(MailStore, putDeletePrune).pipe(Effect.provide(sqliteStore))
      const viaMemory = yield* putDeletePrune(makeMemory(makeMemoryMailState()))
      for (const loaded of [viaSqlite, viaMemory]) {
        assert.deepStrictEqual(loaded.withdrawals, [withdrawalOf("alice", "q2", 2 * DAY), withdrawalOf("alice", "q4", 4 * DAY)])
      }
    }))

  it.effect("a database the build before 0009 wrote opens: it gets the table and keeps its mail and edges", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "intercom", "intercom.db")
      const { "0009_withdrawn_asks": _added, ...before } = migrations
      const edge = { messageKey: "k1", messageId: "q1", askerKey: "a", targetKey: "b", deadline: 5_000 }
      // As that build left it: every migration through 0008, an open edge and a mail row.
      yield* Effect.scoped(Layer.build(Database.layer({ file, migrations: before })).pipe(Effect.flatMap((context) =>
        Effect.provide(
          Effect.gen(function*() {
            const sql = yield* SqlClient.SqlClient
            yield* sql`INSERT INTO ask_edges (message_key, deadline, body) VALUES ('k1', 5000, ${JSON.stringify(edge)})`
            yield* sql`INSERT INTO mail (seq, record_key, body) VALUES (1, 'm1', 'kept')`
          }),
          context
        )
      )))
      const [recorded, mail, loaded] = yield* Effect.scoped(
        Layer.build(Layer.provideMerge(MailStore.sqlite, Database.layer({ file }))).pipe(Effect.flatMap((context) =>
          Effect.provide(
            Effect.gen(function*() {
              const sql = yield* SqlClient.SqlClient
              const ids = yield* sql<{ migration_id: number }>`SELECT migration_id FROM effect_sql_migrations ORDER BY migration_id`
              const rows = yield* sql<{ body: string }>`SELECT body FROM mail`
              yield* sql`DELETE FROM mail` // its body is no mail the store could decode: kept, then set aside
              const store = yield* MailStore
              yield* store.commit(commitOf({ withdrawalPuts: [withdrawalOf("alice", "q1", 10)] }))
              return [ids.map((row) => row.migration_id), rows.map((row) => row.body), yield* store.load(0)] as const
            }),
            context
          )
        ))
      )
      assert.deepStrictEqual(recorded, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13])
      assert.deepStrictEqual(mail, ["kept"])
      assert.deepStrictEqual(loaded.edges, [edge])
      assert.deepStrictEqual(loaded.withdrawals, [withdrawalOf("alice", "q1", 10)])
    }))

  it.effect("a stored withdrawal whose time is not a number fails the load, naming it; nothing is skipped", () =>
    Effect.gen(function*() {
      const store = yield* MailStore
      const sql = yield* SqlClient.SqlClient
      yield* store.commit(commitOf({ withdrawalPuts: [withdrawalOf("alice", "q1", 10)] }))
      yield* sql`INSERT INTO withdrawn_asks (message_key, withdrawn_at) VALUES ('k2', 'yesterday')`
      const error = yield* Effect.flip(store.load(0))
      assert.strictEqual(error.operation, "load")
      assert.include(error.message, "withdrawn ask")
    }).pipe(Effect.provide(sqliteStore)))

  it.effect("the memory store fails the load on such a withdrawal too", () =>
    Effect.gen(function*() {
      const disk = makeMemoryMailState()
      disk.withdrawals.set("k", Number.NaN)
      const error = yield* Effect.flip(makeMemory(disk).load(0))
      assert.include(error.message, "withdrawn ask")
      assert.include(error.message, "\"k\"")
    }))
})
