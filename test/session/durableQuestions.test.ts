/**
 * `contact_supervisor` as a durable question (`questions-v1`, C-SUP-18,
 * C-DQ-6…11, C-WKR-15) end to end through the broker core (in memory,
 * TestClock) with a memory question store: no ask timeout, an answer by
 * `reply` or by id ends the wait, a stop ends it as `Cancelled`, an aborted
 * wait cancels the question, a wait whose first ask failed is not asked
 * again after a reconnect — and without a store the ordinary ask and its
 * timeout stay (contracts.md open question 2).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Option, Queue } from "effect"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import type { IntercomClientOptions } from "../../src/client/options.ts"
import type { IntercomSessionOptions } from "../../src/session/IntercomSession.ts"
import { readChildBridge } from "../../src/session/supervisorBridge.ts"
import { authorizeChild } from "../../src/session/SupervisorLaunch.ts"
import { QuestionReviver, type Revival } from "../../src/session/QuestionReviver.ts"
import { QuestionStoreFailure, stateOf } from "../../src/store/questionModel.ts"
import {
  makeMemory,
  makeMemoryState,
  type MemoryQuestions,
  QuestionStore,
  type QuestionStoreService
} from "../../src/store/QuestionStore.ts"
import {
  advance,
  type MemoryBroker,
  memoryNetwork,
  settle,
  step,
  withMemoryBroker
} from "../support/memory.ts"
import { layeredMember } from "../support/layeredMember.ts"

const SUP_ID = "5b5b5b5b-0000-4000-8000-000000000001"
const CHILD_ID = "c1c1c1c1-0000-4000-8000-000000000002"
const ASK_TIMEOUT_MS = 60_000

/** A session on `broker` whose asks wait `ASK_TIMEOUT_MS` unless `session` says otherwise. */
const member = (
  broker: MemoryBroker,
  id: string,
  name: string,
  client: Partial<IntercomClientOptions>,
  session: IntercomSessionOptions = {},
  reviver: Layer.Layer<never> = Layer.empty
) => layeredMember(broker, id, name, client, { askTimeoutMs: ASK_TIMEOUT_MS, ...session }, reviver)

/** A supervisor and a child it launched, on a broker that keeps questions in `state` (none: no store). */
const setup = (state: MemoryQuestions | undefined, reviver: Layer.Layer<never> = Layer.empty) =>
  Effect.gen(function*() {
    const start = withMemoryBroker({ idleExit: null })
    const broker = yield* (state === undefined ? start : Effect.provideService(start, QuestionStore, makeMemory(state)))
    const supervisor = yield* member(broker, SUP_ID, "planner", { ownerToken: "a-long-random-owner-token" }, {}, reviver)
    const launched = yield* settle(
      authorizeChild({ runId: "Run-7", agent: "Worker", index: 0, supervisorTarget: "planner" }, {})
        .pipe(Effect.provideService(IntercomClient, supervisor.client))
    )
    const bridge = readChildBridge(launched.env)
    const child = yield* member(broker, CHILD_ID, launched.sessionName, { group: "run-7", supervisorGrant: bridge?.grant }, {
      childBridge: bridge
    })
    const tool = child.session.contactSupervisor ?? assert.fail("the child has no contact_supervisor")
    return { broker, supervisor, child, tool, name: launched.sessionName, childId: CHILD_ID }
  })

