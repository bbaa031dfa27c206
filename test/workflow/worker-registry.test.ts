/**
 * `WorkerRegistry` (C-WKR-2…10): run handles, peek without side effects,
 * steers queued with acceptance-only receipts, a full inbox, settled workers
 * refusing steers, stop, live results, and the wake-up on settling — and the
 * registry as a session's `Workers` port.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer } from "effect"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import { Host } from "../../src/session/Host.ts"
import { IntercomSession } from "../../src/session/IntercomSession.ts"
import { type WorkerResult, Workers } from "../../src/session/Workers.ts"
import { makeWorkerRegistry, type WorkerRegistration } from "../../src/workflow/WorkerRegistry.ts"
import { makeFakeClient, makeRecordingHost, SELF } from "../session/support.ts"

const registration = (log: Array<string>, extra: Partial<WorkerRegistration> = {}): WorkerRegistration => ({
  summary: "reading the parser",
  stop: Effect.sync(() => void log.push("stopped")),
  onSettled: (result: WorkerResult) => Effect.sync(() => void log.push(`settled ${result.run} ${result.outcome} ${result.text}`)),
  ...extra
})

describe("WorkerRegistry", () => {
  it.effect("C-WKR-2: run handles run-1, run-2, … in registration order; an unknown one is WorkerUnknown", () =>
    Effect.gen(function*() {
      const registry = yield* makeWorkerRegistry()
      const a = yield* registry.register(registration([]))
      const b = yield* registry.register(registration([], { busHandle: "operator#3" }))
      assert.deepStrictEqual([a.run, b.run], ["run-1", "run-2"])
      assert.strictEqual((yield* registry.workers.peek("run-2")).busHandle, "operator#3")
      const unknown = yield* Effect.flip(registry.workers.peek("run-9"))
      assert.strictEqual(unknown._tag, "WorkerUnknown")
    }))

  it.effect("C-WKR-3, C-WKR-4: peek changes nothing; steers queue in order with acceptance receipts and are taken once", () =>
    Effect.gen(function*() {
      const registry = yield* makeWorkerRegistry()
      const worker = yield* registry.register(registration([]))
      const first = yield* registry.workers.steer(worker.run, "skip benchmarks")
      yield* registry.workers.steer(worker.run, "then lint")
      const before = yield* registry.workers.peek(worker.run)
      yield* registry.workers.peek(worker.run)
      assert.deepStrictEqual(yield* registry.workers.peek(worker.run), before)
      assert.strictEqual(first.steerId, "run-1-steer-1")
      assert.deepStrictEqual((yield* worker.takeSteers).map((s) => s.instruction), ["skip benchmarks", "then lint"])
      assert.deepStrictEqual(yield* worker.takeSteers, [])
    }))

  it.effect("C-WKR-9: queued steers and unanswered questions fill the inbox; a full one refuses with WorkerInboxFull", () =>
    Effect.gen(function*() {
      const registry = yield* makeWorkerRegistry({ inboxLimit: 3 })
      const worker = yield* registry.register(registration([]))
      yield* worker.report({ pendingQuestions: 2 })
      yield* registry.workers.steer(worker.run, "one")
      const full = yield* Effect.flip(registry.workers.steer(worker.run, "two"))
      assert.strictEqual(full._tag, "WorkerInboxFull")
      if (full._tag === "WorkerInboxFull") {
        assert.strictEqual(full.pending, 3)
        assert.strictEqual(
          full.message,
          `Worker ${worker.run}'s inbox is full (1 queued instruction(s) it has not taken yet, 2 pending question(s)); ` +
            "nothing was delivered. Wait for the worker to take its queued instructions or answer its questions first."
        )
      }
      yield* worker.takeSteers
      yield* registry.workers.steer(worker.run, "two")
    }))

  it.effect("C-WKR-9: an inbox full of queued steers alone does not blame questions", () =>
    Effect.gen(function*() {
      const registry = yield* makeWorkerRegistry({ inboxLimit: 2 })
      const worker = yield* registry.register(registration([]))
      yield* registry.workers.steer(worker.run, "one")
      yield* registry.workers.steer(worker.run, "two")
      const full = yield* Effect.flip(registry.workers.steer(worker.run, "three"))
      assert.strictEqual(
        full.message,
        `Worker ${worker.run}'s inbox is full (2 queued instruction(s) it has not taken yet); nothing was delivered. ` +
          "Wait for the worker to take its queued instructions first."
      )
    }))

  it.effect("C-WKR-7, C-WKR-10: a settled worker refuses steers; settling runs onSettled once with the result; live result shows output", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const registry = yield* makeWorkerRegistry()
      const worker = yield* registry.register(registration(log))
      yield* worker.report({ output: "half way", summary: "testing" })
      assert.deepStrictEqual(yield* registry.workers.result(worker.run), {
        run: "run-1",
        settled: false,
        outcome: undefined,
        text: "half way"
      })
      yield* worker.settle("completed", "all green", "result:0b7c2a4e-6f1d-4c3b-9a8e-2d5f7e1c3b9a")
      yield* worker.settle("failed", "late")
      assert.deepStrictEqual(log, ["settled run-1 completed all green"])
      const refused = yield* Effect.flip(registry.workers.steer(worker.run, "more"))
      assert.strictEqual(refused._tag, "WorkerSettled")
      assert.include(refused.message, "Read its result (result with run run-1) and delegate a new task.")
      assert.deepStrictEqual(yield* registry.workers.result(worker.run), {
        run: "run-1",
        settled: true,
        outcome: "completed",
        text: "all green",
        resultRef: "result:0b7c2a4e-6f1d-4c3b-9a8e-2d5f7e1c3b9a"
      })
    }))

  it.effect("C-WKR-5: stop stops the work once and settles it as stopped; a second stop finds it settled", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const registry = yield* makeWorkerRegistry()
      const worker = yield* registry.register(registration(log))
      yield* worker.report({ output: "partial" })
      assert.deepStrictEqual(yield* registry.workers.stop(worker.run), { run: "run-1", alreadySettled: false })
      assert.deepStrictEqual(yield* registry.workers.stop(worker.run), { run: "run-1", alreadySettled: true })
      yield* worker.settle("completed", "too late")
      assert.deepStrictEqual(log, ["stopped", "settled run-1 stopped partial"])
    }))

  it.effect("a steer racing a settle either lands before it or is refused as settled, never both", () =>
    Effect.gen(function*() {
      for (let i = 0; i < 20; i++) {
        const registry = yield* makeWorkerRegistry()
        const worker = yield* registry.register(registration([]))
        const steer = yield* Effect.forkChild(Effect.result(registry.workers.steer(worker.run, "x")))
        const settle = yield* Effect.forkChild(worker.settle("completed", "done"))
        const outcome = yield* Fiber.join(steer)
        yield* Fiber.join(settle)
        if (outcome._tag === "Failure") assert.strictEqual(outcome.failure._tag, "WorkerSettled")
        assert.strictEqual((yield* registry.workers.peek(worker.run)).state, "settled")
      }
    }))

  it.effect("as a session's Workers port: the tool's peek, steer and result act on the registry's workers", () =>
    Effect.gen(function*() {
      const registry = yield* makeWorkerRegistry()
      const worker = yield* registry.register(registration([], { requestedThinking: "high" }))
      const client = yield* makeFakeClient(SELF.id)
      const host = yield* makeRecordingHost({ name: "self", cwd: "/work", model: "test-model" })
      const context = yield* Layer.build(
        IntercomSession.layer().pipe(
          Layer.provide(Layer.mergeAll(
            Layer.succeed(IntercomClient, client.service),
            Host.layer(host.service),
            Layer.succeed(Workers, registry.workers)
          ))
        )
      )
      const session = Context.get(context, IntercomSession)
      const peek = yield* session.intercom({ action: "peek", run: worker.run })
      assert.include(peek.text, "Worker run-1: running — reading the parser")
      assert.include(peek.text, "Thinking: requested high; observed not reported")
      const steer = yield* session.intercom({ action: "steer", run: worker.run, message: "hurry" })
      assert.include(steer.text, "Steer accepted for run-1 (run-1-steer-1)")
      assert.deepStrictEqual((yield* worker.takeSteers).map((s) => s.instruction), ["hurry"])
      yield* worker.settle("failed", "tests red")
      const result = yield* session.intercom({ action: "result", run: worker.run })
      assert.strictEqual(result.text, "Worker run-1 failed. Its result:\n\ntests red")
    }))
})
