/**
 * The replay outcome `r` (delivered to another session than the record's
 * target: P49's other holder, `Outcome.receiverId`) and migration 0011, the
 * marker that tells a build without `r` the file is newer: this build opens a
 * store the build before it wrote and reads back one it wrote itself; that
 * older build refuses this build's store as newer (`DatabaseTooNew`) rather
 * than failing its load as corrupt on an `r` it cannot read.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as path from "node:path"
import * as Database from "../../src/store/Database.ts"
import { DatabaseTooNew } from "../../src/store/errors.ts"
import { type MailCommit, MailStore } from "../../src/store/MailStore.ts"
import type { StoredRecord } from "../../src/store/mailCodec.ts"
import { type Migration, migrations } from "../../src/store/migrations/index.ts"
import { tempDir } from "./support.ts"

/** The build before `r`: every migration through 0010. */
const { "0011_replay_receiver": _added, "0012_silenced_asks": _later, "0013_stamp_high": _latest, ...beforeR } = migrations

/** A delivered record of alice's message `key` to bob, delivered to `receiverId` when given. */
const deliveredRecord = (key: string, receiverId?: string): StoredRecord => ({
  key,
  sender: "scope\u0000alice",
  fingerprint: {
    targetId: "bob",
    textLength: 3,
    textHash: 12345,
    attachmentsLength: 0,
    attachmentsHash: 0,
    replyTo: undefined,
    expectsReply: undefined,
    supersedes: undefined,
    retryOf: undefined,
    replyErrorLength: -1,
    replyErrorHash: 0
  },
  outcome: receiverId === undefined
    ? { ok: true, delivery: "socket_delivered" }
    : { ok: true, delivery: "socket_delivered", receiverId },
  at: 10
})

const commitOf = (records: ReadonlyArray<StoredRecord>): MailCommit => ({
  records,
  mailPuts: [],
  mailDeletes: [],
  edgePuts: [],
  edgeDeletes: []
})

/** Opens `file` with the migrations `registry` (a build), runs `use` on its MailStore, and closes it. */
const withStore = <A, E>(
  file: string,
  registry: Readonly<Record<string, Migration>>,
  use: Effect.Effect<A, E, MailStore | SqlClient.SqlClient>
) =>
  Effect.scoped(
    Layer.build(Layer.provideMerge(MailStore.sqlite, Database.layer({ file, migrations: registry }))).pipe(
      Effect.flatMap((context) => Effect.provide(use, context))
    )
  )

const recordedIds = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => sql<{ migration_id: number }>`SELECT migration_id FROM effect_sql_migrations ORDER BY migration_id`
).pipe(Effect.map((rows) => rows.map((row) => row.migration_id)))

describe("replay outcome r and its marker migration 0011", () => {
  it.effect("a store the build before r wrote opens in this build: it gets 0011 and loads its records as they were", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "intercom", "intercom.db")
      const old = deliveredRecord("scope\u0000alice\u0000m1")
      yield* withStore(file, beforeR, Effect.flatMap(MailStore, (store) => store.commit(commitOf([old]))))
      const [ids, loaded] = yield* withStore(
        file,
        migrations,
        Effect.all([recordedIds, Effect.flatMap(MailStore, (store) => store.load(0))])
      )
      assert.deepStrictEqual(ids, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13])
      assert.deepStrictEqual(loaded.records, [old])
    }))

  it.effect("a store this build wrote loads its r outcome back, receiver and all", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "intercom", "intercom.db")
      const other = deliveredRecord("scope\u0000alice\u0000m2", "bob-2")
      yield* withStore(file, migrations, Effect.flatMap(MailStore, (store) => store.commit(commitOf([other]))))
      const loaded = yield* withStore(file, migrations, Effect.flatMap(MailStore, (store) => store.load(0)))
      assert.deepStrictEqual(loaded.records, [other])
    }))

  it.effect("the build before r refuses a store this build wrote as written by a newer build, not as corrupt", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "intercom", "intercom.db")
      const other = deliveredRecord("scope\u0000alice\u0000m3", "bob-2")
      yield* withStore(file, migrations, Effect.flatMap(MailStore, (store) => store.commit(commitOf([other]))))
      const error = yield* Effect.flip(withStore(file, beforeR, Effect.flatMap(MailStore, (store) => store.load(0))))
      assert.instanceOf(error, DatabaseTooNew)
      assert.include(error.message, "written by a newer effect-intercom")
      assert.deepInclude(error, { found: 13, known: 10 })
    }))
})
