/**
 * The highest stamp the broker gave, in the store (migration 0013, review revbq bq1): a commit that carries
 * `stampHigh` replaces the stored one — a lower one too (the broker writes a lower one only after it capped a
 * far-future floor, Router.restore) — a commit without it leaves it, and `load` gives it back; none before the
 * first. The same for the memory store and SQLite.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Database from "../../src/store/Database.ts"
import { type MailCommit, MailStore, makeMemoryMailState } from "../../src/store/MailStore.ts"

const EMPTY: MailCommit = { records: [], mailPuts: [], mailDeletes: [], edgePuts: [], edgeDeletes: [] }

const layers: ReadonlyArray<readonly [string, Layer.Layer<MailStore>]> = [
  ["memory", MailStore.memory(makeMemoryMailState())],
  ["sqlite", Layer.orDie(Layer.provideMerge(MailStore.sqlite, Database.layerMemory))]
]

describe("MailStore: the highest stamp", () => {
  for (const [name, layer] of layers) {
    it.effect(`${name}: none at first; stored, replaced, kept by a commit without one, and loaded`, () =>
      Effect.gen(function*() {
        const store = yield* MailStore
        assert.strictEqual((yield* store.load(0)).stampHigh, undefined)
        yield* store.commit({ ...EMPTY, stampHigh: 2_000 })
        assert.strictEqual((yield* store.load(0)).stampHigh, 2_000)
        yield* store.commit({ ...EMPTY, stampHigh: 5_000 })
        yield* store.commit({ ...EMPTY, edgeDeletes: ["nothing"] })
        assert.strictEqual((yield* store.load(0)).stampHigh, 5_000, "a commit without a stamp changed it")
        yield* store.commit({ ...EMPTY, stampHigh: 3_000 })
        assert.strictEqual((yield* store.load(0)).stampHigh, 3_000, "a lower stamp (after a cap) did not replace it")
      }).pipe(Effect.provide(layer)))
  }
})
