/**
 * A base supervisor's reply to a durable question survives a broker restart as the question's answer (task qbase2,
 * from qbase's test): a real broker on a Unix socket keeps its questions in a file-backed SQLite database
 * (`runBroker`'s default durability); the supervisor comes back without `questions-v1` and replies along the
 * question's edge, the child gets the reply, the question fiber saves it as the answer (a `question_get` queued behind
 * it is the barrier), the broker is stopped and a new one started on the same directory. The child asking again is
 * pushed the saved answer, and the `questions-v1` supervisor is not notified of the question. Before, the reply was
 * delivered and nothing saved: the restarted broker had the question `awaiting_input` and notified the supervisor
 * again.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { GROUPS_V1, SUPERVISOR_V1 } from "../../src/protocol/features.ts"
import { message, messageFor } from "../support/broker.ts"
import { FEATURES, request, socketQuestionWorld } from "../support/socketQuestions.ts"

/** The supervisor back as a base client: the supervisor channel, no `questions-v1`. */
const BASE = [GROUPS_V1, SUPERVISOR_V1]
const QUESTION = { type: "question_ask", questionId: "q-base", reason: "need_decision", text: "Left or right?" }

describe("a base supervisor's reply to a durable question, over a Unix socket with intercom.db", () => {
  it.live("is the question's answer after a broker restart: pushed to the child asking again, the supervisor not notified", () =>
    Effect.gen(function*() {
      const { child, start, supervisor } = yield* socketQuestionWorld

      const first = yield* start
      const sup1 = yield* supervisor("sup-1", FEATURES)
      yield* sup1.send({ type: "authorize_supervisor", requestId: "a", childName: "worker" })
      const { capability } = yield* sup1.next("supervisor_authorized")
      const child1 = yield* child("child-1", capability)
      const asked = yield* request(child1, "ask-1", QUESTION)
      assert.strictEqual(asked.type === "question_result" ? asked.durable : asked, true, "setup: not saved durably")
      yield* messageFor(sup1, "q-base")
      yield* sup1.destroy
      const base = yield* supervisor("sup-base", BASE)
      const reply = message("go left", { replyTo: "q-base" })
      yield* base.send({ type: "send", to: "child-worker", message: reply })
      yield* messageFor(child1, reply.id)
      // Through the question fiber, behind the reply's answer: saved, committed, by the time it is answered.
      const saved = yield* request(child1, "get-1", { type: "question_get", questionId: "q-base" })
      assert.strictEqual(saved.type === "question_result" ? saved.question?.answer : saved, "go left")
      yield* Scope.close(first, Exit.void)
      yield* child1.waitClosed()
      yield* base.waitClosed()

      const second = yield* start
      const sup2 = yield* supervisor("sup-2", FEATURES)
      yield* sup2.send({ type: "authorize_supervisor", requestId: "b", childName: "worker", capability })
      yield* sup2.next("supervisor_authorized")
      const child2 = yield* child("child-2", capability)
      const rechecked = yield* request(child2, "ask-2", QUESTION)
      assert.strictEqual(rechecked.type === "question_result" ? rechecked.question?.state : rechecked, "answer_pending")
      const pushed = yield* child2.next("question_answered", (f) => f.questionId === "q-base")
      assert.strictEqual(pushed.answer, "go left")
      // Through the question fiber, after the re-ask: a notification of it would be before this answer.
      yield* request(sup2, "list", { type: "question_list" })
      assert.isFalse(
        sup2.received().some((f) => f.type === "message" && f.message.id === "q-base"),
        "the questions-v1 supervisor was notified of the answered question"
      )
      yield* Scope.close(second, Exit.void)
    }))
})
