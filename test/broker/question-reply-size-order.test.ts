/**
 * Which refusal a send that breaks two rules gets: a reference it names (`supersedes`, P72) is judged before its size,
 * for a plain send (the size check follows every send stage: Send.ts, docs/protocol.md "Sending") and, since helper
 * qs, for the supervisor's live reply to a durable question, sized as the answer it becomes
 * (`Questions.replySize`, run after every other stage). A bad reference is cheap to fix and independent of the size;
 * before, such a reply was refused `E_MESSAGE_TOO_LARGE` first and its sender, once it shortened it, was refused again
 * for the reference. A good reference on a reply too large is refused for its size with nothing superseded: the
 * superseded message's receiver is told nothing and its record is as it was. The question fiber's work is awaited
 * with a `question_list` on the same connection. On a broker over the in-memory network with a memory question store,
 * under `patientClock` (a step carries megabytes); no time passes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_FRAME_BYTES } from "../../src/protocol/constants.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { patientClock } from "../support/memory.ts"
import { questionAsk, questionWorld } from "../support/questionWorld.ts"
import type { WireClient } from "../support/wire.ts"

/** The question's text: half a MiB, so a reply that fits its own frame can still be too long an answer. */
const QUESTION = "q".repeat(500_000)

const answerTo = (client: WireClient, requestId: string) =>
  client.next(["question_result", "question_failed"], (frame) => frame.requestId === requestId)

/** The child asks `q-1` with QUESTION; the supervisor has its notification. */
const asked = (child: WireClient, supervisor: WireClient) =>
  Effect.gen(function*() {
    yield* child.send({ ...questionAsk, text: QUESTION })
    assert.strictEqual((yield* answerTo(child, questionAsk.requestId)).type, "question_result", "precondition: the question is saved")
    yield* messageFor(supervisor, "q-1")
  })

const NO_ROUTE = "Supersede target does not match a previous message from this sender to this receiver"

describe("a send too large that names a bad supersedes is refused for the reference first", () => {
  it.effect("a supervisor's reply too large as the question's answer, superseding a message it never sent: E_SUPERSEDE_TARGET; the same reply without the reference: E_MESSAGE_TOO_LARGE", () =>
    patientClock(Effect.gen(function*() {
      const { child, questions, supervisor } = yield* questionWorld
      yield* asked(child, supervisor)
      const text = "a".repeat(600_000)
      const both = yield* send(supervisor, "child-worker", message(text, { replyTo: "q-1", supersedes: "never-sent" }))
      assert.strictEqual(both.type, "delivery_failed")
      assert.strictEqual(both.type === "delivery_failed" ? both.code : undefined, "E_SUPERSEDE_TARGET")
      assert.strictEqual(both.type === "delivery_failed" ? both.reason : undefined, NO_ROUTE)
      // The reference fixed, the size is what is left to fix.
      const sized = yield* send(supervisor, "child-worker", message(text, { replyTo: "q-1" }))
      assert.strictEqual(sized.type === "delivery_failed" ? sized.code : sized.type, "E_MESSAGE_TOO_LARGE")
      yield* supervisor.send({ type: "question_list", requestId: "done" })
      yield* answerTo(supervisor, "done")
      assert.isUndefined(questions.records.get("q-1")?.answer, "a refused reply was saved")
    })))

  it.effect("a reply too large superseding the supervisor's earlier failure reply: E_MESSAGE_TOO_LARGE, the child told nothing of a supersede, the failure reply's record as it was", () =>
    patientClock(Effect.gen(function*() {
      const { child, questions, supervisor } = yield* questionWorld
      yield* asked(child, supervisor)
      // A failure reply (C-DQ-8) is delivered and not an answer: the question waits on a fresh edge.
      const failure = message("turn failed", { replyTo: "q-1" })
      assert.strictEqual((yield* send(supervisor, "child-worker", failure, { replyError: "turn failed" })).type, "delivered")
      yield* messageFor(child, failure.id)
      const over = message("a".repeat(600_000), { replyTo: "q-1", supersedes: failure.id })
      const ack = yield* send(supervisor, "child-worker", over)
      assert.strictEqual(ack.type === "delivery_failed" ? ack.code : ack.type, "E_MESSAGE_TOO_LARGE")
      yield* child.roundTrip
      yield* child.expectNothing("message_control")
      yield* child.expectNothing("message", (frame) => frame.message.id === over.id)
      // The failure reply's record still says delivered: a retry of it is answered so, not E_DELIVERY_SUPERSEDED.
      const retry = yield* send(supervisor, "child-worker", failure, { replyError: "turn failed" })
      assert.strictEqual(retry.type, "delivered", retry.type === "delivery_failed" ? retry.reason : "")
      // And the reference still good, a reply that fits supersedes it and answers the question.
      const short = message("left", { replyTo: "q-1", supersedes: failure.id })
      assert.strictEqual((yield* send(supervisor, "child-worker", short)).type, "delivered")
      yield* supervisor.send({ type: "question_list", requestId: "done" })
      yield* answerTo(supervisor, "done")
      assert.strictEqual(questions.records.get("q-1")?.answer, "left")
    })))

  it.effect("a plain send whose forwarded frame passes 1 MiB, superseding a message never sent: E_SUPERSEDE_TARGET (the order the reply follows)", () =>
    patientClock(Effect.gen(function*() {
      const { bob, child } = yield* questionWorld
      const first = message("hello")
      assert.strictEqual((yield* send(bob, "child-worker", first)).type, "delivered")
      // A send frame under 1 MiB whose forwarded `message` frame (the sender's SessionInfo, two stamps) is over it;
      // the bad reference as long as the good one, so both sends are as long.
      const probe = message("", { supersedes: "n".repeat(first.id.length) })
      const overhead = Buffer.byteLength(JSON.stringify({ type: "send", to: "child-worker", message: probe }))
      const text = "a".repeat(MAX_FRAME_BYTES - overhead - 8)
      const both = yield* send(bob, "child-worker", { ...probe, content: { text } })
      assert.strictEqual(both.type === "delivery_failed" ? both.code : both.type, "E_SUPERSEDE_TARGET")
      const sized = yield* send(bob, "child-worker", { ...probe, content: { text }, supersedes: first.id })
      assert.strictEqual(sized.type === "delivery_failed" ? sized.code : sized.type, "E_MESSAGE_TOO_LARGE")
      yield* child.roundTrip
      yield* child.expectNothing("message_control")
    })))
})
