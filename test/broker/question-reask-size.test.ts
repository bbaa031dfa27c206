/**
 * C-BRK-3's size check of a durable question applies to a NEW question only (helper fixqn; review revqnotify D1): a
 * re-ask under the id of a question the store holds for the same child — how a waiting child re-checks it after a
 * reconnect (C-DQ-6) — is answered from the saved record, whatever its own text or the child's session fields now.
 * Before, the check ran on the re-ask too and refused it `QuestionTooLarge`, "Nothing was saved", though the question
 * was saved: a child back on a longer `model` never got the answer saved while it was away, and a re-ask with a
 * different, longer text was refused though the saved record would have been returned. On a broker over the in-memory
 * network with a memory question store; no time passes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_FRAME_BYTES } from "../../src/protocol/constants.ts"
import { ASK_TIMEOUT_V1, DELIVERY_V1, GROUPS_V1, QUESTIONS_V1, REPLY_ERROR_V1, SUPERVISOR_V1 } from "../../src/protocol/features.ts"
import { makeMemory, makeMemoryState, QuestionStore } from "../../src/store/QuestionStore.ts"
import { messageFor } from "../support/broker.ts"
import { type MemoryNetwork, memoryNetwork, patientClock } from "../support/memory.ts"
import type { WireClient } from "../support/wire.ts"

/** Every extension a notification's fields need, for both ends: the supervisor is written the longest frame. */
const FEATURES = [GROUPS_V1, SUPERVISOR_V1, REPLY_ERROR_V1, QUESTIONS_V1, ASK_TIMEOUT_V1, DELIVERY_V1]
const TOKEN = "owner-token-of-the-supervisor"
const SUP = "sup-0001"
const CHILD = "child-worker"

/**
 * The child's cwd: 3,000 characters, in its notification (its session) and not in the frames that carry the question
 * and an answer back, so the notification is the frame that binds a new question (helper fixqa: those frames leave
 * room for an answer).
 */
const CWD = `/${"d".repeat(2_999)}`

/** The bound child `worker`, registered with `model` (a session field its notification carries). */
const childOn = (net: Pick<MemoryNetwork, "session">, capability: string, model: string) =>
  Effect.map(
    net.session({ sessionId: CHILD, name: "worker", model, cwd: CWD, frame: { features: FEATURES, group: "run-1", capability, supervisorSessionId: SUP } }),
    (session) => session.client
  )

/** A supervisor, its bound child on `model`, and the question store's state. */
const worldOn = (model: string) =>
  Effect.gen(function*() {
    const net = yield* memoryNetwork()
    const questions = makeMemoryState()
    yield* Effect.provideService(net.startBroker(), QuestionStore, makeMemory(questions))
    const supervisor = (yield* net.session({ sessionId: SUP, name: "supervisor", frame: { features: FEATURES, ownerToken: TOKEN } })).client
    yield* supervisor.send({ type: "authorize_supervisor", requestId: "auth", childName: "worker" })
    const { capability } = yield* supervisor.next("supervisor_authorized")
    const child = yield* childOn(net, capability, model)
    return { net, questions, supervisor, capability, child }
  })

const askOf = (requestId: string, questionId: string, text: string) => ({
  type: "question_ask",
  requestId,
  questionId,
  reason: "need_decision",
  text
})

/** `client` sends `frame` (a question request `requestId`); its answer. */
const request = (client: WireClient, frame: { readonly type: string; readonly requestId: string; readonly [field: string]: unknown }) =>
  Effect.andThen(
    client.send(frame),
    client.next(["question_result", "question_failed"], (f) => f.requestId === frame.requestId)
  )

/** A refusal's error and the start of its reason, for an assertion's message. */
const shown = (answer: { readonly type: string; readonly error?: string; readonly reason?: string }) =>
  answer.type === "question_failed" ? `${answer.error}: ${answer.reason?.slice(0, 160)}` : answer.type

