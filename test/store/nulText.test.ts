/**
 * Free text holding NULs (a question's message and answer, an undelivered
 * entry's payload and failure, a result's title and names) reads back whole,
 * also through a `node:sqlite` that cuts TEXT at its first NUL when it reads
 * it, as Node 22's does (`nulSqlite.ts`). Before, such text came back
 * silently shortened.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as path from "node:path"
import * as Database from "../../src/store/Database.ts"
import type { NewQuestion } from "../../src/store/questionModel.ts"
import { QuestionStore, layerSql as questionsSql } from "../../src/store/QuestionStore.ts"
import { ResultArchive } from "../../src/store/ResultArchive.ts"
import { UndeliveredStore } from "../../src/store/UndeliveredStore.ts"
import { cutsAtNul } from "./nulSqlite.ts"
import { tempDir } from "./support.ts"

/** The database file in a fresh temp dir, opened through the NUL-cutting module. */
const database = Effect.map(tempDir, (dir) => {
  const file = path.join(dir, "intercom.db")
  return { file, layer: Database.layer({ file, loadSqlite: cutsAtNul }) }
})

const question: NewQuestion = {
  id: "q\u00001",
  ownerId: "sup\u0000-1",
  childId: "child\u0000-1",
  childName: "wor\u0000ker",
  reason: "need_decision",
  message: "Which way?\u0000 left or right",
  createdAt: 1_000
}

/** The question as the SQLite store reads it back: every marker present, unset. */
const unanswered = {
  ...question,
  answer: undefined,
  answeredAt: undefined,
  deliveredAt: undefined,
  cancelledAt: undefined,
  revivalClaimedAt: undefined
}

describe("free text with NULs through a node:sqlite that cuts TEXT at NUL (Node 22)", () => {
  it.effect("a durable question's message and answer read back whole: ask, answer, get, list, unresolved", () =>
    Effect.gen(function*() {
      const { layer } = yield* database
      yield* Effect.gen(function*() {
        const store = yield* QuestionStore
        yield* store.ask(question)
        assert.deepStrictEqual(yield* store.unresolvedOf(question.ownerId), [unanswered])
        assert.deepStrictEqual(yield* store.unresolvedFrom(question.childId), [unanswered])
        const again = yield* store.ask(question)
        assert.isFalse(again.created)
        assert.deepStrictEqual(again.record, unanswered)
        const answered = yield* store.answer({ id: question.id, ownerId: question.ownerId, text: "left\u0000, then right", at: 2_000 })
        assert.strictEqual(answered.record.answer, "left\u0000, then right")
        const saved = yield* store.get(question.id)
        assert.strictEqual(saved?.message, question.message)
        assert.strictEqual(saved?.answer, "left\u0000, then right")
        assert.deepStrictEqual(saved, { ...unanswered, answer: "left\u0000, then right", answeredAt: 2_000 })
        const page = yield* store.list(question.ownerId, { offset: 0, limit: 10 })
        assert.strictEqual(page.total, 1)
      }).pipe(Effect.provide(Layer.provide(questionsSql, layer)))
    }))

  it.effect("an undelivered entry's payload and failure read back whole", () =>
    Effect.gen(function*() {
      const { file, layer } = yield* database
      yield* Effect.gen(function*() {
        const area = yield* UndeliveredStore
        const kept = yield* area.keep({
          run: "run\u00003",
          target: "plan\u0000ner",
          kind: "result",
          body: "done\u0000 and the rest of the report",
          reason: "Session\u0000 not found",
          attempts: 6
        })
        assert.deepStrictEqual(yield* area.list(), [kept])
        assert.deepStrictEqual(yield* area.list("run\u00003"), [kept])
        assert.strictEqual(kept.body, "done\u0000 and the rest of the report")
      }).pipe(Effect.provide(Layer.provide(UndeliveredStore.layerSql(file), layer)))
    }))

  it.effect("a result's title, names, run and child read back whole", () =>
    Effect.gen(function*() {
      const { layer } = yield* database
      yield* Effect.gen(function*() {
        const archive = yield* ResultArchive
        const receipt = yield* archive.store({
          from: { id: "wor\u0000ker-1", name: "wor\u0000ker" },
          space: "\u0000",
          group: "gr\u0000oup",
          title: "Fix\u0000 the parser",
          run: "run\u00003",
          child: "ch\u0000ild",
          body: "the whole\u0000 report"
        })
        const viewer = { space: "\u0000", self: "nobody" }
        const page = yield* archive.read(viewer, receipt.ref)
        assert.strictEqual(page.text, "the whole\u0000 report")
        assert.deepStrictEqual(page.result.from, { id: "wor\u0000ker-1", name: "wor\u0000ker" })
        assert.strictEqual(page.result.group, "gr\u0000oup")
        assert.strictEqual(page.result.title, "Fix\u0000 the parser")
        assert.strictEqual(page.result.run, "run\u00003")
        assert.strictEqual(page.result.child, "ch\u0000ild")
        const listed = yield* archive.list(viewer)
        assert.deepStrictEqual(listed.results, [page.result])
      }).pipe(Effect.provide(Layer.provide(ResultArchive.layerSql(), layer)))
    }))
})
