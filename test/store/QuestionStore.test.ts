/**
 * QuestionStore (C-DQ-2…5, 10, 13…16): the same behaviours against every
 * layer in `storeLayers` — the memory layer, and the SQLite layer over an
 * in-memory database when the store's `Database` is available — plus a
 * fast-check model of the write-once state machine.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import fc from "fast-check"
import {
  checkPage,
  InvalidQuestionPage,
  type NewQuestion,
  PREVIEW_CHARS,
  stateOf
} from "../../src/store/questionModel.ts"
import { layerMemory, QuestionStore } from "../../src/store/QuestionStore.ts"
import { sqliteLayer, storeLayers } from "./layers.ts"

const question = (id: string, over: Partial<NewQuestion> = {}): NewQuestion => ({
  id,
  ownerId: "sup-1",
  childId: "child-1",
  childName: "worker",
  reason: "need_decision",
  message: `Which way for ${id}?`,
  createdAt: 1_000,
  ...over
})

for (const [name, layer] of storeLayers()) {
  describe(`QuestionStore (${name})`, () => {
    const run = <A, E>(effect: Effect.Effect<A, E, QuestionStore>) => Effect.provide(effect, layer)

    it.effect("a new question awaits input; asking again with the same id returns the saved one", () =>
      run(Effect.gen(function*() {
        const store = yield* QuestionStore
        const first = yield* store.ask(question("q1"))
        assert.isTrue(first.created)
        assert.strictEqual(stateOf(first.record), "awaiting_input")
        const again = yield* store.ask(question("q1", { message: "changed", createdAt: 5 }))
        assert.isFalse(again.created)
        assert.strictEqual(again.record.message, "Which way for q1?")
        const taken = yield* Effect.flip(store.ask(question("q1", { childId: "someone-else" })))
        assert.strictEqual(taken._tag, "QuestionIdTaken")
      })))

    it.effect("answers are trimmed and non-empty; an identical re-answer returns the original time (C-DQ-4)", () =>
      run(Effect.gen(function*() {
        const store = yield* QuestionStore
        yield* store.ask(question("q1"))
        const empty = yield* Effect.flip(store.answer({ id: "q1", ownerId: "sup-1", text: "   ", at: 2_000 }))
        assert.strictEqual(empty._tag, "EmptyAnswer")
        const saved = yield* store.answer({ id: "q1", ownerId: "sup-1", text: "  use A \n", at: 2_000 })
        assert.isTrue(saved.saved)
        assert.strictEqual(saved.record.answer, "use A")
        assert.strictEqual(stateOf(saved.record), "answer_pending")
        const again = yield* store.answer({ id: "q1", ownerId: "sup-1", text: "use A", at: 9_000 })
        assert.isFalse(again.saved)
        assert.strictEqual(again.record.answeredAt, 2_000)
        const other = yield* Effect.flip(store.answer({ id: "q1", ownerId: "sup-1", text: "use B", at: 9_000 }))
        assert.strictEqual(other._tag, "AnswerConflict")
        assert.include(other.message, "already has a different saved answer. The original answer was retained.")
        assert.strictEqual((yield* store.get("q1"))?.answer, "use A")
      })))

    it.effect("another owner's question is not found, for answer, stop and listing (C-DQ-15)", () =>
      run(Effect.gen(function*() {
        const store = yield* QuestionStore
        yield* store.ask(question("q1"))
        const answer = yield* Effect.flip(store.answer({ id: "q1", ownerId: "sup-2", text: "x", at: 1 }))
        assert.strictEqual(answer._tag, "QuestionNotFound")
        const stop = yield* Effect.flip(store.stop({ id: "q1", by: "sup-2", at: 1 }))
        assert.strictEqual(stop._tag, "QuestionNotFound")
        assert.strictEqual((yield* store.list("sup-2", { offset: 0, limit: 20 })).total, 0)
        assert.strictEqual((yield* store.list("sup-1", { offset: 0, limit: 20 })).total, 1)
      })))

    it.effect("answering a cancelled question is refused with a pointer to a follow-up (C-DQ-5)", () =>
      run(Effect.gen(function*() {
        const store = yield* QuestionStore
        yield* store.ask(question("q1"))
        const stopped = yield* store.stop({ id: "q1", by: "sup-1", at: 3 })
        assert.isTrue(stopped.cancelled)
        assert.strictEqual(stateOf(stopped.record), "cancelled")
        const again = yield* store.stop({ id: "q1", by: "sup-1", at: 4 })
        assert.isFalse(again.cancelled)
        const refused = yield* Effect.flip(store.answer({ id: "q1", ownerId: "sup-1", text: "yes", at: 5 }))
        assert.strictEqual(refused._tag, "QuestionCancelled")
        assert.include(refused.message, "new follow-up message")
      })))

    it.effect("the asking child may cancel its own question (an aborted waiter, C-DQ-11)", () =>
      run(Effect.gen(function*() {
        const store = yield* QuestionStore
        yield* store.ask(question("q1"))
        const stopped = yield* store.stop({ id: "q1", by: "child-1", at: 3 })
        assert.isTrue(stopped.cancelled)
      })))

    it.effect("delivery needs a saved answer, wins once, and makes the question answered (C-DQ-9)", () =>
      run(Effect.gen(function*() {
        const store = yield* QuestionStore
        yield* store.ask(question("q1"))
        assert.isFalse(yield* store.deliver("q1", 2))
        yield* store.answer({ id: "q1", ownerId: "sup-1", text: "go", at: 3 })
        assert.isTrue(yield* store.deliver("q1", 4))
        assert.isFalse(yield* store.deliver("q1", 5))
        const record = yield* store.get("q1")
        assert.strictEqual(record === undefined ? undefined : stateOf(record), "answered")
        assert.strictEqual(record?.deliveredAt, 4)
        const stop = yield* Effect.flip(store.stop({ id: "q1", by: "sup-1", at: 6 }))
        assert.strictEqual(stop._tag, "QuestionAlreadyAnswered")
      })))

    it.effect("concurrent answers, deliveries and revival claims each have exactly one winner (C-DQ-3, C-DQ-10)", () =>
      run(Effect.gen(function*() {
        const store = yield* QuestionStore
        yield* store.ask(question("q1"))
        const answers = yield* Effect.all(
          Array.from({ length: 8 }, (_, i) => Effect.result(store.answer({ id: "q1", ownerId: "sup-1", text: `a${i % 2}`, at: 10 + i }))),
          { concurrency: "unbounded" }
        )
        const saved = answers.filter((r) => r._tag === "Success" && r.success.saved)
        assert.strictEqual(saved.length, 1)
        const winner = (yield* store.get("q1"))?.answer
        for (const r of answers) {
          if (r._tag === "Success") assert.strictEqual(r.success.record.answer, winner)
          else assert.strictEqual(r.failure._tag, "AnswerConflict")
        }
        const deliveries = yield* Effect.all(Array.from({ length: 6 }, (_, i) => store.deliver("q1", 100 + i)), {
          concurrency: "unbounded"
        })
        assert.strictEqual(deliveries.filter(Boolean).length, 1)
        const claims = yield* Effect.all(Array.from({ length: 6 }, (_, i) => store.claimRevival("q1", 200 + i)), {
          concurrency: "unbounded"
        })
        assert.strictEqual(claims.filter(Boolean).length, 1)
      })))

    it.effect("listing: unresolved first, then createdAt, then id; nextOffset only when more remain (C-DQ-13)", () =>
      run(Effect.gen(function*() {
        const store = yield* QuestionStore
        yield* store.ask(question("c", { createdAt: 1 }))
        yield* store.ask(question("b", { createdAt: 5 }))
        yield* store.ask(question("a", { createdAt: 5 }))
        yield* store.ask(question("d", { createdAt: 0 }))
        yield* store.stop({ id: "d", by: "sup-1", at: 9 })
        yield* store.answer({ id: "c", ownerId: "sup-1", text: "ok", at: 9 })
        const first = yield* store.list("sup-1", { offset: 0, limit: 2 })
        assert.deepStrictEqual(first.questions.map((q) => q.id), ["c", "a"])
        assert.strictEqual(first.total, 4)
        assert.strictEqual(first.nextOffset, 2)
        const last = yield* store.list("sup-1", { offset: 2, limit: 2 })
        assert.deepStrictEqual(last.questions.map((q) => q.id), ["b", "d"])
        assert.isUndefined(last.nextOffset)
        assert.deepStrictEqual(last.questions.map((q) => q.state), ["awaiting_input", "cancelled"])
        const beyond = yield* store.list("sup-1", { offset: 10, limit: 5 })
        assert.deepStrictEqual(beyond.questions, [])
        assert.isUndefined(beyond.nextOffset)
      })))

    it.effect("previews are cut at 2,048 characters and marked; the record keeps the full text (C-DQ-14)", () =>
      run(Effect.gen(function*() {
        const store = yield* QuestionStore
        const long = "x".repeat(PREVIEW_CHARS + 10)
        yield* store.ask(question("q1", { message: long }))
        yield* store.ask(question("q2"))
        yield* store.answer({ id: "q1", ownerId: "sup-1", text: `${long}y`, at: 3 })
        const page = yield* store.list("sup-1", { offset: 0, limit: 20 })
        const [q1, q2] = page.questions
        assert.strictEqual(q1?.message.length, PREVIEW_CHARS)
        assert.isTrue(q1?.messageTruncated)
        assert.strictEqual(q1?.answer?.length, PREVIEW_CHARS)
        assert.isTrue(q1?.answerTruncated)
        assert.isFalse(q2?.messageTruncated)
        assert.isUndefined(q2?.answerTruncated)
        assert.strictEqual((yield* store.get("q1"))?.message, long)
      })))

    it.effect("old questions are never removed by age (C-DQ-16)", () =>
      run(Effect.gen(function*() {
        const store = yield* QuestionStore
        yield* store.ask(question("old", { createdAt: 0 }))
        yield* store.ask(question("new", { createdAt: 400 * 86_400_000 }))
        const unresolved = yield* store.unresolvedOf("sup-1")
        assert.deepStrictEqual(unresolved.map((q) => q.id), ["old", "new"])
        assert.deepStrictEqual((yield* store.unresolvedFrom("child-1")).map((q) => q.id), ["old", "new"])
      })))
  })
}

describe("question listing requests (C-DQ-13)", () => {
  it("defaults to offset 0 and limit 20; limits 1–100 and non-negative integer offsets only", () => {
    assert.deepStrictEqual(checkPage({}), { offset: 0, limit: 20 })
    assert.deepStrictEqual(checkPage({ offset: 3, limit: 100 }), { offset: 3, limit: 100 })
    for (const bad of [{ limit: 0 }, { limit: 101 }, { limit: 1.5 }, { offset: -1 }, { offset: 0.5 }, { offset: "1" }]) {
      assert.instanceOf(checkPage(bad), InvalidQuestionPage, JSON.stringify(bad))
    }
  })
})

const saved = <A>(record: A | undefined): A => record ?? assert.fail("the question is gone")

/** One step of the model: the operations that race on a question. */
type Step =
  | { readonly op: "answer"; readonly text: string }
  | { readonly op: "stop"; readonly by: "sup-1" | "child-1" }
  | { readonly op: "deliver" }
  | { readonly op: "revive" }

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ op: fc.constant("answer" as const), text: fc.constantFrom("yes", " yes ", "no", "  ") }),
  fc.record({ op: fc.constant("stop" as const), by: fc.constantFrom("sup-1" as const, "child-1" as const) }),
  fc.record({ op: fc.constant("deliver" as const) }),
  fc.record({ op: fc.constant("revive" as const) })
)

