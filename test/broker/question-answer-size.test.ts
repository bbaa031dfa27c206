/**
 * C-BRK-3 for a durable question's answer (helper qanswer): a `question_answer` is refused `AnswerTooLarge`, nothing
 * saved, when any frame the answer becomes would pass 1 MiB — its receipt, the child's `question_answered`, or a later
 * `question_get`, re-ask `question_result` or stop receipt, each carrying the question and the answer whole, sized
 * for the longest request id a client may send. Before, such an answer was saved and then both its receipt and the
 * child's `question_answered` (or, for a question and an answer that together pass 1 MiB, the receipt) were dropped
 * by the writer's guard: nobody told, the answer saved. The bound is held from both sides with frames as the broker
 * wrote them: the answer shorter by the excess the refusal names is saved, and its re-answer's receipt to a 256-character
 * request id is exactly 1 MiB. The question fiber's work is awaited with a `question_list` on the same connection (the
 * fiber takes its items in order; a page carries previews only, so it is written whatever the answer's size). On a
 * broker over the in-memory network with a memory question store; no time passes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_FRAME_BYTES } from "../../src/protocol/constants.ts"
import { MAX_ID_LENGTH } from "../../src/protocol/limits.ts"
import { messageFor } from "../support/broker.ts"
import { questionAsk, questionWorld } from "../support/questionWorld.ts"
import type { WireClient } from "../support/wire.ts"
import { patientClock } from "../support/memory.ts"

/** The longest request id a client may send, each character written as a six-byte JSON escape. */
const WIDEST_REQUEST_ID = "\u0001".repeat(MAX_ID_LENGTH)

/** The supervisor's `question_answer` of `q-1`. */
const answerFrame = (requestId: string, text: string) => ({ type: "question_answer", requestId, questionId: "q-1", text })

/**
 * The frames the broker wrote `client` for request `requestId`, as written, once the question fiber has handled
 * everything `client` sent before: a `question_list` after it is answered only then.
 */
const writtenFor = (client: WireClient, requestId: string) =>
  Effect.gen(function*() {
    const barrier = `list-after-${client.count("question_result") + client.count("question_failed")}`
    yield* client.send({ type: "question_list", requestId: barrier })
    yield* client.next(["question_result", "question_failed"], (frame) => frame.requestId === barrier)
    return client.receivedTexts().filter((text) => text.includes(`"requestId":${JSON.stringify(requestId)}`))
  })

/** The one frame written for `requestId`, parsed, with its size. */
const onlyFrame = (texts: ReadonlyArray<string>, what: string) => {
  assert.strictEqual(texts.length, 1, `${what}: ${texts.length} frames written`)
  const text = texts[0]!
  const frame: { readonly type: string; readonly error?: string; readonly reason?: string } = JSON.parse(text)
  return { frame, bytes: Buffer.byteLength(text) }
}

/** The child asks `q-1` with `text`; the supervisor has its notification. */
const asked = (child: WireClient, supervisor: WireClient, text: string) =>
  Effect.gen(function*() {
    yield* child.send({ ...questionAsk, text })
    const answer = yield* child.next(["question_result", "question_failed"], (frame) => frame.requestId === questionAsk.requestId)
    assert.strictEqual(answer.type, "question_result", "precondition: the question is saved")
    yield* messageFor(supervisor, "q-1")
  })

const REFUSAL = new RegExp(
  `^Answer is too large to deliver: with question q-1 it would make a frame of (\\d+) bytes \\(the question and the answer whole, as its receipt or a later question_get carries them\\), over the ${MAX_FRAME_BYTES}-byte frame limit; question q-1 leaves room for an answer of at most (\\d+) bytes as JSON text\\. Nothing was saved; answer shorter, or put long material in a file and name its path$`
)

/** The size a refusal names; fails unless `frame` is an `AnswerTooLarge` refusal in its exact words. */
const refusedBytes = (frame: { readonly type: string; readonly error?: string; readonly reason?: string }): number => {
  assert.strictEqual(frame.type, "question_failed", "the answer was accepted")
  assert.strictEqual(frame.error, "AnswerTooLarge")
  const match = REFUSAL.exec(frame.reason ?? "")
  assert.isNotNull(match, frame.reason)
  return Number(match![1])
}

