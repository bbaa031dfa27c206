/**
 * A reply lost after its asker took the ask's id for a durable question does not open the ask's edge again under
 * the question's key while the question holds it (Asks.answerLost reads Questions.holdOf; helper oneid2). Before,
 * the ordinary ask's edge opened again there: the ask's recipient could answer again under the question's key, and
 * the question's own edge, opened at its notification, replaced it (or the other way round). A question only asked
 * when the reply is lost keeps the ask closed too, also when the question fiber then refuses it (a store failure,
 * `QuestionIdTaken`): the replier's second reply is refused E_REPLY_TARGET — a known limit (docs/protocol.md,
 * review revdb DB2). Reopening the ask at the fiber's refusal was tried (fixdb) and reverted: an edge reopened then
 * outlived the asker's `cancel_ask` made meanwhile, and an `expired` its asker had been told (review revdg DG1,
 * DG3). Saved, the question took the id for good, also with its child away: the ask stays closed.
 *
 * The world, on a Router driven by hand (test/support/questionHandWorld.ts) on a clock the test moves: the child
 * asks bob (a three-hour ask timeout) and leaves; bob's reply is queued; past P46's hour the child's record of the
 * ask is gone, so when it comes back (the reply written to it, unconfirmed) its question under the ask's id is
 * taken. The question fiber has not handled it yet (no fiber runs here: a slow store's world), so it is asked
 * (Questions' `asking`). The child's connection closes (the reply goes back to the mailbox) and bob withdraws the
 * reply: it is lost before the ask's deadline. The fiber's verdict is then made by hand, as QuestionWorker makes it:
 * `Questions.wait` for a saved question, then `Questions.asked`. No sleep: the clock is a number the test sets.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { REPLAY_WINDOW_MS } from "../../src/protocol/constants.ts"
import { DeliveryCode } from "../../src/protocol/delivery.ts"
import { message } from "../support/broker.ts"
import { CHILD, questionAskFrame, questionHandWorld } from "../support/questionHandWorld.ts"

const HOUR = 3_600_000

/** The world above, up to bob's reply lost while the child's question under the ask's id is only asked. */
const lostWhileAsked = Effect.gen(function*() {
  const clock = { now: 1_000_000_000 }
  const world = yield* questionHandWorld({ askTimeout: 3 * HOUR }, () => clock.now)
  const { batch, bob, close, router, answerOf } = world
  const questions = router.questions
  if (questions === undefined) throw new Error("setup: no questions concern")
  const ask = { ...message("left or right?", { expectsReply: true }), id: "q-1" }
  batch(world.child, [{ type: "send", to: "bob", message: ask }])
  assert.strictEqual(answerOf(world.child, "q-1")?.type, "delivered", "setup: the ask was not delivered")
  close(world.child)
  const reply = message("left", { replyTo: "q-1" })
  batch(bob, [{ type: "send", to: CHILD, message: reply }])
  assert.strictEqual(answerOf(bob, reply.id)?.type, "delivered", "setup: bob's reply was not queued")
  // Past P46's hour: bob's next send prunes the records, the child's ask's among them.
  clock.now += HOUR + REPLAY_WINDOW_MS
  batch(bob, [{ type: "send", to: CHILD, message: message("tick") }])

  const child = world.connectChild()
  const session = child.session
  if (session === undefined) throw new Error("setup: the child is not registered")
  assert.isTrue(world.framesOf(child).some((f) => f.type === "message" && f.message?.id === reply.id), "setup: the reply was not flushed")
  batch(child, [questionAskFrame("q-1")])
  assert.isUndefined(world.framesOf(child).find((f) => f.type === "question_failed"), "setup: the question was refused")
  assert.strictEqual(questions.holdOf(session.key, "q-1"), "asked", "setup: the question is not only asked")
  close(child)
  batch(bob, [{ type: "cancel_message", messageId: reply.id }])
  return { ...world, questions, session }
})

/** bob's second reply to the ask `q-1`, and the answer bob was written for it. */
const replyAgain = (world: Effect.Success<typeof lostWhileAsked>) => {
  const again = message("right", { replyTo: "q-1" })
  world.batch(world.bob, [{ type: "send", to: CHILD, message: again }])
  return world.answerOf(world.bob, again.id)
}

describe("a reply lost after its ask's id went to a durable question", () => {
  it.effect("the ask's edge does not open again under the question's key: bob's second reply is refused E_REPLY_TARGET", () =>
    Effect.gen(function*() {
      const world = yield* lostWhileAsked
      assert.strictEqual(world.router.stats().asks, 0, "the lost reply opened the ask's edge again under the question's key")
      const answer = replyAgain(world)
      assert.strictEqual(answer?.type, "delivery_failed", "bob answered again under the question's key")
      assert.strictEqual(answer?.code, DeliveryCode.ReplyTarget)
    }))

  it.effect("the question then refused by the fiber: the ask stays closed (the known limit), bob's second reply is refused E_REPLY_TARGET", () =>
    Effect.gen(function*() {
      const world = yield* lostWhileAsked
      // Refused (a store failure, or another child's question has the id): no `wait`, only `asked`.
      world.questions.asked(world.session, "q-1")
      assert.isUndefined(world.questions.holdOf(world.session.key, "q-1"), "setup: the refused question still holds the id")
      assert.strictEqual(world.router.stats().asks, 0, "the ask's edge opened again at the fiber's refusal")
      const answer = replyAgain(world)
      assert.strictEqual(answer?.type, "delivery_failed", "bob answered again after the question was refused")
      assert.strictEqual(answer?.code, DeliveryCode.ReplyTarget)
    }))

  it.effect("the question then saved by the fiber, its child away: the ask stays closed, bob's second reply is refused E_REPLY_TARGET", () =>
    Effect.gen(function*() {
      const world = yield* lostWhileAsked
      // Saved: the fiber's `wait` finds the child gone (nothing live holds the id), then `asked`.
      world.questions.wait("q-1", world.session)
      world.questions.asked(world.session, "q-1")
      assert.isUndefined(world.questions.holdOf(world.session.key, "q-1"), "setup: a question of a child away holds the id")
      assert.strictEqual(world.router.stats().asks, 0, "the ask's edge opened again under a saved question's key")
      const answer = replyAgain(world)
      assert.strictEqual(answer?.type, "delivery_failed", "bob answered again under the question's key")
      assert.strictEqual(answer?.code, DeliveryCode.ReplyTarget)
    }))
})