describe("contact_supervisor as a durable question", () => {
  it.effect("no ask timeout: two hours later the supervisor's reply is the answer, saved and confirmed (C-SUP-18, C-DQ-7, C-DQ-9, C-DQ-16)", () =>
    Effect.gen(function*() {
      const state = makeMemoryState()
      const { name, supervisor, tool } = yield* setup(state)
      const waiting = yield* step(tool({ reason: "need_decision", message: "Stable or experimental API?" }))
      const inbound = Option.getOrThrow(yield* Queue.poll(supervisor.inbox))
      assert.include(inbound.text, "Stable or experimental API?")
      assert.include(inbound.text, "[Durable question ")
      const [questionId] = [...state.records.keys()]
      assert.strictEqual(inbound.message.id, questionId)
      assert.strictEqual(inbound.delivery, "steer")
      yield* advance(2 * 3_600_000)
      assert.isUndefined(waiting.pollUnsafe(), "the wait ended without an answer")
      const replied = yield* settle(supervisor.session.intercom({ action: "reply", to: name, message: "Stable." }))
      assert.isFalse(replied.isError, replied.text)
      const result = yield* Fiber.join(waiting)
      assert.deepStrictEqual([result.text, result.isError], ["Stable.", false])
      assert.strictEqual(result.details["durable"], true)
      const record = state.records.get(questionId ?? "") ?? assert.fail("not saved")
      assert.strictEqual(record.answer, "Stable.")
      assert.strictEqual(stateOf(record), "answered")
    }))

  it.effect("an answer by id (a CLI of the supervisor's user) ends the wait with the saved answer", () =>
    Effect.gen(function*() {
      const state = makeMemoryState()
      const { supervisor, tool } = yield* setup(state)
      const waiting = yield* step(tool({ reason: "need_decision", message: "Go on?" }))
      const [questionId = ""] = [...state.records.keys()]
      const receipt = yield* settle(supervisor.client.answerQuestion(questionId, "yes, go on"))
      assert.isTrue(receipt.sentToChild)
      const result = yield* Fiber.join(waiting)
      assert.deepStrictEqual([result.text, result.isError], ["yes, go on", false])
      assert.strictEqual(result.details["questionId"], questionId)
    }))

  it.effect("stop ends the wait as Cancelled, never as an answer (C-DQ-11, C-WKR-15)", () =>
    Effect.gen(function*() {
      const state = makeMemoryState()
      const { supervisor, tool } = yield* setup(state)
      const waiting = yield* step(tool({ reason: "need_decision", message: "Delete the branch?" }))
      const [questionId = ""] = [...state.records.keys()]
      yield* settle(supervisor.client.stopQuestion(questionId))
      const result = yield* Fiber.join(waiting)
      assert.isTrue(result.isError)
      assert.match(result.text, /^Cancelled: /)
      assert.strictEqual(result.details["error"], "QuestionStopped")
    }))

  it.effect("an aborted wait cancels its question (C-DQ-11)", () =>
    Effect.gen(function*() {
      const state = makeMemoryState()
      const { tool } = yield* setup(state)
      const waiting = yield* step(tool({ reason: "need_decision", message: "Which one?" }))
      const [questionId = ""] = [...state.records.keys()]
      yield* settle(Fiber.interrupt(waiting))
      const record = state.records.get(questionId) ?? assert.fail("not saved")
      assert.strictEqual(stateOf(record), "cancelled")
    }))

  it.effect("without a question store the ordinary ask and its timeout stay; the timeout is an error, not an answer", () =>
    Effect.gen(function*() {
      const { tool } = yield* setup(undefined)
      const waiting = yield* step(tool({ reason: "need_decision", message: "Which one?" }))
      yield* advance(ASK_TIMEOUT_MS + 1_000)
      const result = yield* Fiber.join(waiting)
      assert.isTrue(result.isError)
      assert.strictEqual(result.details["error"], "ReplyTimeout")
    }))
})

