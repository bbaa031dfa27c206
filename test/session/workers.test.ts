/**
 * Supervised-worker operations in the session runtime (C-WKR-1…10): the
 * `peek`, `steer`, `stop` and live `result` tool actions over the host's
 * `Workers` port, and how `stop` and `result` are told apart from the
 * durable-question and archived-report forms.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { Host } from "../../src/session/Host.ts"
import { IntercomSession } from "../../src/session/IntercomSession.ts"
import {
  type SteerReceipt,
  type WorkerFailure,
  WorkerInboxFull,
  Workers,
  type WorkersService,
  WorkerSettled,
  WorkerUnknown,
  type WorkerView
} from "../../src/session/Workers.ts"
import { B, inboundMessage, makeFakeClient, makeRecordingHost, refuseWith, SELF, settle } from "./support.ts"

interface FakeWorker {
  view: WorkerView
  steers: Array<string>
  pendingQuestions: number
  output: string
  stopped: boolean
}

/** A tiny engine: workers by run handle, steers queued in order. */
const fakeEngine = () => {
  const workers = new Map<string, FakeWorker>()
  const calls: Array<string> = []
  const add = (run: string, view: Partial<WorkerView> = {}, extra: Partial<FakeWorker> = {}) =>
    workers.set(run, {
      view: { run, state: "running", summary: "parsing the lexer", ...view },
      steers: [],
      pendingQuestions: 0,
      output: "partial output",
      stopped: false,
      ...extra
    })
  const find = (run: string) => {
    const worker = workers.get(run)
    return worker === undefined ? Effect.fail(new WorkerUnknown({ run })) : Effect.succeed(worker)
  }
  const service: WorkersService = {
    peek: (run) => Effect.map(Effect.tap(find(run), () => Effect.sync(() => void calls.push(`peek ${run}`))), (w) => w.view),
    steer: (run, instruction) =>
      Effect.flatMap(find(run), (w): Effect.Effect<SteerReceipt, WorkerFailure> => {
        calls.push(`steer ${run}`)
        if (w.view.state === "settled") return Effect.fail(new WorkerSettled({ run, outcome: w.view.outcome ?? "completed" }))
        if (w.pendingQuestions >= 4) return Effect.fail(new WorkerInboxFull({ run, pending: w.pendingQuestions }))
        w.steers.push(instruction)
        return Effect.succeed<SteerReceipt>({ run, steerId: `steer-${w.steers.length}`, acceptedAt: 0 })
      }),
    stop: (run) =>
      Effect.map(find(run), (w) => {
        calls.push(`stop ${run}`)
        const alreadySettled = w.view.state === "settled"
        w.view = { ...w.view, state: "settled", outcome: w.view.outcome ?? "stopped" }
        w.stopped = !alreadySettled
        return { run, alreadySettled }
      }),
    result: (run) =>
      Effect.map(find(run), (w) => ({
        run,
        settled: w.view.state === "settled",
        outcome: w.view.outcome,
        text: w.output,
        ...(w.view.state === "settled" ? { resultRef: "result:0b7c2a4e-6f1d-4c3b-9a8e-2d5f7e1c3b9a" } : {})
      }))
  }
  return { workers, calls, add, service }
}

/** A session over a fake client, with `engine` as its Workers port (none: no port). */
const sessionWith = (engine: WorkersService | undefined) =>
  Effect.gen(function*() {
    const client = yield* makeFakeClient(SELF.id)
    const host = yield* makeRecordingHost({ name: "self", cwd: "/work", model: "test-model" })
    const ports = Layer.mergeAll(Layer.succeed(IntercomClient, client.service), Host.layer(host.service))
    const context = yield* Layer.build(
      IntercomSession.layer().pipe(
        Layer.provide(engine === undefined ? ports : Layer.merge(ports, Layer.succeed(Workers, engine)))
      )
    )
    return { session: Context.get(context, IntercomSession), client }
  })

