/**
 * A supervisor's reply along a durable question's edge, queued for its child because the child is away, is saved as
 * the question's answer once it is queued (task qqueued): `Questions.stage`'s `queued` hook queues it to the question
 * fiber as its `delivered` hook does for a child that is here. Before, nothing but delivery saved it, and a reply in
 * the mailbox is not delivered through the send stages: the question stayed `awaiting_input` (a `question_get` said
 * so), a restarted broker notified the `questions-v1` supervisor of it again when the child asked again (a second
 * prompt for a question already answered), and a reply that expired in the mailbox was never saved at all.
 *
 * Saved once queued, such a reply cannot be withdrawn (task fixq2, review rvw72 probe 2): its sender's
 * `cancel_message` is refused "cannot be cancelled" naming the question, the reply staying queued. Before, the cancel
 * took it out of the mailbox and was answered `delivered` while the question kept the withdrawn text as its answer,
 * pushed to the child asking again. A supersede of it is refused (E_SUPERSEDE_TARGET: nothing delivered to supersede),
 * and a failure reply (`replyError`), not an answer, is still cancelled. Delivered from the mailbox to the child back,
 * its cancel is refused just the same (its route marked answered as it is flushed, task fixq3).
 *
 * A question's edge is open with its child away only after a durable broker's restart (restored at the start, before
 * the child asks again: C-DQ-6), and only a supervisor without `questions-v1` may reply along it then (one with it is
 * refused `unnotified`), so the world is: q-1 asked and notified, its edge stored, a crash, and on the next broker the
 * supervisor back as a base client while the child is not. On durable brokers over the in-memory network with a
 * memory question store whose state plays the disk. Time passes on the TestClock only as modelled: the store writer's
 * lazy flush (`LAZY_FLUSH`, so the queued reply is stored) and the mailbox's retention (so the reply expires); no
 * sleep is a barrier — a `question_get` or `question_list` is answered through the question fiber's queue, behind the
 * reply's answer.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DEFAULT_MAILBOX_RETENTION_MS } from "../../src/broker/options.ts"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { GROUPS_V1, REPLY_ERROR_V1, SUPERVISOR_V1 } from "../../src/protocol/features.ts"
import { assertDelivered } from "../support/assertions.ts"
import { ackFor, message, send } from "../support/broker.ts"
import { advance, patientClock } from "../support/memory.ts"
import { askedAgainAfterRestart, questionAskedIn, readQuestion, storeEdgeAndCrash, supervisorBack } from "../support/questionRestart.ts"
import { questionAsk, SUP, TOKEN } from "../support/questionWorld.ts"
import type { WireClient } from "../support/wire.ts"

/** The supervisor's features without `questions-v1`: a base client's, with the supervisor channel. */
const BASE = [GROUPS_V1, SUPERVISOR_V1, REPLY_ERROR_V1]

const answerTo = (client: WireClient, requestId: string) =>
  client.next(["question_result", "question_failed"], (frame) => frame.requestId === requestId)

/** How many times `client` was sent the message `id`. */
const timesGot = (client: WireClient, id: string) =>
  client.received().filter((f) => f.type === "message" && f.message.id === id).length

/**
 * q-1 asked and notified, its edge stored, a crash; on the next broker the supervisor back without `questions-v1`
 * (its authority over the child restored) replies along the restored edge while the child is away: queued. `fields`
 * are the reply's send frame's extra fields (a `replyError`).
 */
const queuedWith = (fields: Record<string, unknown> = {}) => Effect.gen(function*() {
  const world = yield* questionAskedIn(undefined)
  yield* storeEdgeAndCrash(world)
  const second = yield* world.start()
  const base = (yield* world.net.session({ sessionId: SUP, name: "supervisor", frame: { features: BASE, ownerToken: TOKEN } })).client
  yield* base.send({ type: "authorize_supervisor", requestId: "restore", childName: "worker", capability: world.capability })
  yield* base.next("supervisor_authorized")
  // The child is back and gone before it asks again: addressable (P34), the restored edge still open (no waiter).
  const back = (yield* world.net.session({ sessionId: "child-worker", name: "worker", frame: world.childFrame })).client
  yield* back.destroy
  yield* base.roundTrip
  const reply = message("go left", { replyTo: "q-1" })
  assertDelivered(yield* send(base, "child-worker", reply, fields), "queued")
  return { ...world, second, base, reply }
})

