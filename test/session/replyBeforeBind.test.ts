/**
 * C-ORD-32 for a reply read before its waiter was bound: a durable
 * question's wait (`waitDurably`) that binds its waiter after the answer was
 * read. Binding takes the answer from the client's unhandled messages at
 * once (the client's look-back), not when the message fiber reaches it
 * behind a slow host-journal checkpoint — unless that fiber is at it already,
 * or the hand-off holds it: then it is not taken at all (never both answered
 * and handed to the host); the fiber at it answers the wait itself when the
 * wait bound during a checkpoint that then saved nothing. The slow checkpoint and the refusing host are the
 * faults modelled (an `Effect.sleep` on the TestClock, a failing `deliver`),
 * never barriers: the answers are checked before any clock advance.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Queue } from "effect"
import { TestClock } from "effect/testing"
import type { InboundJournal } from "../../src/session/Host.ts"
import { C, durableWaitGeneration, inboundMessage, receiptsFor as receiptsOf, settle, SUP } from "./support.ts"

/** How long the host journal takes to checkpoint each message, when it has one. */
const CHECKPOINT = "2 seconds"
const QUESTION_ID = "q-1"

/**
 * `durableWaitGeneration` with a host journal that takes `CHECKPOINT` per message (`slow`; `checkpointed`: the
 * ids it saved, in order) — and then fails to save it (`failing`) — or the recording host's own; `wait` is the
 * durable wait on QUESTION_ID.
 */
const generationWith = (slow: boolean, failing = false) =>
  Effect.gen(function*() {
    const checkpointed: Array<string> = []
    const journal: InboundJournal | undefined = !slow ? undefined : {
      checkpoint: (record) =>
        Effect.andThen(
          Effect.sleep(CHECKPOINT),
          failing ? Effect.fail("disk full") : Effect.sync(() => void checkpointed.push(record.message.id))
        ),
      undelivered: Effect.succeed([])
    }
    const { client, handled, host, wait } = yield* durableWaitGeneration(journal)
    return { client, host, checkpointed, handled, wait: wait(QUESTION_ID) }
  })

const answer = inboundMessage(SUP, "answer", "Stable", { replyTo: QUESTION_ID })

