/**
 * A reply lost after its asker took the ask's id for a durable question does not open the ask's edge again under
 * the question's key (Asks.answerLost reads Questions.holds; helper oneid2). Before, the ordinary ask's edge
 * opened again there: the ask's recipient could answer again under the question's key, and the question's own
 * edge, opened at its notification, replaced it (or the other way round).
 *
 * The world, on a Router driven by hand (test/support/questionHandWorld.ts) on a clock the test moves: the child
 * asks bob (a three-hour ask timeout) and leaves; bob's reply is queued; past P46's hour the child's record of the
 * ask is gone, so when it comes back (the reply written to it, unconfirmed) its question under the ask's id is
 * taken. The question fiber has not handled it yet (no fiber runs here: a slow store's world), so it is asked
 * (Questions' `asking`). The child's connection closes (the reply goes back to the mailbox) and bob withdraws the
 * reply: it is lost before the ask's deadline. No sleep: the clock is a number the test sets.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { REPLAY_WINDOW_MS } from "../../src/protocol/constants.ts"
import { DeliveryCode } from "../../src/protocol/delivery.ts"
import { message } from "../support/broker.ts"
import { CHILD, questionAskFrame, questionHandWorld } from "../support/questionHandWorld.ts"

const HOUR = 3_600_000

describe("a reply lost after its ask's id went to a durable question", () => {
  it.effect("the ask's edge does not open again under the question's key: bob's second reply is refused E_REPLY_TARGET", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000_000 }
      const world = yield* questionHandWorld({ askTimeout: 3 * HOUR }, () => clock.now)
      const { batch, bob, close, router, answerOf } = world
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
      assert.isTrue(world.framesOf(child).some((f) => f.type === "message" && f.message?.id === reply.id), "setup: the reply was not flushed")
      batch(child, [questionAskFrame("q-1")])
      assert.isUndefined(world.framesOf(child).find((f) => f.type === "question_failed"), "setup: the question was refused")
      assert.isTrue(router.questions?.holds(child.session?.key ?? "", "q-1") ?? false, "setup: the question does not hold its id")
      close(child)
      batch(bob, [{ type: "cancel_message", messageId: reply.id }])

      assert.strictEqual(router.stats().asks, 0, "the lost reply opened the ask's edge again under the question's key")
      const again = message("right", { replyTo: "q-1" })
      batch(bob, [{ type: "send", to: CHILD, message: again }])
      const answer = answerOf(bob, again.id)
      assert.strictEqual(answer?.type, "delivery_failed", "bob answered again under the question's key")
      assert.strictEqual(answer?.code, DeliveryCode.ReplyTarget)
    }))
})
