/**
 * Durable supervisor questions through `IntercomClient` (`questions-v1`):
 * a child asks, the supervisor answers by reply or by id, the child hears of
 * it on `questionEvents`; after a broker restart the child's client asks its
 * open question again by itself, and the answer still reaches it (C-DQ-6).
 * In memory under TestClock, the broker keeping questions in a memory store
 * that outlives its crash.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Stream } from "effect"
import type { IntercomClientOptions } from "../../src/client/options.ts"
import { QUESTIONS_V1 } from "../../src/protocol/features.ts"
import { sessionRegistration } from "../../src/session/IntercomSession.ts"
import { makeMemory, makeMemoryState, QuestionStore } from "../../src/store/QuestionStore.ts"
import { advance, memoryNetwork } from "../support/memory.ts"
import { makeMemoryClient, subscribe } from "./support.ts"

const setup = (withStore = true) =>
  Effect.gen(function*() {
    const state = makeMemoryState()
    const world = yield* memoryNetwork()
    const start = () =>
      withStore
        ? Effect.provideService(world.startBroker({ idleExit: null }), QuestionStore, makeMemory(state))
        : world.startBroker({ idleExit: null })
    const broker = yield* start()
    const client = (sessionId: string, name: string, options: Partial<IntercomClientOptions>) =>
      Effect.map(makeMemoryClient({
        agentDir: "/mem",
        intercomDir: "/mem/intercom",
        socketPath: world.address,
        sessionId,
        registration: sessionRegistration({ sessionId, identity: { name, cwd: "/w", model: "m" }, pid: 1, startedAt: 0 }),
        launch: false,
        dial: world.dial,
        reconnectBaseMs: 100,
        reconnectMaxMs: 400,
        ...options
      }), (made) => made.client)
    const supervisor = yield* client("sup-1", "planner", { ownerToken: "a-long-random-secret" })
    const grant = yield* supervisor.authorizeChild("worker")
    const child = yield* client("child-1", "worker", { group: "run-7", supervisorGrant: grant })
    yield* child.connect
    return { world, broker, start, state, supervisor, child, client }
  })

const ask = { questionId: "q-1", reason: "need_decision", text: "Subagent needs a supervisor decision.\n\nA or B?" } as const

describe("IntercomClient: durable questions", () => {
  it.effect("a child asks; the supervisor's reply reaches the child and is the saved answer; a listing shows it", () =>
    Effect.gen(function*() {
      const { child, state, supervisor } = yield* setup()
      assert.include((yield* child.status).features, QUESTIONS_V1)
      const saved = yield* child.askQuestion(ask)
      assert.strictEqual(saved.state, "awaiting_input")
      const notice = Option.getOrThrow(yield* Stream.runHead(supervisor.messages))
      assert.strictEqual(notice.message.id, "q-1")
      yield* supervisor.send({ to: notice.from.id, message: { id: "r-1", timestamp: 0, replyTo: "q-1", content: { text: "B" } } })
      const reply = Option.getOrThrow(yield* Stream.runHead(child.messages))
      assert.strictEqual(reply.message.replyTo, "q-1")
      yield* child.questionReceived("q-1")
      const page = yield* supervisor.listQuestions()
      assert.strictEqual(page.total, 1)
      const full = yield* supervisor.getQuestion("q-1")
      assert.strictEqual(full.answer, "B")
      // The get was answered after the broker handled question_received (one connection, FIFO).
      assert.isDefined(state.records.get("q-1")?.deliveredAt)
    }))

  it.effect("answerQuestion pushes the answer to the child; a different answer is refused with the contract's text", () =>
    Effect.gen(function*() {
      const { child, supervisor } = yield* setup()
      const events = yield* subscribe(child.questionEvents, "question events")
      yield* child.askQuestion(ask)
      const receipt = yield* supervisor.answerQuestion("q-1", "A")
      assert.isTrue(receipt.saved)
      assert.isTrue(receipt.sentToChild)
      const event = yield* events.next()
      assert.deepInclude(event, { _tag: "Answered", questionId: "q-1", answer: "A" })
      const refused = yield* Effect.flip(supervisor.answerQuestion("q-1", "B"))
      assert.strictEqual(refused._tag, "QuestionRefused")
      assert.include(refused.message, "already has a different saved answer. The original answer was retained.")
    }))

  it.effect("stopQuestion cancels: the child hears Cancelled", () =>
    Effect.gen(function*() {
      const { child, supervisor } = yield* setup()
      const events = yield* subscribe(child.questionEvents, "question events")
      yield* child.askQuestion(ask)
      const receipt = yield* supervisor.stopQuestion("q-1")
      assert.strictEqual(receipt.question.state, "cancelled")
      assert.deepInclude(yield* events.next(), { _tag: "Cancelled", questionId: "q-1" })
    }))

  it.effect("after a broker restart the child's client asks again by itself; the question is still the supervisor's to answer and its answer reaches the child (C-DQ-6)", () =>
    Effect.gen(function*() {
      const { broker, child, start, state, supervisor } = yield* setup()
      const events = yield* subscribe(child.questionEvents, "question events")
      yield* child.askQuestion(ask)
      const first = Option.getOrThrow(yield* Stream.runHead(supervisor.messages))
      assert.strictEqual(first.message.id, "q-1")
      yield* broker.crash
      yield* start()
      yield* advance(5_000)
      assert.isTrue((yield* child.status).connected, `child not back: ${(yield* child.status).lastError}`)
      // The new broker notifies the supervisor again (raw wire: questions-restart.test.ts); this same
      // client already passed that notice on, so it drops the repeat (RecentMessages) — the question waits.
      const listed = yield* supervisor.listQuestions()
      assert.deepStrictEqual(listed.questions.map((q) => [q.id, q.state]), [["q-1", "awaiting_input"]])
      const receipt = yield* supervisor.answerQuestion("q-1", "after the restart")
      assert.isTrue(receipt.sentToChild)
      assert.deepInclude(yield* events.next(), { _tag: "Answered", questionId: "q-1", answer: "after the restart" })
      assert.strictEqual(state.records.get("q-1")?.answer, "after the restart")
    }))

  it.effect("a broker without a question store: question operations fail with QuestionsUnavailable, nothing is sent", () =>
    Effect.gen(function*() {
      const { child, supervisor } = yield* setup(false)
      assert.notInclude((yield* child.status).features, QUESTIONS_V1)
      const error = yield* Effect.flip(child.askQuestion(ask))
      assert.strictEqual(error._tag, "QuestionsUnavailable")
      assert.strictEqual((yield* Effect.flip(supervisor.listQuestions()))._tag, "QuestionsUnavailable")
    }))
})
