/** C-ASK-11 behind its option (open question 23): a foreground child's ask to its own parent pauses instead of waiting. */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { makeParentAsk, type PausedQuestion } from "../../src/workflow/ParentAskPause.ts"
import { settle } from "./orderingSupport.ts"

const setup = (pauseOnParentAsk: boolean) => {
  const waited: Array<string> = []
  const paused: Array<PausedQuestion> = []
  const asks = makeParentAsk<never>({
    pauseOnParentAsk,
    parentTargets: ["parent", "parent-id"],
    ask: (target, question) => Effect.sync(() => {
      waited.push(target)
      return `waiter answer to ${question.questionId}`
    }),
    pause: (question) => Effect.sync(() => void paused.push(question))
  })
  return { asks, paused, waited }
}

describe("ParentAsk", () => {
  it.effect("off (the default model): an ask to the parent uses the ordinary reply waiter", () =>
    Effect.gen(function*() {
      const { asks, paused, waited } = setup(false)
      assert.strictEqual(yield* asks.ask("parent", { questionId: "q1", text: "?" }), "waiter answer to q1")
      assert.deepStrictEqual([waited, paused], [["parent"], []])
    }))

  it.effect("on: the parent named in another case or with spaces is still the parent (C-ASK-4): the child pauses", () =>
    Effect.gen(function*() {
      const { asks, paused, waited } = setup(true)
      const asking = yield* Effect.forkChild(asks.ask(" Parent ", { questionId: "q1", text: "which file?" }))
      yield* settle
      assert.deepStrictEqual([paused.map((q) => q.questionId), waited], [["q1"], []])
      assert.isTrue(yield* asks.resume("q1", "src/a.ts"))
      assert.strictEqual(yield* Fiber.join(asking), "src/a.ts")
    }))

  it.effect("on: an ask to the launching parent pauses the child and resumes with the parent's answer (C-ASK-11)", () =>
    Effect.gen(function*() {
      const { asks, paused, waited } = setup(true)
      const asking = yield* Effect.forkChild(asks.ask("parent-id", { questionId: "q1", text: "which file?" }))
      yield* settle
      assert.deepStrictEqual(paused, [{ questionId: "q1", text: "which file?" }])
      assert.isUndefined(asking.pollUnsafe()) // continues only when resumed
      assert.isFalse(yield* asks.resume("q2", "wrong question"))
      assert.isTrue(yield* asks.resume("q1", "src/a.ts"))
      assert.strictEqual(yield* Fiber.join(asking), "src/a.ts")
      assert.deepStrictEqual(waited, [])
      assert.isUndefined(yield* asks.paused)
    }))

  it.effect("on: asks to siblings or other peers still use the normal waiter (C-ASK-11)", () =>
    Effect.gen(function*() {
      const { asks, paused, waited } = setup(true)
      yield* asks.ask("sibling", { questionId: "q1", text: "?" })
      assert.deepStrictEqual([waited, paused], [["sibling"], []])
    }))

  it.effect("on: a second ask to the parent while paused fails and says to wait for the resume", () =>
    Effect.gen(function*() {
      const { asks } = setup(true)
      yield* Effect.forkChild(asks.ask("parent", { questionId: "q1", text: "?" }))
      yield* settle
      const error = yield* Effect.flip(asks.ask("parent", { questionId: "q2", text: "?" }))
      assert.strictEqual(error._tag, "AlreadyPaused")
      assert.include(error.message, "wait for the parent to resume")
    }))
})
