/**
 * An ask dropped silently as answered (its copy given back, unconfirmed, after bob's reply closed its edge) whose
 * reply is lost while its asker's durable question under the ask's id is only asked: the ask's edge stays closed
 * (Asks.answerLost, helper oneid2), and its asker is owed no `expired` for it before the ask's own deadline — the
 * ask did not time out, and the asker gave its id to the question (StaleAsks.replyLost; review revdg DG3). Before,
 * StaleAsks read "not open again, not withdrawn" as "expired" and told the asker `expired` (detail: the ask timed
 * out) hours before its timeout. Past the deadline the `expired` is still owed at once, the question's hold or not.
 *
 * The world, on a Router driven by hand (test/support/questionHandWorld.ts) on the TestClock: the child
 * asks bob (a three-hour ask timeout) and leaves; bob answers before confirming the ask, and its connection closes,
 * so the ask's copy comes back answered and is dropped silently; past P46's hour the child, back, asks a question
 * under the ask's id (no question fiber runs: it stays asked), then leaves again (bob's reply, written to it
 * unconfirmed, goes back to the mailbox), and bob, back, withdraws the reply: it is lost. The child, back once more,
 * reads what it was owed. No sleep: the hour that lets P46's record go and the time of the loss are set on the
 * TestClock (TestClock.adjust, TestClock.setTime), modelled waits, never a barrier.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect } from "effect"
import { TestClock } from "effect/testing"
import { REPLAY_WINDOW_MS } from "../../src/protocol/constants.ts"
import { message } from "../support/broker.ts"
import { CHILD, questionAskFrame, questionHandWorld, type QuestionSeen } from "../support/questionHandWorld.ts"

const HOUR = 3_600_000
const ASK_TIMEOUT_MS = 3 * HOUR
/** When the child sends its ask, on the TestClock. */
const SENT_AT = 1_000_000_000

/** The `expired` receipts among `frames`, by message id. */
const expiredOf = (frames: ReadonlyArray<QuestionSeen>): Array<string> =>
  frames.flatMap((f) => f.type === "message_receipt" && f.receipt?.status === "expired" ? [f.receipt.messageId] : [])

/** The world above, bob's reply withdrawn `lostAfter` ms after the ask was sent; the child's frames once back. */
const replyLostUnderAskedQuestion = (lostAfter: number) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(SENT_AT)
    const clock = yield* Clock.Clock
    const world = yield* questionHandWorld({ askTimeout: ASK_TIMEOUT_MS }, () => clock.currentTimeMillisUnsafe())
    const { batch, close, framesOf, router } = world
    const questions = router.questions
    if (questions === undefined) throw new Error("setup: no questions concern")
    const ask = { ...message("left or right?", { expectsReply: true }), id: "q-1" }
    batch(world.child, [{ type: "send", to: "bob", message: ask }])
    assert.isTrue(framesOf(world.bob).some((f) => f.type === "message" && f.message?.id === "q-1"), "setup: bob was not asked")
    close(world.child)
    // bob answers before confirming the ask; the reply waits for the child, away.
    const reply = message("left", { replyTo: "q-1" })
    batch(world.bob, [{ type: "send", to: CHILD, message: reply }])
    assert.strictEqual(world.answerOf(world.bob, reply.id)?.type, "delivered", "setup: bob's reply was not queued")
    assert.strictEqual(router.stats().asks, 0, "setup: the reply did not close the ask's edge")
    // bob's connection closes: the ask's copy, unconfirmed and answered, comes back and is dropped silently.
    close(world.bob)
    assert.strictEqual(router.stats().mailbox, 1, "setup: the ask's copy was not dropped (only the reply waits)")
    // Past P46's hour: bob's next send prunes the records, the child's ask's among them.
    yield* TestClock.adjust(HOUR + REPLAY_WINDOW_MS)
    const bob = world.connectBob()
    batch(bob, [{ type: "send", to: CHILD, message: message("tick") }])

    const child = world.connectChild()
    const session = child.session
    if (session === undefined) throw new Error("setup: the child is not registered")
    assert.isTrue(framesOf(child).some((f) => f.type === "message" && f.message?.id === reply.id), "setup: the reply was not flushed")
    batch(child, [questionAskFrame("q-1")])
    assert.isUndefined(framesOf(child).find((f) => f.type === "question_failed"), "setup: the question was refused")
    assert.strictEqual(questions.holdOf(session.key, "q-1"), "asked", "setup: the question is not only asked")
    close(child)
    yield* TestClock.setTime(SENT_AT + lostAfter)
    batch(bob, [{ type: "cancel_message", messageId: reply.id }])
    assert.strictEqual(questions.holdOf(session.key, "q-1"), "asked", "setup: the question no longer holds the id")
    assert.strictEqual(router.stats().asks, 0, "setup: the lost reply opened the ask's edge again")
    return framesOf(world.connectChild())
  })

describe("an ask dropped as answered, its reply lost while a question under its id is only asked", () => {
  it.effect("before the ask's deadline: its asker is told no expired for it", () =>
    Effect.gen(function*() {
      const back = yield* replyLostUnderAskedQuestion(2 * HOUR)
      assert.notInclude(expiredOf(back), "q-1", "the asker was told expired before its ask's timeout")
    }))

  it.effect("past the ask's deadline: its asker, back, is told expired", () =>
    Effect.gen(function*() {
      const back = yield* replyLostUnderAskedQuestion(ASK_TIMEOUT_MS + 1)
      assert.include(expiredOf(back), "q-1", "the ask expired unanswered and its asker was not told")
    }))
})