describe("the question actions of the intercom tool", () => {
  it.effect("questions lists a page, question reads one whole, answer and stop give receipts; a bad call is refused", () =>
    Effect.gen(function*() {
      const state = makeMemoryState()
      const { supervisor, tool } = yield* setup(state)
      const intercom = supervisor.session.intercom
      const waiting = yield* step(tool({ reason: "need_decision", message: "Stable or experimental API?" }))
      const [questionId = ""] = [...state.records.keys()]
      const listed = yield* settle(intercom({ action: "questions" }))
      assert.isFalse(listed.isError, listed.text)
      assert.match(listed.text, /^Questions 1–1 of 1:\n- \S+ · awaiting_input · need_decision · subagent-worker-run-7-1 · /)
      assert.strictEqual(listed.details["total"], 1)
      const bad = yield* settle(intercom({ action: "questions", limit: 0 }))
      assert.isTrue(bad.isError)
      assert.strictEqual(bad.details["error"], "QuestionRefused")
      const whole = yield* settle(intercom({ action: "question", questionId }))
      assert.include(whole.text, "Stable or experimental API?")
      const missing = yield* settle(intercom({ action: "answer", questionId }))
      assert.deepStrictEqual([missing.text, missing.isError], ["Missing 'message' parameter for action 'answer'.", true])
      const answered = yield* settle(intercom({ action: "answer", questionId, message: "Stable." }))
      assert.match(answered.text, /^Answer saved for question \S+ and sent to subagent-worker-run-7-1; it counts as answered once the child confirms \(memory-only/)
      assert.deepStrictEqual([(yield* Fiber.join(waiting)).text], ["Stable."])
      const stopped = yield* settle(intercom({ action: "stop", questionId }))
      assert.isTrue(stopped.isError)
      assert.strictEqual(stopped.details["error"], "QuestionRefused")
    }))

  it.effect("an answer to an exited child's question hands its revival to the QuestionReviver once (C-DQ-10, C-DQ-12)", () =>
    Effect.gen(function*() {
      const state = makeMemoryState()
      const revivals: Array<Revival> = []
      const reviver = Layer.succeed(QuestionReviver, { revive: (revival) => Effect.sync(() => void revivals.push(revival)) })
      const { child, supervisor, tool } = yield* setup(state, reviver)
      yield* step(tool({ reason: "need_decision", message: "Continue?" }))
      const [questionId = ""] = [...state.records.keys()]
      yield* settle(child.client.disconnect)
      const first = yield* settle(supervisor.session.intercom({ action: "answer", questionId, message: "Yes." }))
      assert.include(first.text, `revival answer-${questionId} was handed to the launcher`)
      assert.deepStrictEqual(revivals.map((r) => [r.runId, r.answer]), [[`answer-${questionId}`, "Yes."]])
      const again = yield* settle(supervisor.session.intercom({ action: "answer", questionId, message: "Yes." }))
      assert.include(again.text, "already has this answer")
      assert.include(again.text, "is not launched again. If it did not start, recover it with: revive(")
      assert.strictEqual(revivals.length, 1)
    }))
})

/**
 * A memory store whose first `ask` goes wrong as `first` says (it gets the
 * memory store's own ask), on a broker that can crash and start again over
 * it; `asked` lists every question id the broker was asked to save.
 */
const setupRestartable = (
  first: (ask: QuestionStoreService["ask"]) => QuestionStoreService["ask"]
) =>
  Effect.gen(function*() {
    const state = makeMemoryState()
    const memory = makeMemory(state)
    const asked: Array<string> = []
    const firstAsk = first(memory.ask)
    const store: QuestionStoreService = {
      ...memory,
      ask: (question) =>
        Effect.suspend(() => {
          asked.push(question.id)
          return asked.length === 1 ? firstAsk(question) : memory.ask(question)
        })
    }
    const world = yield* memoryNetwork()
    const start = () => Effect.provideService(world.startBroker({ idleExit: null }), QuestionStore, store)
    let running = yield* start()
    const broker: MemoryBroker = { ...world, broker: running.core }
    const reconnect = { reconnectBaseMs: 100, reconnectMaxMs: 400 }
    const supervisor = yield* member(broker, SUP_ID, "planner", { ownerToken: "a-long-random-owner-token", ...reconnect })
    const launched = yield* settle(
      authorizeChild({ runId: "Run-7", agent: "Worker", index: 0, supervisorTarget: "planner" }, {})
        .pipe(Effect.provideService(IntercomClient, supervisor.client))
    )
    const bridge = readChildBridge(launched.env)
    const child = yield* member(broker, CHILD_ID, launched.sessionName, {
      group: "run-7",
      supervisorGrant: bridge?.grant,
      ...reconnect
    }, { childBridge: bridge })
    const tool = child.session.contactSupervisor ?? assert.fail("the child has no contact_supervisor")
    /** The broker crashes and starts again; both sessions are connected again when this returns. */
    const restart = Effect.gen(function*() {
      yield* running.crash
      running = yield* start()
      yield* advance(5_000)
      for (const client of [supervisor.client, child.client]) {
        const status = yield* client.status
        assert.isTrue(status.connected, `not connected again: ${status.lastError}`)
      }
    })
    return { state, asked, supervisor, child, tool, restart }
  })

describe("a durable question whose first ask failed", () => {
  it.effect("a first ask the broker refused ends the wait; a reconnect does not ask it again", () =>
    Effect.gen(function*() {
      const { asked, restart, state, supervisor, tool } = yield* setupRestartable(() => () =>
        Effect.fail(new QuestionStoreFailure({ detail: "disk full" }))
      )
      const result = yield* settle(tool({ reason: "need_decision", message: "Which one?" }))
      assert.isTrue(result.isError)
      assert.strictEqual(result.details["error"], "QuestionRefused")
      assert.strictEqual(asked.length, 1)
      yield* restart
      assert.strictEqual(asked.length, 1, "the question was asked again after the reconnect")
      assert.strictEqual(state.records.size, 0)
      assert.isTrue(Option.isNone(yield* Queue.poll(supervisor.inbox)), "the supervisor was notified")
    }))

  it.effect("a first ask that timed out ends the wait and cancels the question the broker saved late; a reconnect does not ask it again", () =>
    Effect.gen(function*() {
      // The first save takes longer than the child's request timeout (10 s), then succeeds: simulated time on the
      // TestClock (advanced below), the slow store itself, not a wait for something else to happen.
      const { asked, restart, state, tool } = yield* setupRestartable((ask) => (question) =>
        Effect.andThen(Effect.sleep("11 seconds"), ask(question))
      )
      const waiting = yield* step(tool({ reason: "need_decision", message: "Which one?" }))
      yield* advance(12_000)
      const result = yield* Fiber.join(waiting)
      assert.isTrue(result.isError)
      assert.strictEqual(result.details["error"], "RequestTimeout")
      const [questionId = ""] = asked
      const record = state.records.get(questionId) ?? assert.fail("not saved")
      assert.strictEqual(stateOf(record), "cancelled")
      yield* restart
      assert.deepStrictEqual(asked, [questionId], "the question was asked again after the reconnect")
    }))
})
