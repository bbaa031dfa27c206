/**
 * `UndeliveredStore` (C-WFD-12), over each layer: an entry is kept with its
 * id, time and a location naming where it is; entries are listed oldest
 * first and by run; the SQLite layer keeps them in the database (migration
 * `0004_undelivered`), and the service has no way to delete one.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as TestClock from "effect/testing/TestClock"
import * as Database from "../../src/store/Database.ts"
import {
  type UndeliveredInput,
  UndeliveredMemoryState,
  UndeliveredStore,
  type UndeliveredStoreService
} from "../../src/store/UndeliveredStore.ts"

const input = (run: string, body: string): UndeliveredInput => ({
  run,
  target: "planner",
  kind: "result",
  body,
  reason: "Session not found",
  attempts: 6
})

const layers: ReadonlyArray<readonly [string, <A, E>(body: (store: UndeliveredStoreService) => Effect.Effect<A, E>) => Effect.Effect<A, E>]> = [
  ["memory", (body) => Effect.suspend(() => body(UndeliveredStore.makeMemory()))],
  ["sqlite", (body) =>
    Effect.scoped(Effect.gen(function*() {
      const database = yield* Layer.build(Database.layerMemory).pipe(Effect.orDie)
      const store = yield* UndeliveredStore.makeSql("/tmp/agent/intercom/intercom.db").pipe(Effect.provideContext(database))
      return yield* body(store)
    }))]
]

describe("UndeliveredStore", () => {
  for (const [name, use] of layers) {
    it.effect(`${name}: C-WFD-12 keeps an entry with its location and lists entries oldest first, by run`, () =>
      use((store) =>
        Effect.gen(function*() {
          yield* TestClock.setTime(1_000)
          const first = yield* store.keep(input("run-1", "first result"))
          yield* TestClock.adjust(5)
          const second = yield* store.keep(input("run-2", "second result"))
          assert.match(first.id, /^undelivered-[0-9a-f]{8}-/)
          assert.notStrictEqual(first.id, second.id)
          assert.strictEqual(first.keptAt, 1_000)
          assert.include(first.location, first.id)
          if (store.durable) assert.include(first.location, "/tmp/agent/intercom/intercom.db")
          else assert.include(first.location, "memory-only")
          const all = yield* store.list()
          assert.deepStrictEqual(all.map((entry) => entry.body), ["first result", "second result"])
          assert.deepStrictEqual(all[0], first)
          assert.deepStrictEqual((yield* store.list("run-2")).map((entry) => entry.id), [second.id])
          // Never deleted: the service offers only keep and list.
          assert.deepStrictEqual(Object.keys(store).sort(), ["durable", "keep", "list"])
        })
      ))
  }

  it.effect("sqlite: entries are rows of the undelivered table (migration 0004_undelivered)", () =>
    Effect.scoped(Effect.gen(function*() {
      const database = yield* Layer.build(Database.layerMemory).pipe(Effect.orDie)
      const store = yield* UndeliveredStore.makeSql("db").pipe(Effect.provideContext(database))
      const entry = yield* store.keep(input("run-9", "kept"))
      const sql = yield* SqlClient.SqlClient.pipe(Effect.provideContext(database))
      const rows = yield* sql<{ id: string; body: string }>`SELECT id, body FROM undelivered`
      assert.deepStrictEqual(rows.map((row) => ({ id: row.id, body: row.body })), [{ id: entry.id, body: "kept" }])
    })))

  it.effect("memory: the state outlives the service built over it", () =>
    Effect.gen(function*() {
      const state = new UndeliveredMemoryState()
      yield* UndeliveredStore.makeMemory(state).keep(input("run-1", "a"))
      assert.deepStrictEqual((yield* UndeliveredStore.makeMemory(state).list()).map((entry) => entry.body), ["a"])
    }))
})
