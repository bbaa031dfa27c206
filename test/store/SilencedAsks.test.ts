/**
 * The store's `expired` owed for asks that went silently as answered
 * (SilencedAsks.ts, migration 0012; review revs S1): SQLite and memory keep
 * the same debts through puts and deletes and load them back oldest first,
 * the ask whole and the reply's key with its NULs; a database written by the
 * build before 0012 opens, gets the table and keeps what it held; a stored
 * debt that does not decode fails the load, naming it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as path from "node:path"
import * as Database from "../../src/store/Database.ts"
import {
  type MailCommit,
  MailStore,
  type MailStoreService,
  makeMemory,
  makeMemoryMailState,
  type StoredSilenced
} from "../../src/store/MailStore.ts"
import { migrations } from "../../src/store/migrations/index.ts"
import { tempDir } from "./support.ts"

const sqliteStore = Layer.provideMerge(MailStore.sqlite, Database.layerMemory)

/** Alice's ask `id` to bob, dropped at `at` as answered by bob's reply `replyId` (keys as the broker makes them). */
const silencedOf = (id: string, replyId: string, at: number): StoredSilenced => ({
  replyKey: `scope\u0000bob\u0001${replyId}`,
  at,
  ask: {
    recordKey: `scope\u0000alice\u0001${id}`,
    senderKey: "scope\u0000alice",
    senderId: "alice",
    senderIdentity: undefined,
    fromJson: JSON.stringify({ id: "alice", name: "alice" }),
    message: { id, timestamp: 1, content: { text: "still need this?" }, expectsReply: true },
    brokerReceivedAt: 10,
    spaceKey: "scope",
    targetKey: "scope\u0000bob",
    targetId: "bob",
    targetIdentity: undefined,
    queuedAt: 10,
    askTimeoutMs: 60_000
  }
})

const commitOf = (change: Partial<MailCommit>): MailCommit => ({
  records: [],
  mailPuts: [],
  mailDeletes: [],
  edgePuts: [],
  edgeDeletes: [],
  ...change
})

/** Puts three debts over two commits, deletes one, and loads. */
const putDelete = (store: MailStoreService) =>
  Effect.gen(function*() {
    yield* store.commit(commitOf({ silencedPuts: [silencedOf("q2", "r2", 200), silencedOf("q1", "r1", 100)] }))
    yield* store.commit(commitOf({
      silencedPuts: [silencedOf("q3", "r3", 300)],
      silencedDeletes: [silencedOf("q1", "r1", 0).replyKey]
    }))
    return yield* store.load(0)
  })

describe("MailStore: the expired owed for asks that went silently as answered", () => {
  it.effect("SQLite and memory load back the same debts, oldest first, the ask whole and the reply's key with its NULs", () =>
    Effect.gen(function*() {
      const viaSqlite = yield* Effect.andThen(MailStore, putDelete).pipe(Effect.provide(sqliteStore))
      const viaMemory = yield* putDelete(makeMemory(makeMemoryMailState()))
      for (const loaded of [viaSqlite, viaMemory]) {
        assert.deepStrictEqual(loaded.silenced, [silencedOf("q2", "r2", 200), silencedOf("q3", "r3", 300)])
      }
    }))

  it.effect("a database the build before 0012 wrote opens: it gets the table and keeps its mail", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "intercom", "intercom.db")
      const { "0012_silenced_asks": _added, ...before } = migrations
      // As that build left it: every migration through 0011, and a mail row.
      yield* Effect.scoped(Layer.build(Database.layer({ file, migrations: before })).pipe(Effect.flatMap((context) =>
        Effect.provide(
          Effect.flatMap(SqlClient.SqlClient, (sql) => sql`INSERT INTO mail (seq, record_key, body) VALUES (1, 'm1', 'kept')`),
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
              yield* store.commit(commitOf({ silencedPuts: [silencedOf("q1", "r1", 10)] }))
              return [ids.map((row) => row.migration_id), rows.map((row) => row.body), yield* store.load(0)] as const
            }),
            context
          )
        ))
      )
      assert.deepStrictEqual(recorded, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13])
      assert.deepStrictEqual(mail, ["kept"])
      assert.deepStrictEqual(loaded.silenced, [silencedOf("q1", "r1", 10)])
    }))

  it.effect("a stored debt whose ask does not decode fails the load, naming it; nothing is skipped", () =>
    Effect.gen(function*() {
      const store = yield* MailStore
      const sql = yield* SqlClient.SqlClient
      yield* store.commit(commitOf({ silencedPuts: [silencedOf("q1", "r1", 10)] }))
      yield* sql`INSERT INTO silenced_asks (reply_key, silenced_at, body) VALUES ('k2', 20, '{"not":"mail"}')`
      const error = yield* Effect.flip(store.load(0))
      assert.strictEqual(error.operation, "load")
      assert.include(error.message, "silenced ask")
      assert.include(error.message, "\"k2\"")
    }).pipe(Effect.provide(sqliteStore)))

  it.effect("the memory store fails the load on a debt whose time is not a number", () =>
    Effect.gen(function*() {
      const disk = makeMemoryMailState()
      disk.silencedAsks.set("k", { at: Number.NaN, text: "{}" })
      const error = yield* Effect.flip(makeMemory(disk).load(0))
      assert.include(error.message, "silenced ask")
      assert.include(error.message, "\"k\"")
    }))
})
