/**
 * Questions.stage refuses a send under the id of a question its sender asked, waits on or whose edge is open
 * (helper oneid2). Only a session with a question live can hold an id, so the stage first looks its sender's key up
 * in `liveBy` (per session, its questions asked, waited on or with an edge open) and checks the message id
 * (`Questions.holdOf`, where the record key is built and the message-keyed tables are read) only for such a sender
 * (review revdb DB1: before, while any question was live, every send of every session paid that check).
 *
 * On a Router driven by hand (test/support/questionHandWorld.ts), no question fiber: the test makes the fiber's calls.
 * Counted by wrapping the instance's `holdOf` and the `waiters`/`asking` lookups; no time passes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { QuestionRecord } from "../../src/store/questionModel.ts"
import { message } from "../support/broker.ts"
import { CHILD, questionAskFrame, questionHandWorld, SUP } from "../support/questionHandWorld.ts"

describe("Questions.stage while the child's question is live", () => {
  it.effect("bob's plain send (bob has no question) checks no message id; the child's own send does; none counted once it is over", () =>
    Effect.gen(function*() {
      const world = yield* questionHandWorld({}, () => 1_000_000)
      const { batch, bob, child, router, answerOf } = world
      const questions = router.questions
      const session = child.session
      if (questions === undefined || session === undefined) throw new Error("setup: no questions concern or child")

      let checks = 0
      let lookups = 0
      const holdOf = questions.holdOf.bind(questions)
      questions.holdOf = (senderKey, messageId) => {
        checks++
        return holdOf(senderKey, messageId)
      }
      const waiters = questions["waiters"]
      const get = waiters.get.bind(waiters)
      waiters.get = (key) => {
        lookups++
        return get(key)
      }
      const asking = questions["asking"]
      const has = asking.has.bind(asking)
      asking.has = (key) => {
        lookups++
        return has(key)
      }

      // Asked, not handled yet (no fiber here).
      batch(child, [questionAskFrame("q-1")])
      assert.isTrue(questions.holds(session.key, "q-1"), "setup: the child's question is not live")
      checks = 0
      lookups = 0
      const asked = message("fyi, asked")
      batch(bob, [{ type: "send", to: CHILD, message: asked }])
      assert.strictEqual(answerOf(bob, asked.id)?.type, "delivered", "setup: bob's plain send was not delivered")
      assert.deepStrictEqual({ checks, lookups }, { checks: 0, lookups: 0 }, "bob's send, the question asked")

      // Saved and notified, as the fiber would: the child waits on it and its edge is open.
      questions.wait("q-1", session)
      questions.asked(session, "q-1")
      const record: QuestionRecord = {
        id: "q-1",
        ownerId: SUP,
        childId: CHILD,
        childName: "worker",
        reason: "need_decision",
        message: "Which way?",
        createdAt: 1_000_000
      }
      questions.notify(record, undefined)
      assert.strictEqual(questions.sizes.notices, 1, "setup: the supervisor was not notified (no question edge)")
      assert.isTrue(questions.holds(session.key, "q-1"), "setup: the child's question is not waited on")
      checks = 0
      lookups = 0
      const waited = message("fyi, waited on")
      batch(bob, [{ type: "send", to: CHILD, message: waited }])
      assert.strictEqual(answerOf(bob, waited.id)?.type, "delivered", "setup: bob's plain send was not delivered")
      assert.deepStrictEqual({ checks, lookups }, { checks: 0, lookups: 0 }, "bob's send, the question waited on")

      // The child's own send under another id is checked (the counting sees the path) and goes through.
      const own = message("fyi from the child")
      batch(child, [{ type: "send", to: "bob", message: own }])
      assert.strictEqual(answerOf(child, own.id)?.type, "delivered", "the child's send under a new id was refused")
      assert.strictEqual(checks, 1, "the child's own send was not checked")

      // Confirmed (the fiber's `forget`): its waiter and edge go, and so does the child's count.
      questions.forget("q-1")
      assert.strictEqual(questions["liveBy"].size, 0, "the child still counts a question live")
    }))
})