for (const [name, layer, runs] of [["memory", layerMemory, 200], ["sqlite", sqliteLayer, 40]] as const) {
  describe(`QuestionStore state machine (fast-check, ${name} layer)`, () => {
    it.effect("random batches of concurrent operations never rewrite a marker and have one winner each", () =>
      Effect.promise(() =>
        fc.assert(fc.asyncProperty(fc.array(fc.array(step, { minLength: 1, maxLength: 5 }), { maxLength: 8 }), (batches) =>
          Effect.runPromise(Effect.provide(
            Effect.gen(function*() {
              const store = yield* QuestionStore
              yield* store.ask(question("q"))
              let at = 10
              let previous = saved(yield* store.get("q"))
              let wins = { answer: 0, stop: 0, deliver: 0, revive: 0 }
              for (const batch of batches) {
                const results = yield* Effect.all(batch.map((s) => {
                  const t = at++
                  switch (s.op) {
                    case "answer":
                      return Effect.map(Effect.result(store.answer({ id: "q", ownerId: "sup-1", text: s.text, at: t })), (r) =>
                        r._tag === "Success" && r.success.saved ? "answer" : undefined)
                    case "stop":
                      return Effect.map(Effect.result(store.stop({ id: "q", by: s.by, at: t })), (r) =>
                        r._tag === "Success" && r.success.cancelled ? "stop" : undefined)
                    case "deliver":
                      return Effect.map(store.deliver("q", t), (won) => won ? "deliver" : undefined)
                    case "revive":
                      return Effect.map(store.claimRevival("q", t), (won) => won ? "revive" : undefined)
                  }
                }), { concurrency: "unbounded" })
                for (const r of results) if (r !== undefined) wins = { ...wins, [r]: wins[r] + 1 }
                const now = saved(yield* store.get("q"))
                // Write-once: a marker set before keeps its value.
                for (const key of ["answer", "answeredAt", "deliveredAt", "cancelledAt", "revivalClaimedAt"] as const) {
                  if (previous[key] !== undefined) assert.strictEqual(now[key], previous[key], key)
                }
                // Delivered and cancelled never both hold; delivery only follows an answer.
                assert.isFalse(now.deliveredAt !== undefined && now.cancelledAt !== undefined)
                if (now.deliveredAt !== undefined) assert.isDefined(now.answer)
                previous = now
              }
              for (const count of Object.values(wins)) assert.isAtMost(count, 1)
            }),
            layer
          ))
        ), { numRuns: runs })
      ))
  })
}