describe("supervised-worker actions", () => {
  it.effect("C-WKR-2: peek, steer, stop and result take the run handle; a bus handle or a result:<UUID> is refused and the engine is not asked", () =>
    Effect.gen(function*() {
      const engine = fakeEngine()
      engine.add("run-3", { busHandle: "operator#3" })
      const { session } = yield* sessionWith(engine.service)
      for (const action of ["peek", "steer", "stop", "result"]) {
        const bus = yield* session.intercom({ action, run: "operator#3", message: "go" })
        assert.isTrue(bus.isError)
        assert.strictEqual(bus.details["error"], "WorkerAddressInvalid")
        assert.include(bus.text, "operator#3 is a bus handle (from list)")
        assert.include(bus.text, "Use send to message a bus handle")
      }
      const archived = yield* session.intercom({ action: "peek", run: "result:0b7c2a4e-6f1d-4c3b-9a8e-2d5f7e1c3b9a" })
      assert.include(archived.text, "names stored evidence, not a live worker")
      const missing = yield* session.intercom({ action: "peek" })
      assert.include(missing.text, "Missing 'run' parameter for action 'peek'")
      assert.deepStrictEqual(engine.calls, [])
    }))

  it.effect("C-WKR-2: stop with questionId and result with ref keep their question and archive forms", () =>
    Effect.gen(function*() {
      const engine = fakeEngine()
      const { session } = yield* sessionWith(engine.service)
      const stop = yield* session.intercom({ action: "stop", questionId: "q-1" })
      assert.strictEqual(stop.details["error"], "QuestionsUnavailable")
      const result = yield* session.intercom({ action: "result", ref: "result:0b7c2a4e-6f1d-4c3b-9a8e-2d5f7e1c3b9a" })
      assert.strictEqual(result.details["error"], "ResultsUnavailable")
      assert.deepStrictEqual(engine.calls, [])
    }))

  it.effect("C-WKR-2: run is never mixed with the other forms' parameters; the call is refused naming both", () =>
    Effect.gen(function*() {
      const engine = fakeEngine()
      engine.add("run-3")
      const { session } = yield* sessionWith(engine.service)
      const stop = yield* session.intercom({ action: "stop", run: "run-3", questionId: "q-1" })
      assert.strictEqual(
        stop.text,
        "stop takes either run (a worker) or questionId (a durable question), not both: 'questionId' was given with 'run'."
      )
      const result = yield* session.intercom({ action: "result", run: "run-3", offset: 10 })
      assert.strictEqual(
        result.text,
        "result takes either run (a worker) or ref (an archived report, paged with offset and limit), not both: 'offset' was given with 'run'."
      )
      assert.deepStrictEqual(engine.calls, [])
    }))

  it.effect("C-WKR-1, C-WKR-3: peek shows state, requested and observed thinking apart, and changes nothing", () =>
    Effect.gen(function*() {
      const engine = fakeEngine()
      engine.add("run-3", { busHandle: "operator#3", model: "anthropic/opus", requestedThinking: "high" })
      const { session } = yield* sessionWith(engine.service)
      const before = structuredClone(engine.workers.get("run-3"))
      const peek = yield* session.intercom({ action: "peek", run: "run-3" })
      assert.isFalse(peek.isError, peek.text)
      assert.strictEqual(
        peek.text,
        "Worker run-3: running — parsing the lexer\nBus handle: operator#3\nModel: anthropic/opus\n" +
          "Thinking: requested high; observed not reported\nPeeking changed nothing."
      )
      assert.deepStrictEqual(engine.workers.get("run-3"), before)
    }))

  it.effect("C-WKR-4, C-WKR-16: a steer receipt proves acceptance only; C-WKR-10: it says the completion wakes the supervisor", () =>
    Effect.gen(function*() {
      const engine = fakeEngine()
      engine.add("run-3")
      const { session } = yield* sessionWith(engine.service)
      const steer = yield* session.intercom({ action: "steer", run: "run-3", message: "Skip the benchmarks." })
      assert.isFalse(steer.isError, steer.text)
      assert.include(steer.text, "Steer accepted for run-3 (steer-1): it is queued for the worker.")
      assert.include(steer.text, "This proves acceptance only, not that the worker has read or acted on it.")
      assert.include(steer.text, "end your turn instead of polling or sleeping")
      assert.strictEqual(steer.details["accepted"], true)
      assert.strictEqual(steer.details["actedOn"], false)
      assert.deepStrictEqual(engine.workers.get("run-3")!.steers, ["Skip the benchmarks."])
      const empty = yield* session.intercom({ action: "steer", run: "run-3", message: "  " })
      assert.strictEqual(empty.text, "Missing 'message' parameter for action 'steer'.")
    }))

  it.effect("C-WKR-6: a worker without a bus handle can be steered", () =>
    Effect.gen(function*() {
      const engine = fakeEngine()
      engine.add("run-4")
      const { session } = yield* sessionWith(engine.service)
      const peek = yield* session.intercom({ action: "peek", run: "run-4" })
      assert.include(peek.text, "Bus handle: none (steer, stop and result still work with the run handle)")
      const steer = yield* session.intercom({ action: "steer", run: "run-4", message: "Faster." })
      assert.isFalse(steer.isError)
    }))

  it.effect("C-WKR-5, C-WKR-7: stop stops the worker; a settled worker cannot be steered and the error says to read the result and delegate anew", () =>
    Effect.gen(function*() {
      const engine = fakeEngine()
      engine.add("run-3")
      const { session } = yield* sessionWith(engine.service)
      const stop = yield* session.intercom({ action: "stop", run: "run-3" })
      assert.strictEqual(stop.text, "Worker run-3 stopped.")
      assert.isTrue(engine.workers.get("run-3")!.stopped)
      const again = yield* session.intercom({ action: "stop", run: "run-3" })
      assert.strictEqual(again.text, "Worker run-3 had already settled; nothing was stopped.")
      const steer = yield* session.intercom({ action: "steer", run: "run-3", message: "Continue." })
      assert.isTrue(steer.isError)
      assert.strictEqual(steer.details["error"], "WorkerSettled")
      assert.strictEqual(
        steer.text,
        "Worker run-3 has settled (stopped) and cannot be steered; nothing was sent. " +
          "Read its result (result with run run-3) and delegate a new task."
      )
      assert.deepStrictEqual(engine.workers.get("run-3")!.steers, [])
    }))

  it.effect("C-WKR-2: live result shows a running worker's output as not final, and a settled one's result with its archive ref", () =>
    Effect.gen(function*() {
      const engine = fakeEngine()
      engine.add("run-3")
      engine.add("run-5", { state: "settled", outcome: "completed" }, { output: "All tests pass." })
      const { session } = yield* sessionWith(engine.service)
      const live = yield* session.intercom({ action: "result", run: "run-3" })
      assert.include(live.text, "Worker run-3 is still running; its output so far (not a final result):\n\npartial output")
      assert.include(live.text, "end your turn instead of polling or sleeping")
      const done = yield* session.intercom({ action: "result", run: "run-5" })
      assert.strictEqual(
        done.text,
        "Worker run-5 completed. Its result:\n\nAll tests pass.\n\nArchived as result:0b7c2a4e-6f1d-4c3b-9a8e-2d5f7e1c3b9a."
      )
    }))

  it.effect("C-WKR-9: a failed steer says which failure — an unknown handle or an inbox full of pending questions — and that nothing was delivered", () =>
    Effect.gen(function*() {
      const engine = fakeEngine()
      engine.add("run-3", {}, { pendingQuestions: 4 })
      const { session } = yield* sessionWith(engine.service)
      const unknown = yield* session.intercom({ action: "steer", run: "run-99", message: "x" })
      assert.strictEqual(unknown.details["error"], "WorkerUnknown")
      assert.include(unknown.text, `Unknown worker run handle "run-99": nothing was sent.`)
      const full = yield* session.intercom({ action: "steer", run: "run-3", message: "x" })
      assert.strictEqual(full.details["error"], "WorkerInboxFull")
      assert.include(full.text, "inbox is full of pending questions (4); nothing was delivered")
    }))

  it.effect("C-WKR-9: a failed send says which failure with the broker's code: unknown target or too many open asks", () =>
    Effect.gen(function*() {
      const { session, client } = yield* sessionWith(undefined)
      client.sessions = [SELF, B]
      client.onSend = refuseWith(DeliveryCode.TargetNotFound, Reason.targetNotFound)
      const unknown = yield* session.intercom({ action: "send", to: "B", message: "hi" })
      client.onSend = refuseWith(DeliveryCode.TooManyAsks, Reason.tooManyAsks(8))
      const full = yield* session.intercom({ action: "send", to: "B", message: "hi" })
      assert.deepStrictEqual([unknown.isError, unknown.details["code"]], [true, DeliveryCode.TargetNotFound])
      assert.deepStrictEqual([full.isError, full.details["code"]], [true, DeliveryCode.TooManyAsks])
      assert.include(unknown.text, "was not delivered")
      assert.include(full.text, "was not delivered")
    }))

  it.effect("without a Workers port the worker actions say this session supervises no workers", () =>
    Effect.gen(function*() {
      const { session } = yield* sessionWith(undefined)
      const peek = yield* session.intercom({ action: "peek", run: "run-3" })
      assert.isTrue(peek.isError)
      assert.include(peek.text, "This session supervises no workers, so there is nothing to peek.")
    }))

  it.effect("C-WKR-8: a progress message cannot be replied to; reply needs the id of a question still pending", () =>
    Effect.gen(function*() {
      const { session, client } = yield* sessionWith(undefined)
      client.sessions = [SELF, B]
      yield* session.connect
      yield* client.push(inboundMessage(B, "progress-1", "50% done"))
      yield* settle
      const reply = yield* session.intercom({ action: "reply", replyTo: "progress-1", message: "ok" })
      assert.isTrue(reply.isError, reply.text)
      assert.strictEqual(reply.text, `No reply context for "progress-1"`)
      assert.deepStrictEqual(client.sends.map((send) => send.message.replyTo), [], "nothing was sent")
    }))
})
