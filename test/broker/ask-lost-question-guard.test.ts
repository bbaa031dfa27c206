/**
 * A lost mailbox copy of an ordinary ask never closes a durable question's edge under its key (Asks.askLost's
 * question guard; review revcf R5: until now no test reached it). The two share a key only once the ask's edge
 * closed while a copy of it was still out (its recipient read it and never confirmed), and its asker's question
 * then took the id; the guard decides only when the copy's deadline (its receipt stamp plus its timeout) equals
 * the question's (the clock at its notification plus MAX_ASK_TIMEOUT_MS) — a clock set back about thirty days past
 * the ask's receipt. This test builds that world on the TestClock: the clock step and the hour that lets P46's
 * record of the ask go are modelled faults and waits (TestClock.adjust, TestClock.setTime), never a barrier.
 *
 * On a Router driven by hand (test/support/questionHandWorld.ts), with a one-place mailbox: the child asks bob (one
 * minute), bob reads and never confirms; past the ask's deadline and P46's hour (the child's next send prunes both),
 * the clock is set back so that the question the child asks under the ask's id is notified with the copy's deadline.
 * The question fiber's two calls after saving (QuestionWorker: `wait`, `notify`) are made by hand (no fiber runs
 * here). Bob's connection closes — his unconfirmed copy goes back to the mailbox — and the child's note to bob pushes
 * that copy out: it is lost (Asks.askLost).
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect } from "effect"
import { TestClock } from "effect/testing"
import { MAX_ASK_TIMEOUT_MS, REPLAY_WINDOW_MS } from "../../src/protocol/constants.ts"
import type { QuestionRecord } from "../../src/store/questionModel.ts"
import { message } from "../support/broker.ts"
import { CHILD, questionAskFrame, questionHandWorld, SUP } from "../support/questionHandWorld.ts"

const START = 100 * 86_400_000
const ASK_TIMEOUT = 60_000
const HOUR = 3_600_000

describe("a lost copy of an ask whose id a durable question took", () => {
  it.effect("with the question's deadline equal to the copy's, the question's edge stays open: the supervisor's answer is delivered", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(START)
      const clock = yield* Clock.Clock
      const world = yield* questionHandWorld({ askTimeout: ASK_TIMEOUT, mailboxCapacity: 1 }, () => clock.currentTimeMillisUnsafe())
      const { batch, bob, child, closeAbandoning, router, supervisor, answerOf, framesOf } = world
      const ask = { ...message("left or right?", { expectsReply: true }), id: "q-1" }
      batch(child, [{ type: "send", to: "bob", message: ask }])
      assert.isTrue(framesOf(bob).some((f) => f.type === "message" && f.message?.id === "q-1"), "setup: bob was not asked")

      // Past the ask's deadline and P46's hour: the child's next send (to nobody) expires the edge and prunes the record.
      yield* TestClock.adjust(ASK_TIMEOUT + HOUR + REPLAY_WINDOW_MS)
      batch(child, [{ type: "send", to: "nobody", message: message("tick") }])
      assert.strictEqual(router.stats().asks, 0, "setup: the ask's edge did not expire")

      // The clock set back: the question, notified now, is due when the ask's copy is (its receipt plus its timeout).
      yield* TestClock.setTime(START + ASK_TIMEOUT - MAX_ASK_TIMEOUT_MS)
      batch(child, [questionAskFrame("q-1")])
      assert.isUndefined(framesOf(child).find((f) => f.type === "question_failed"), "setup: the question was refused")
      const session = child.session
      if (session === undefined) throw new Error("setup: the child is not registered")
      const now = clock.currentTimeMillisUnsafe()
      const record: QuestionRecord = {
        id: "q-1",
        ownerId: SUP,
        childId: CHILD,
        childName: "worker",
        reason: "need_decision",
        message: "Which way?",
        createdAt: now
      }
      router.questions?.wait("q-1", session)
      router.questions?.notify(record, undefined)
      router.questions?.asked(session, "q-1")
      assert.isTrue(framesOf(supervisor).some((f) => f.type === "message" && f.message?.id === "q-1"), "setup: the supervisor was not notified")
      assert.strictEqual(router.stats().asks, 1, "setup: the question's edge is not open")

      // Bob's unconfirmed copy goes back to the mailbox; the child's note to bob pushes it out of the one place.
      closeAbandoning(bob)
      batch(child, [{ type: "send", to: "bob", message: message("fyi") }])
      assert.strictEqual(router.stats().asks, 1, "the lost ask copy closed the question's edge")

      const answer = message("go left", { replyTo: "q-1" })
      batch(supervisor, [{ type: "send", to: CHILD, message: answer }])
      const verdict = answerOf(supervisor, answer.id)
      assert.strictEqual(verdict?.type, "delivered", `the supervisor's answer was refused: ${verdict?.reason}`)
    }))
})