/**
 * The length of question text whose notification is exactly 1 MiB for `child` as registered now: it asks `q-0` (an
 * id as long as `q-1`) with one character, and the notification as the broker wrote it, less that character, is what
 * any text of `q-1` is written with (ASCII; the TestClock does not move, so the stamps are the same).
 */
const exactLength = (child: WireClient, supervisor: WireClient) =>
  Effect.gen(function*() {
    assert.strictEqual((yield* request(child, askOf("r-0", "q-0", "y"))).type, "question_result", "precondition: q-0 is saved")
    yield* messageFor(supervisor, "q-0")
    const written = supervisor.receivedTexts().find((t) => t.startsWith(`{"type":"message"`) && t.includes(`"id":"q-0"`))
    if (written === undefined) return assert.fail("precondition: q-0's notification as written")
    return MAX_FRAME_BYTES - (Buffer.byteLength(written) - 1)
  })

describe("a re-ask of a saved question is answered from the saved record, not size-checked as a new one", () => {
  it.effect("saved at exactly 1 MiB and answered while its child was away: the child back on a longer model re-asks and gets question_result with the answer, then question_answered", () =>
    patientClock(Effect.gen(function*() {
      const { capability, child, net, questions, supervisor } = yield* worldOn("m")
      const text = "x".repeat(yield* exactLength(child, supervisor))
      assert.strictEqual((yield* request(child, askOf("r-1", "q-1", text))).type, "question_result", "precondition: q-1 saved")
      yield* messageFor(supervisor, "q-1")
      // The child goes away; its supervisor answers meanwhile.
      yield* child.destroy
      yield* supervisor.roundTrip
      const answered = yield* request(supervisor, { type: "question_answer", requestId: "a-1", questionId: "q-1", text: "ok" })
      assert.strictEqual(answered.type, "question_result", "precondition: the answer is saved")
      assert.strictEqual(questions.records.get("q-1")?.answer, "ok", "precondition: the answer is saved")
      // Back on another model: as a new question, q-1's notification would now pass 1 MiB.
      const again = yield* childOn(net, capability, "a-much-longer-model-name")
      const rechecked = yield* request(again, askOf("r-2", "q-1", text))
      assert.strictEqual(rechecked.type, "question_result", `the re-ask was refused: ${shown(rechecked)}`)
      if (rechecked.type !== "question_result") return
      assert.strictEqual(rechecked.question?.state, "answer_pending")
      assert.strictEqual(rechecked.question?.answer, "ok")
      const pushed = yield* again.next("question_answered", (f) => f.questionId === "q-1")
      assert.strictEqual(pushed.answer, "ok")
    })))

  it.effect("re-asked with a different text too large for a new question: question_result with the saved question, its text unchanged", () =>
    patientClock(Effect.gen(function*() {
      const { child, questions, supervisor } = yield* worldOn("m")
      const longer = "x".repeat((yield* exactLength(child, supervisor)) + 1)
      const frame = askOf("r-2", "q-1", longer)
      assert.isAtMost(Buffer.byteLength(JSON.stringify(frame)), MAX_FRAME_BYTES, "precondition: the re-ask itself fits")
      // As a new question it is refused: the id is free, nothing saved.
      const asNew = yield* request(child, askOf("r-0", "q-2", longer))
      assert.strictEqual(asNew.type === "question_failed" ? asNew.error : asNew.type, "QuestionTooLarge", "precondition: too large as new")
      assert.strictEqual((yield* request(child, askOf("r-1", "q-1", "Which way?"))).type, "question_result", "precondition: q-1 saved")
      yield* messageFor(supervisor, "q-1")
      const rechecked = yield* request(child, frame)
      assert.strictEqual(rechecked.type, "question_result", `the re-ask was refused: ${shown(rechecked)}`)
      if (rechecked.type !== "question_result") return
      assert.strictEqual(rechecked.question?.message, "Which way?")
      assert.strictEqual(rechecked.question?.state, "awaiting_input")
      assert.strictEqual(questions.records.get("q-1")?.message, "Which way?", "the saved text changed")
      assert.isUndefined(questions.records.get("q-2"), "the question refused as new was saved")
    })))
})
