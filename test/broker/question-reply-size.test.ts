/**
 * C-BRK-3 for the live path (helper qsize): the supervisor's `reply` to a notified durable question is its answer
 * (C-DQ-7), so it is sized as the frames the saved answer makes — an answer receipt with a revival, a stop receipt,
 * a `question_get` or re-ask `question_result`, each with the question and the answer whole and to the longest request
 * id a client may send — and refused `E_MESSAGE_TOO_LARGE` before it is delivered or saved when one would pass 1 MiB.
 * Before, the reply reached the child and was saved, and the writer's guard then dropped every `question_get` and
 * re-ask answer of the question: nobody got them. A failure reply (`replyError`, C-DQ-8) is not an answer and is not
 * sized so: its test guards the check against refusing too much, and passes without the check too. The question
 * fiber's work is awaited with a `question_list` on the same connection (it takes its items in order). On a broker
 * over the in-memory network with a memory question store, under `patientClock` (a step carries megabytes: on a
 * loaded machine it can take longer than the TestClock's default second); no time passes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_FRAME_BYTES } from "../../src/protocol/constants.ts"
import { MAX_ID_LENGTH } from "../../src/protocol/limits.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { patientClock } from "../support/memory.ts"
import { questionAsk, questionWorld } from "../support/questionWorld.ts"
import type { WireClient } from "../support/wire.ts"

/** The longest request id a client may send, each character written as a six-byte JSON escape. */
const WIDEST_REQUEST_ID = "\u0001".repeat(MAX_ID_LENGTH)

/** The question's text: half a MiB, so a reply that fits its own frame can still be too long an answer. */
const QUESTION = "q".repeat(500_000)

const answerTo = (client: WireClient, requestId: string) =>
  client.next(["question_result", "question_failed"], (frame) => frame.requestId === requestId)

/** Waits until the question fiber has handled everything `client` sent before. */
const fiberDone = (client: WireClient, requestId: string) =>
  Effect.andThen(client.send({ type: "question_list", requestId }), answerTo(client, requestId))

/** The child asks `q-1` with QUESTION; the supervisor has its notification. */
const asked = (child: WireClient, supervisor: WireClient) =>
  Effect.gen(function*() {
    yield* child.send({ ...questionAsk, text: QUESTION })
    assert.strictEqual((yield* answerTo(child, questionAsk.requestId)).type, "question_result", "precondition: the question is saved")
    yield* messageFor(supervisor, "q-1")
  })

const REFUSAL = new RegExp(
  `^Reply is too large to answer durable question q-1: saved as its answer, it would make a frame of (\\d+) bytes \\(the question and the answer whole, as a later question_get or an answer receipt carries them\\), over the ${MAX_FRAME_BYTES}-byte frame limit; question q-1 leaves room for an answer of at most (\\d+) bytes as JSON text\\. Nothing was delivered or saved, and the question still waits; reply shorter, or put long material in a file and name its path$`
)

/** The size and the room a refusal names; fails unless `ack` is the refusal in its exact words. */
const refused = (ack: { readonly type: string; readonly code?: string; readonly reason?: string }) => {
  assert.strictEqual(ack.type, "delivery_failed", "the reply was delivered")
  assert.strictEqual(ack.code, "E_MESSAGE_TOO_LARGE")
  const match = REFUSAL.exec(ack.reason ?? "")
  assert.isNotNull(match, ack.reason)
  return { bytes: Number(match![1]), room: Number(match![2]) }
}

describe("a supervisor's live reply to a durable question is sized as the answer it becomes", () => {
  it.effect("a reply that fits its own frame but not with the question: refused E_MESSAGE_TOO_LARGE, nothing delivered or saved; a shorter reply then answers", () =>
    patientClock(Effect.gen(function*() {
      const { child, questions, supervisor } = yield* questionWorld
      yield* asked(child, supervisor)
      const long = message("a".repeat(600_000), { replyTo: "q-1" })
      const { bytes } = refused(yield* send(supervisor, "child-worker", long))
      assert.isAbove(bytes, 1_100_000)
      yield* fiberDone(supervisor, "after-refusal")
      assert.isUndefined(questions.records.get("q-1")?.answer, "the refused reply was saved")
      yield* child.roundTrip
      yield* child.expectNothing("message", (frame) => frame.message.id === long.id)
      // The question still waits on its edge: a shorter reply is delivered and saved as its answer.
      const short = message("left", { replyTo: "q-1" })
      assert.strictEqual((yield* send(supervisor, "child-worker", short)).type, "delivered")
      assert.strictEqual((yield* messageFor(child, short.id)).message.content.text, "left")
      yield* fiberDone(supervisor, "after-answer")
      assert.strictEqual(questions.records.get("q-1")?.answer, "left")
    })))

  it.effect("the bound is exact: a reply a byte over the room is refused naming 1 MiB + 1; one of exactly the room is saved, and a question_get to the widest request id and the child's re-ask are answered", () =>
    patientClock(Effect.gen(function*() {
      const { child, questions, supervisor } = yield* questionWorld
      yield* asked(child, supervisor)
      const { room } = refused(yield* send(supervisor, "child-worker", message("a".repeat(600_000), { replyTo: "q-1" })))
      const over = refused(yield* send(supervisor, "child-worker", message("a".repeat(room + 1), { replyTo: "q-1" })))
      assert.deepStrictEqual(over, { bytes: MAX_FRAME_BYTES + 1, room })
      const exact = message("a".repeat(room), { replyTo: "q-1" })
      assert.strictEqual((yield* send(supervisor, "child-worker", exact)).type, "delivered")
      yield* messageFor(child, exact.id)
      yield* fiberDone(supervisor, "after-answer")
      assert.strictEqual(questions.records.get("q-1")?.answer, exact.content.text)
      // Before, both were dropped by the writer's guard.
      yield* supervisor.send({ type: "question_get", requestId: WIDEST_REQUEST_ID, questionId: "q-1" })
      const got = yield* answerTo(supervisor, WIDEST_REQUEST_ID)
      assert.strictEqual(got.type, "question_result")
      yield* child.send({ ...questionAsk, requestId: "r-2", text: QUESTION })
      const reasked = yield* answerTo(child, "r-2")
      assert.strictEqual(reasked.type, "question_result")
    })))

  it.effect("a failure reply (replyError) longer than the room is not an answer: delivered, nothing saved, the question still waits", () =>
    patientClock(Effect.gen(function*() {
      const { child, questions, supervisor } = yield* questionWorld
      yield* asked(child, supervisor)
      const failure = message("a".repeat(600_000), { replyTo: "q-1" })
      const ack = yield* send(supervisor, "child-worker", failure, { replyError: "turn failed" })
      assert.strictEqual(ack.type, "delivered", ack.type === "delivery_failed" ? ack.reason : "")
      yield* messageFor(child, failure.id)
      yield* fiberDone(supervisor, "after-failure")
      assert.isUndefined(questions.records.get("q-1")?.answer)
      const short = message("left", { replyTo: "q-1" })
      assert.strictEqual((yield* send(supervisor, "child-worker", short)).type, "delivered")
    })))
})
