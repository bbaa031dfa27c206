/**
 * `RunNotifications` (C-WFD-3, 4, 6, 10, 13, 15, C-DQ-17, C-WKR-10): what a
 * run sends its parent, over a recording port.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import * as TestClock from "effect/testing/TestClock"
import type { QuestionPageWire, QuestionSummaryWire } from "../../src/protocol/questions.ts"
import { UndeliveredMemoryState, UndeliveredStore } from "../../src/store/UndeliveredStore.ts"
import type { RunShape } from "../../src/workflow/NotifyOptions.ts"
import { DeliveryRefused, memoryPhaseLedger, PhaseLedgerState } from "../../src/workflow/ResultDelivery.ts"
import {
  acceptedReceipt,
  acceptedText,
  answerCall,
  makeRunNotifications,
  type NotifyPort,
  questionLookup,
  refusedBeforeLaunch
} from "../../src/workflow/RunNotifications.ts"

const shape: RunShape = { async: true, direct: true, kind: "parallel", intercomAvailable: true }

const port = (parentSession: string | undefined = "boss") => {
  const sent: Array<{ target: string; text: string; wake: boolean }> = []
  let failing = 0
  const p: NotifyPort = {
    parentSession,
    send: (target, text, { wake }) =>
      Effect.suspend(() => {
        if (failing > 0) {
          failing--
          return Effect.fail(new DeliveryRefused({ reason: "Session not found" }))
        }
        sent.push({ target, text, wake })
        return Effect.void
      })
  }
  return { port: p, sent, fail: (n: number) => void (failing = n) }
}

const summary = (id: string, childId: string, state: QuestionSummaryWire["state"]): QuestionSummaryWire => ({
  id,
  state,
  reason: "need_decision",
  childId,
  childName: childId,
  createdAt: 0,
  message: "?",
  messageTruncated: false
})

describe("RunNotifications", () => {
  it.effect("C-WFD-3: off sends nothing and adds no summary; notify sends control only; result sends the result only", () =>
    Effect.gen(function*() {
      const off = port()
      const n0 = makeRunNotifications({ run: "run-1", option: { enabled: false }, shape, port: off.port })
      assert.isUndefined(n0.summary)
      assert.strictEqual(yield* n0.control({ event: "failed", child: "w" }), "mode-off")
      assert.deepStrictEqual(yield* n0.result({ status: "completed", body: "x", foreground: false }).pipe(Effect.provide(UndeliveredStore.layerMemory())), { _tag: "NotSent", why: "mode" })
      assert.deepStrictEqual(off.sent, [])

      const notify = port()
      const n1 = makeRunNotifications({ run: "run-1", option: { delivery: "notify" }, shape, port: notify.port })
      assert.deepStrictEqual(n1.summary, { delivery: "notify", target: "boss" })
      assert.strictEqual(yield* n1.control({ event: "failed", child: "w", detail: "exit 1" }), "sent")
      assert.deepStrictEqual(yield* n1.result({ status: "failed", body: "x", foreground: false }).pipe(Effect.provide(UndeliveredStore.layerMemory())), { _tag: "NotSent", why: "mode" })
      assert.deepStrictEqual(notify.sent, [{ target: "boss", text: "Run run-1: w failed (exit 1).", wake: true }])

      const result = port()
      const n2 = makeRunNotifications({ run: "run-2", option: { delivery: "result" }, shape, port: result.port })
      assert.strictEqual(yield* n2.control({ event: "needs_attention", child: "w" }), "mode-off")
      const out = yield* n2.result({ status: "completed", body: "all good", foreground: false }).pipe(
        Effect.provide(UndeliveredStore.layerMemory())
      )
      assert.strictEqual(out._tag, "Sent")
      assert.deepStrictEqual(result.sent.map((s) => s.text), ["Run run-2 completed.\n\nall good"])
    }))

  it.effect("C-WFD-4: an explicit parentSession wins over the port's parent; with neither nothing is sent", () =>
    Effect.gen(function*() {
      const p = port("port-parent")
      const n = makeRunNotifications({ run: "run-1", option: { enabled: true, parentSession: "explicit" }, shape, port: p.port })
      yield* n.control({ event: "needs_attention", child: "w" })
      assert.deepStrictEqual(p.sent.map((s) => s.target), ["explicit"])
      const none = port("")
      const n2 = makeRunNotifications({ run: "run-1", option: { enabled: true }, shape, port: none.port })
      assert.strictEqual(yield* n2.control({ event: "needs_attention", child: "w" }), "no-target")
    }))

  it.effect("C-WFD-10: active_long_running is not sent by default; when listed it goes out without waking", () =>
    Effect.gen(function*() {
      const p = port()
      const byDefault = makeRunNotifications({ run: "run-1", option: { enabled: true }, shape, port: p.port })
      assert.strictEqual(yield* byDefault.control({ event: "active_long_running", child: "w" }), "not-listed")
      const listed = makeRunNotifications({
        run: "run-1",
        option: { enabled: true, notifyOn: ["active_long_running"] },
        shape,
        port: p.port
      })
      assert.strictEqual(yield* listed.control({ event: "active_long_running", child: "w" }), "sent")
      assert.deepStrictEqual(p.sent.map((s) => s.wake), [false])
    }))

  it.effect("C-DQ-17: a needs-attention notice for a child with an unresolved durable question says Waiting for supervisor input, with the id and the answer call", () =>
    Effect.gen(function*() {
      const p = port()
      const pages: Array<QuestionPageWire> = [
        {
          questions: [summary("q-other", "child-2", "awaiting_input"), summary("q-7", "child-1", "answer_pending")],
          total: 4,
          offset: 0,
          limit: 100,
          nextOffset: 2
        },
        { questions: [summary("q-1", "child-1", "answered"), summary("q-0", "child-1", "cancelled")], total: 4, offset: 2, limit: 100 }
      ]
      const requests: Array<number | undefined> = []
      const questions = questionLookup({
        listQuestions: (request) => {
          requests.push(request?.offset)
          return Effect.succeed(request?.offset === 2 ? pages[1]! : pages[0]!)
        }
      })
      const n = makeRunNotifications({ run: "run-3", option: { enabled: true }, shape, port: p.port, questions })
      yield* n.control({ event: "needs_attention", child: "worker", childId: "child-1", detail: "no activity for 60 s" })
      yield* n.control({ event: "needs_attention", child: "helper", childId: "child-9", detail: "no activity for 60 s" })
      assert.deepStrictEqual(p.sent.map((s) => s.text), [
        `Run run-3: worker is Waiting for supervisor input on question q-7. Answer it with ${answerCall("q-7")}.`,
        "Run run-3: helper needs attention (no activity for 60 s)."
      ])
      assert.include(answerCall("q-7"), `action: "answer", questionId: "q-7"`)
      assert.deepStrictEqual(requests, [0, 2, 0, 2], "paged until the first resolved question")
    }))

  it.effect("C-WFD-15: a foreground parent gets the result directly and no intercom notice; a background call's receipt says completion wakes it (C-WKR-10)", () =>
    Effect.gen(function*() {
      const p = port()
      const n = makeRunNotifications({ run: "run-5", option: { enabled: true }, shape, port: p.port })
      const direct = yield* n.result({ status: "completed", body: "done", foreground: true }).pipe(
        Effect.provide(UndeliveredStore.layerMemory())
      )
      assert.deepStrictEqual(direct, { _tag: "Direct", text: "Run run-5 completed.\n\ndone" })
      assert.deepStrictEqual(p.sent, [])
      assert.include(acceptedText("run-5"), "end your turn instead of polling or sleeping")
      yield* n.result({ status: "completed", body: "done", foreground: false }).pipe(Effect.provide(UndeliveredStore.layerMemory()))
      assert.deepStrictEqual(p.sent.map((s) => s.wake), [true], "the completion wakes the parent")
    }))

  it.effect("C-WFD-13: the result reports the run's and the previous intercom target", () =>
    Effect.gen(function*() {
      const p = port()
      const n = makeRunNotifications({ run: "run-6", option: { delivery: "result" }, shape, port: p.port })
      yield* n.result({ status: "completed", body: "ok", foreground: false, runTarget: "run-6-worker-0", previousTarget: "run-5-worker-0" })
        .pipe(Effect.provide(UndeliveredStore.layerMemory()))
      assert.deepStrictEqual(p.sent[0]!.text.split("\n").slice(0, 3), [
        "Run run-6 completed.",
        "Run intercom target: run-6-worker-0 (may be inactive after completion)",
        "Previous intercom target: run-5-worker-0"
      ])
    }))

  it.effect("C-WFD-11, C-WFD-12: a result that will not deliver is kept after its retries; a replaced watcher on the same ledger does not send it twice", () =>
    Effect.gen(function*() {
      const state = new UndeliveredMemoryState()
      const ledger = memoryPhaseLedger(new PhaseLedgerState())
      const p = port()
      p.fail(100)
      const n = makeRunNotifications({ run: "run-7", option: { delivery: "result" }, shape, port: p.port, ledger, retry: { maxAttempts: 3 } })
      const fiber = yield* n.result({ status: "failed", body: "boom", foreground: false }).pipe(
        Effect.provide(UndeliveredStore.layerMemory(state)),
        Effect.forkChild
      )
      yield* TestClock.adjust("1 minute")
      const out = yield* Fiber.join(fiber)
      assert.strictEqual(out._tag === "Sent" ? out.delivery._tag : out._tag, "Kept")
      assert.deepStrictEqual(state.entries.map((e) => [e.run, e.target, e.attempts]), [["run-7", "boss", 3]])
      p.fail(0)
      const again = makeRunNotifications({ run: "run-7", option: { delivery: "result" }, shape, port: p.port, ledger })
      yield* again.result({ status: "failed", body: "boom", foreground: false }).pipe(Effect.provide(UndeliveredStore.layerMemory()))
      yield* again.result({ status: "failed", body: "boom", foreground: false }).pipe(Effect.provide(UndeliveredStore.layerMemory()))
      assert.strictEqual(p.sent.length, 1, "confirmed once, then skipped by the next watcher")
    }))

  it("C-WFD-6: an async run is accepted at once with its run id; a run refused before launch is failed with the intercom summary and nothing is sent", () => {
    const p = port()
    const n = makeRunNotifications({ run: "run-8", shape, port: p.port })
    assert.deepStrictEqual(acceptedReceipt(n, "run-8"), {
      status: "accepted",
      run: "run-8",
      text: acceptedText("run-8"),
      intercom: { delivery: "control-and-result", target: "boss" }
    })
    assert.deepStrictEqual(refusedBeforeLaunch(n, "run-8", "unknown model gpt-x"), {
      status: "failed",
      run: "run-8",
      text: "Run run-8 did not start: unknown model gpt-x",
      intercom: { delivery: "control-and-result", target: "boss" }
    })
    assert.deepStrictEqual(p.sent, [])
  })
})