describe("C-ORD-32 a reply read before its waiter was bound", () => {
  it.effect("waiting behind a slow checkpoint, it answers the wait as the wait binds; it is not handed to the host and is acknowledged once", () =>
    Effect.gen(function*() {
      const { checkpointed, client, handled, host, wait } = yield* generationWith(true)
      yield* client.push(inboundMessage(C, "m1", "first"))
      yield* settle
      // Read while no one waits: it waits in the client behind m1, whose checkpoint holds the message fiber.
      yield* client.push(answer)
      yield* settle
      assert.deepStrictEqual(receiptsOf(client, "answer"), [], "not admitted: behind m1")
      const waiting = yield* Effect.forkChild(wait)
      yield* settle
      const done = waiting.pollUnsafe()
      assert.isDefined(done, "the wait ended with no clock advance")
      const result = yield* Fiber.join(waiting)
      assert.strictEqual(result._tag === "Reply" ? result.reply.message.content.text : result._tag, "Stable")
      assert.deepStrictEqual(checkpointed, [], "answered while m1 is still checkpointing")
      assert.deepStrictEqual(receiptsOf(client, "answer"), ["receiver_received", "acknowledged: matched reply waiter"])
      assert.deepStrictEqual(handled, ["answer"], "taken from the client's unhandled messages, it is marked handled there (confirmed under confirmWhenHandled)")
      // m1 still reaches the host; the answer never does, nor is answered again.
      yield* TestClock.adjust(CHECKPOINT)
      yield* settle
      yield* TestClock.adjust("1 minute")
      yield* settle
      assert.deepStrictEqual(checkpointed, ["m1"], "the answer is not checkpointed")
      assert.deepStrictEqual(host.attempts, ["m1"], "the answer never went to the host")
      assert.deepStrictEqual(receiptsOf(client, "answer"), ["receiver_received", "acknowledged: matched reply waiter"], "one of each, in that order")
    }))

  it.effect("a failed-turn reply read twice before the wait bound is taken once: the wait binds again (C-DQ-8), and its binding leaves the copy to the message fiber, a duplicate", () =>
    Effect.gen(function*() {
      const { client, wait } = yield* generationWith(true)
      yield* client.push(inboundMessage(C, "m1", "first"))
      yield* settle
      const failed = { ...inboundMessage(SUP, "failed", "", { replyTo: QUESTION_ID }), replyError: "the turn failed" }
      yield* client.push(failed)
      yield* client.pushReadFirst(failed)
      yield* settle
      // The binding takes the first: it ends the wait, which binds a fresh waiter (the wait goes on, C-DQ-8), and
      // that binding looks back too: the copy of a reply admitted already is not an answer to take.
      const waiting = yield* Effect.forkChild(wait)
      yield* settle
      assert.isUndefined(waiting.pollUnsafe(), "a failed turn is not an answer: the wait goes on")
      assert.deepStrictEqual(receiptsOf(client, "failed"), ["receiver_received", "acknowledged: matched reply waiter"], "taken once")
      yield* TestClock.adjust(CHECKPOINT)
      yield* settle
      assert.deepStrictEqual(receiptsOf(client, "failed"), [
        "receiver_received",
        "acknowledged: matched reply waiter",
        "acknowledged: duplicate message id suppressed"
      ], "the copy reached the message fiber, which answers it as a duplicate")
      yield* client.push(answer)
      yield* settle
      const result = yield* Fiber.join(waiting)
      assert.strictEqual(result._tag === "Reply" ? result.reply.message.content.text : result._tag, "Stable")
    }))

  it.effect("one the message fiber is at already (past the waiter's check, in its checkpoint) is left to it, and so is a copy read then: handed to the host once, the wait not answered", () =>
    Effect.gen(function*() {
      const { checkpointed, client, host, wait } = yield* generationWith(true)
      yield* client.push(answer)
      yield* settle
      // The fiber found no waiter for it and is checkpointing it for the host.
      const waiting = yield* Effect.forkChild(wait)
      yield* settle
      assert.isUndefined(waiting.pollUnsafe(), "the binding did not take the answer from under the message fiber")
      // The broker's copy once more, read while the fiber is still in the answer's checkpoint (not yet held for the
      // host): it is the fiber's too — it joins the hand-off — not a reply for the now live wait.
      yield* client.pushReadFirst(answer)
      yield* settle
      assert.isUndefined(waiting.pollUnsafe(), "the copy did not answer the wait either")
      yield* TestClock.adjust(CHECKPOINT)
      yield* settle
      assert.deepStrictEqual(checkpointed, ["answer"])
      assert.deepStrictEqual(host.attempts, ["answer"], "handed to the host once")
      assert.deepStrictEqual(receiptsOf(client, "answer"), [
        "receiver_received",
        "acknowledged: accepted by receiver",
        "acknowledged: duplicate message id suppressed"
      ], "the copy joined the hand-off")
      assert.isUndefined(waiting.pollUnsafe(), "never also the wait's answer")
      yield* Fiber.interrupt(waiting)
    }))

  it.effect("one held for a refusing host: a copy read once the wait is bound joins the hand-off — the wait is not answered, the host gets it once (review revbj BJ2)", () =>
    Effect.gen(function*() {
      const { client, host, wait } = yield* generationWith(false)
      host.failDeliveries = 1_000
      yield* client.push(answer)
      yield* settle
      assert.isAbove(host.attempts.length, 0, "handed to the host, which refuses it: the hand-off holds it")
      const waiting = yield* Effect.forkChild(wait)
      yield* settle
      assert.isUndefined(waiting.pollUnsafe(), "binding took nothing: the hand-off holds the answer")
      // The broker's copy once more (given again after a reconnect, say), read while the wait is live.
      yield* client.pushReadFirst(answer)
      yield* settle
      assert.isUndefined(waiting.pollUnsafe(), "the copy joined the hand-off: it does not answer the wait too")
      assert.deepStrictEqual(receiptsOf(client, "answer"), ["receiver_received"])
      host.failDeliveries = 0
      yield* TestClock.adjust("1 minute")
      yield* settle
      assert.deepStrictEqual((yield* Queue.clear(host.inbox)).map((inbound) => inbound.message.id), ["answer"], "the host took it once")
      assert.deepStrictEqual(receiptsOf(client, "answer"), [
        "receiver_received",
        "acknowledged: accepted by receiver",
        "acknowledged: duplicate message id suppressed"
      ], "taken once; the joined copy answered as a duplicate then")
      assert.isUndefined(waiting.pollUnsafe(), "still no answer for the wait")
      yield* Fiber.interrupt(waiting)
    }))

  it.effect("one the message fiber is checkpointing as the wait binds, whose checkpoint then fails (nothing saved it), answers the wait: never handed to the host", () =>
    Effect.gen(function*() {
      const { client, handled, host, wait } = yield* generationWith(true, true)
      yield* client.push(answer)
      yield* settle
      // The fiber found no waiter for it and is checkpointing it; the binding leaves it to the fiber.
      const waiting = yield* Effect.forkChild(wait)
      yield* settle
      assert.isUndefined(waiting.pollUnsafe(), "the binding did not take the answer from under the message fiber")
      // The checkpoint fails: nothing saved the answer, and the wait is bound now.
      yield* TestClock.adjust(CHECKPOINT)
      yield* settle
      const done = waiting.pollUnsafe()
      assert.isDefined(done, "the wait has its answer")
      const result = yield* Fiber.join(waiting)
      assert.strictEqual(result._tag === "Reply" ? result.reply.message.content.text : result._tag, "Stable")
      assert.deepStrictEqual(receiptsOf(client, "answer"), ["receiver_received", "acknowledged: matched reply waiter"])
      assert.deepStrictEqual(handled, ["answer"], "it leaves the client as handled")
      yield* TestClock.adjust("1 minute")
      yield* settle
      assert.deepStrictEqual(host.attempts, [], "the answer never went to the host")
      // The broker's copy, later: a duplicate.
      yield* client.push(answer)
      yield* settle
      assert.deepStrictEqual(receiptsOf(client, "answer"), [
        "receiver_received",
        "acknowledged: matched reply waiter",
        "acknowledged: duplicate message id suppressed"
      ])
      assert.deepStrictEqual(host.attempts, [], "nor its copy")
    }))
})
