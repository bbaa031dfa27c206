/**
 * A durable question survives a broker restart (C-DQ-6, C-SUP-18): a real
 * broker on a Unix socket keeps its questions in a file-backed SQLite
 * database (`runBroker`'s default durability: `intercom.db`, 0600); it is
 * stopped and a new one is started on the same directory, and the saved
 * question still reaches the supervisor and its answer still reaches the child.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { messageFor } from "../support/broker.ts"
import { request, socketQuestionWorld } from "../support/socketQuestions.ts"

describe("questions-v1 over a Unix socket with intercom.db", () => {
  it.live("a question saved before a broker restart is notified again, answered, and delivered to the child after it", () =>
    Effect.gen(function*() {
      const { child, intercomDir, start, supervisor } = yield* socketQuestionWorld
      const file = path.join(intercomDir, "intercom.db")

      const first = yield* start
      const sup1 = yield* supervisor("sup-1")
      yield* sup1.send({ type: "authorize_supervisor", requestId: "a", childName: "worker" })
      const authorized = yield* sup1.next("supervisor_authorized")
      const child1 = yield* child("child-1", authorized.capability)
      const asked = yield* request(child1, "ask-1", {
        type: "question_ask",
        questionId: "q-restart",
        reason: "need_decision",
        text: "Subagent needs a supervisor decision.\n\nKeep going?"
      })
      assert.strictEqual(asked.type === "question_result" ? asked.durable : asked, true)
      yield* messageFor(sup1, "q-restart")

      yield* Scope.close(first, Exit.void)
      yield* child1.waitClosed()
      yield* sup1.waitClosed()
      assert.strictEqual(fs.statSync(file).mode & 0o777, 0o600)

      const second = yield* start
      const sup2 = yield* supervisor("sup-2")
      yield* sup2.send({ type: "authorize_supervisor", requestId: "b", childName: "worker", capability: authorized.capability })
      yield* sup2.next("supervisor_authorized")
      const child2 = yield* child("child-2", authorized.capability)
      const rechecked = yield* request(child2, "ask-2", {
        type: "question_ask",
        questionId: "q-restart",
        reason: "need_decision",
        text: "Subagent needs a supervisor decision.\n\nKeep going?"
      })
      assert.strictEqual(rechecked.type === "question_result" ? rechecked.question?.state : rechecked, "awaiting_input")
      yield* messageFor(sup2, "q-restart")
      const answered = yield* request(sup2, "answer", { type: "question_answer", questionId: "q-restart", text: "yes, keep going" })
      assert.strictEqual(answered.type === "question_result" ? answered.receipt?.sentToChild : answered, true)
      const pushed = yield* child2.next("question_answered", (f) => f.questionId === "q-restart")
      assert.strictEqual(pushed.answer, "yes, keep going")
      yield* child2.send({ type: "question_received", questionId: "q-restart" })
      const read = yield* request(sup2, "get", { type: "question_get", questionId: "q-restart" })
      assert.strictEqual(read.type === "question_result" ? read.question?.state : read, "answered")
      yield* Scope.close(second, Exit.void)
    }))
})
