/**
 * The broker's state epoch in the store (`state-epoch-v1`, migration 0010):
 * a database file keeps the epoch its first load made, through every later
 * open, so a durable broker's restart keeps it; another file has another; a
 * database the build before 0010 wrote opens, gets one, and keeps it. The
 * memory store's epoch lives with its state: the same state (a simulated
 * disk) keeps it, a fresh state has a new one.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as path from "node:path"
import * as Database from "../../src/store/Database.ts"
import { MailStore, makeMemory, makeMemoryMailState } from "../../src/store/MailStore.ts"
import { migrations } from "../../src/store/migrations/index.ts"
import { tempDir } from "./support.ts"

/** Opens `file` as a broker does (every migration), loads it, and closes it: the epoch it holds. */
const epochOf = (file: string) =>
  Effect.scoped(
    Layer.build(Layer.provideMerge(MailStore.sqlite, Database.layer({ file }))).pipe(Effect.flatMap((context) =>
      Effect.provide(Effect.flatMap(MailStore, (store) => store.load(0)), context)
    ))
  ).pipe(Effect.map((recovered) => recovered.stateEpoch))

describe("MailStore: the state epoch", () => {
  it.effect("a database file keeps its epoch across opens (a durable restart); another file has another", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const first = path.join(dir, "one", "intercom.db")
      const epoch = yield* epochOf(first)
      assert.isTrue(epoch.length > 0)
      assert.strictEqual(yield* epochOf(first), epoch)
      assert.strictEqual(yield* epochOf(first), epoch)
      assert.notStrictEqual(yield* epochOf(path.join(dir, "two", "intercom.db")), epoch)
    }))

  it.effect("a database the build before 0010 wrote opens: it gets an epoch and keeps it", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "intercom", "intercom.db")
      const { "0010_state_epoch": _added, ...before } = migrations
      yield* Effect.scoped(Layer.build(Database.layer({ file, migrations: before })).pipe(Effect.flatMap((context) =>
        Effect.provide(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`INSERT INTO mail (seq, record_key, body) VALUES (1, 'm1', 'x')`), context)
      )))
      const epoch = yield* Effect.scoped(
        Layer.build(Layer.provideMerge(MailStore.sqlite, Database.layer({ file }))).pipe(Effect.flatMap((context) =>
          Effect.provide(
            Effect.gen(function*() {
              const sql = yield* SqlClient.SqlClient
              yield* sql`DELETE FROM mail` // not mail the store could decode
              return (yield* Effect.flatMap(MailStore, (store) => store.load(0))).stateEpoch
            }),
            context
          )
        ))
      )
      assert.isTrue(epoch.length > 0)
      assert.strictEqual(yield* epochOf(file), epoch)
    }))

  it.effect("the memory store's epoch is its state's: the same state keeps it, a new one has another", () =>
    Effect.gen(function*() {
      const disk = makeMemoryMailState()
      const epoch = (yield* makeMemory(disk).load(0)).stateEpoch
      assert.strictEqual((yield* makeMemory(disk).load(0)).stateEpoch, epoch)
      assert.notStrictEqual((yield* makeMemory(makeMemoryMailState()).load(0)).stateEpoch, epoch)
    }))
})