describe("a durable question's answer is size-checked as the frames it becomes", () => {
  it.effect("an answer that exactly fills its question_answer frame: refused AnswerTooLarge, nothing saved, the child told nothing; a shorter one is then saved and pushed", () =>
    patientClock(Effect.gen(function*() {
      const { child, questions, supervisor } = yield* questionWorld
      yield* asked(child, supervisor, "Which way?")
      const empty = Buffer.byteLength(JSON.stringify(answerFrame("a-1", "")))
      const text = "y".repeat(MAX_FRAME_BYTES - empty)
      assert.strictEqual(Buffer.byteLength(JSON.stringify(answerFrame("a-1", text))), MAX_FRAME_BYTES, "precondition: exactly 1 MiB")
      yield* supervisor.send(answerFrame("a-1", text))
      const refused = onlyFrame(yield* writtenFor(supervisor, "a-1"), "the answer's receipt")
      assert.isAbove(refusedBytes(refused.frame), MAX_FRAME_BYTES)
      assert.isUndefined(questions.records.get("q-1")?.answer, "the refused answer was saved")
      yield* child.roundTrip
      yield* child.expectNothing("question_answered")
      // The question still waits, and a shorter answer reaches the child.
      yield* supervisor.send(answerFrame("a-2", "left"))
      assert.strictEqual(onlyFrame(yield* writtenFor(supervisor, "a-2"), "the second receipt").frame.type, "question_result")
      const answered = yield* child.next("question_answered")
      assert.strictEqual(answered.answer, "left")
      assert.strictEqual(questions.records.get("q-1")?.answer, "left")
    })))

  it.effect("a question and an answer that each fit but together pass 1 MiB: refused AnswerTooLarge, nothing saved, the child told nothing", () =>
    patientClock(Effect.gen(function*() {
      const { child, questions, supervisor } = yield* questionWorld
      yield* asked(child, supervisor, "q".repeat(600_000))
      yield* supervisor.send(answerFrame("a-1", "a".repeat(500_000)))
      const refused = onlyFrame(yield* writtenFor(supervisor, "a-1"), "the answer's receipt")
      assert.isAbove(refusedBytes(refused.frame), 1_100_000)
      assert.isUndefined(questions.records.get("q-1")?.answer, "the refused answer was saved")
      yield* child.roundTrip
      yield* child.expectNothing("question_answered")
    })))

  it.effect("the bound is exact: the answer shorter by the excess the refusal names is saved, and its re-answer's receipt with a revival to a 256-character request id is exactly 1 MiB", () =>
    patientClock(Effect.gen(function*() {
      const { child, questions, supervisor } = yield* questionWorld
      yield* asked(child, supervisor, "q".repeat(500_000))
      // The child exits: an answer's receipt carries its revival, the longest frame the answer becomes.
      yield* child.destroy
      yield* supervisor.roundTrip
      const tried = 600_000
      yield* supervisor.send(answerFrame(WIDEST_REQUEST_ID, "a".repeat(tried)))
      const excess = refusedBytes(onlyFrame(yield* writtenFor(supervisor, WIDEST_REQUEST_ID), "the refusal").frame) -
        MAX_FRAME_BYTES
      supervisor.drain()
      const text = "a".repeat(tried - excess)
      yield* supervisor.send(answerFrame(WIDEST_REQUEST_ID, text))
      yield* supervisor.send(answerFrame(WIDEST_REQUEST_ID, text))
      const receipts = (yield* writtenFor(supervisor, WIDEST_REQUEST_ID)).slice(-2).map((written) => onlyFrame([written], "a receipt"))
      assert.deepStrictEqual(receipts.map(({ frame }) => frame.type), ["question_result", "question_result"])
      // The first says `"saved":true` and `"claimed":true`, a byte shorter each; the identical re-answer is the longest.
      assert.deepStrictEqual(receipts.map(({ bytes }) => bytes), [MAX_FRAME_BYTES - 2, MAX_FRAME_BYTES])
      assert.strictEqual(questions.records.get("q-1")?.answer, text)
    })))
})