/** The world of `queuedWith` with a plain reply: the question's answer. */
const queuedWhileAway = queuedWith()

describe("a supervisor's reply to a durable question, queued for its child away", () => {
  it.effect("is saved as the answer once queued: a questions-v1 supervisor's question_get reads it answer_pending", () =>
    patientClock(Effect.gen(function*() {
      const world = yield* queuedWhileAway
      // The supervisor takes its id over with questions-v1; its question_get is answered behind the reply's answer.
      const v1 = (yield* supervisorBack(world)).client
      assert.deepStrictEqual(yield* readQuestion(v1, "g-1"), { state: "answer_pending", answer: "go left" })
      assert.strictEqual(world.questions.records.get("q-1")?.answer, "go left")
    })))

  it.effect("restarted before the child is back: the child asking again gets the reply once and the saved answer, and the questions-v1 supervisor is not notified", () =>
    patientClock(Effect.gen(function*() {
      const world = yield* queuedWhileAway
      const { reply, second } = world
      // Barrier for the save: a questions-v1 session's question_list, behind the reply's answer in the fiber's queue.
      const v1 = (yield* supervisorBack(world)).client
      yield* v1.send({ type: "question_list", requestId: "l-0" })
      assert.strictEqual((yield* answerTo(v1, "l-0")).type, "question_result")
      yield* advance(LAZY_FLUSH)
      yield* second.crash

      // The child back asks again (C-DQ-6): an answered question is pushed to it; one still waiting is notified.
      const { back, again } = yield* askedAgainAfterRestart(world)
      yield* back.send({ type: "question_list", requestId: "l-1" })
      yield* answerTo(back, "l-1")
      assert.strictEqual(timesGot(back, "q-1"), 0, "the questions-v1 supervisor was notified again of the answered question")
      const pushed = yield* again.next("question_answered", (frame) => frame.questionId === "q-1")
      assert.strictEqual(pushed.answer, "go left")
      yield* again.roundTrip
      assert.strictEqual(timesGot(again, reply.id), 1, "the child did not get the queued reply exactly once")
    })))

  it.effect("expired in the mailbox before the child is back: the answer was saved all the same and is pushed to the child asking again", () =>
    patientClock(Effect.gen(function*() {
      const world = yield* queuedWhileAway
      const { childFrame, net, questions, reply } = world
      // Past the mailbox's retention the queued reply expires, undelivered.
      yield* advance(DEFAULT_MAILBOX_RETENTION_MS)
      yield* advance(LAZY_FLUSH)
      const again = (yield* net.session({ sessionId: "child-worker", name: "worker", frame: childFrame })).client
      yield* again.send({ ...questionAsk, requestId: "r-2" })
      assert.strictEqual((yield* answerTo(again, "r-2")).type, "question_result")
      yield* again.roundTrip
      assert.strictEqual(timesGot(again, reply.id), 0, "setup: the queued reply did not expire")
      assert.strictEqual(questions.records.get("q-1")?.answer, "go left", "the supervisor's answer was never saved")
      const pushed = yield* again.next("question_answered", (frame) => frame.questionId === "q-1")
      assert.strictEqual(pushed.answer, "go left")
    })))

  it.effect("its sender's cancel_message is refused as cannot be cancelled, naming the question: the reply stays queued and the child back gets it once, with the saved answer", () =>
    patientClock(Effect.gen(function*() {
      const { base, childFrame, net, questions, reply } = yield* queuedWhileAway
      yield* base.send({ type: "cancel_message", messageId: reply.id })
      const cancelled = yield* ackFor(base, reply.id)
      assert.deepStrictEqual(
        { type: cancelled.type, reason: cancelled.type === "delivery_failed" ? cancelled.reason : undefined },
        { type: "delivery_failed", reason: Reason.cannotCancelAnswer("q-1") },
        "the cancel withdrew a reply saved as a durable question's answer"
      )
      const again = (yield* net.session({ sessionId: "child-worker", name: "worker", frame: childFrame })).client
      yield* again.send({ ...questionAsk, requestId: "r-2" })
      assert.strictEqual((yield* answerTo(again, "r-2")).type, "question_result")
      const pushed = yield* again.next("question_answered", (frame) => frame.questionId === "q-1")
      assert.strictEqual(pushed.answer, "go left")
      yield* again.roundTrip
      assert.strictEqual(timesGot(again, reply.id), 1, "the child did not get the queued reply exactly once")
      assert.isFalse(
        again.received().some((f) => f.type === "message_control"),
        "the child was sent a control for the reply"
      )
      assert.strictEqual(questions.records.get("q-1")?.answer, "go left")
    })))

  it.effect("delivered from the mailbox to the child back, its sender's cancel_message is still refused naming the question: no control to the child", () =>
    patientClock(Effect.gen(function*() {
      const { base, childFrame, net, questions, reply } = yield* queuedWhileAway
      const again = (yield* net.session({ sessionId: "child-worker", name: "worker", frame: childFrame })).client
      yield* again.next("message", (frame) => frame.message.id === reply.id)
      yield* base.send({ type: "cancel_message", messageId: reply.id })
      const cancelled = yield* ackFor(base, reply.id)
      assert.deepStrictEqual(
        { type: cancelled.type, reason: cancelled.type === "delivery_failed" ? cancelled.reason : undefined },
        { type: "delivery_failed", reason: Reason.cannotCancelAnswer("q-1") },
        "the cancel of a flushed reply saved as a durable question's answer was not refused"
      )
      yield* again.roundTrip
      assert.isFalse(
        again.received().some((f) => f.type === "message_control"),
        "the child was told to withdraw the reply that is its answer"
      )
      assert.strictEqual(questions.records.get("q-1")?.answer, "go left")
    })))

  it.effect("a send superseding it is refused E_SUPERSEDE_TARGET: the reply stays queued for the child back", () =>
    patientClock(Effect.gen(function*() {
      const { base, childFrame, net, reply } = yield* queuedWhileAway
      const replacing = message("go right", { supersedes: reply.id })
      const refused = yield* send(base, "child-worker", replacing)
      assert.deepStrictEqual(
        { type: refused.type, code: refused.type === "delivery_failed" ? refused.code : undefined },
        { type: "delivery_failed", code: DeliveryCode.SupersedeTarget }
      )
      const again = (yield* net.session({ sessionId: "child-worker", name: "worker", frame: childFrame })).client
      yield* again.roundTrip
      assert.deepStrictEqual([timesGot(again, reply.id), timesGot(again, replacing.id)], [1, 0])
    })))

  it.effect("a failure reply (replyError), not an answer, is still withdrawn by its sender's cancel_message", () =>
    patientClock(Effect.gen(function*() {
      const { base, childFrame, net, questions, reply } = yield* queuedWith({ replyError: "turn failed" })
      yield* base.send({ type: "cancel_message", messageId: reply.id })
      assert.strictEqual((yield* ackFor(base, reply.id)).type, "delivered", "the cancel of a failure reply was refused")
      const again = (yield* net.session({ sessionId: "child-worker", name: "worker", frame: childFrame })).client
      yield* again.roundTrip
      assert.strictEqual(timesGot(again, reply.id), 0, "the withdrawn failure reply was delivered")
      assert.strictEqual(questions.records.get("q-1")?.answer, undefined)
    })))
})
