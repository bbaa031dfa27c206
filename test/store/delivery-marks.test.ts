/**
 * `DeliveryMarks` (C-WFD-11, C-WFD-14), over each layer: a mark is absent
 * until added, adding it twice changes nothing, and the SQLite layer keeps
 * it in `delivery_marks` (migration `0004_undelivered`), where a second
 * service over the same database — a new watcher — sees it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Database from "../../src/store/Database.ts"
import { DeliveryMarks, DeliveryMarksMemoryState } from "../../src/store/DeliveryMarks.ts"

describe("DeliveryMarks", () => {
  it.effect("memory: absent until added; added twice is one mark; the state outlives the service", () =>
    Effect.gen(function*() {
      const state = new DeliveryMarksMemoryState()
      const marks = DeliveryMarks.makeMemory(state)
      assert.isFalse(yield* marks.has("run-1\u0000message"))
      yield* marks.add("run-1\u0000message")
      yield* marks.add("run-1\u0000message")
      assert.isTrue(yield* DeliveryMarks.makeMemory(state).has("run-1\u0000message"))
      assert.strictEqual(state.marks.size, 1)
    }))

  it.effect("sqlite: a mark written by one service is seen by another over the same database", () =>
    Effect.scoped(Effect.gen(function*() {
      const database = yield* Layer.build(Database.layerMemory).pipe(Effect.orDie)
      const first = yield* DeliveryMarks.makeSql.pipe(Effect.provideContext(database))
      assert.isFalse(yield* first.has("k"))
      yield* first.add("k")
      yield* first.add("k")
      const second = yield* DeliveryMarks.makeSql.pipe(Effect.provideContext(database))
      assert.isTrue(yield* second.has("k"))
      assert.isFalse(yield* second.has("other"))
    })))
})
