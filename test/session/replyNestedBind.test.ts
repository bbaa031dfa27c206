/**
 * A reply the reader path takes (`takeAtRead`) resumes the waiting wait synchronously
 * inside `slot.route`; a failed-turn reply (C-DQ-8) rebinds there, and the binding's look-back runs BEFORE the
 * outer `admission.commit`. A copy of that same reply waiting in the client is then taken by the nested look-back
 * too, unless `takeAtRead` leaves a copy of the reply it is routing to the message fiber (review revbn BN1: the
 * one reply was answered twice, two "matched reply waiter" acknowledgements for one read); the copy reaches the
 * message fiber as a duplicate.
 * The copy got into the buffer while the id was remembered (seen); the dedupe window (500 ms here, an hour or
 * 1000 messages by default) then forgot it before the next copy was read.
 * The host journal's one-hour checkpoint (an `Effect.sleep` on the TestClock) is the slow save being modelled,
 * which holds the message fiber at its first message; it is never waited out as a barrier.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { C, durableWaitGeneration, inboundMessage, receiptsFor as receiptsOf, settle, SUP } from "./support.ts"

const QUESTION_ID = "q-1"

describe("a look-back nested inside takeAtRead's route", () => {
  it.effect("a copy waiting in the client is not answered together with the copy read now", () =>
    Effect.gen(function*() {
      const { client, wait } = yield* durableWaitGeneration(
        { checkpoint: () => Effect.as(Effect.sleep("1 hour"), true), undelivered: Effect.succeed([]) },
        { inboundDedupe: { windowMs: 500 } }
      )
      // The message fiber is held by m1's checkpoint for the whole probe.
      yield* client.push(inboundMessage(C, "m1", "first"))
      yield* settle
      const waiting = yield* Effect.forkChild(wait(QUESTION_ID))
      yield* settle
      const failed = { ...inboundMessage(SUP, "failed", "", { replyTo: QUESTION_ID }), replyError: "the turn failed" }
      // Read live: taken at read; the wait goes on (C-DQ-8) with a fresh waiter.
      yield* client.pushReadFirst(failed)
      yield* settle
      // A copy read while the id is remembered: not taken, it waits behind m1 (the fiber will call it a duplicate).
      yield* client.pushReadFirst(failed)
      yield* settle
      assert.deepStrictEqual(receiptsOf(client, "failed"), ["receiver_received", "acknowledged: matched reply waiter"])
      // The dedupe window forgets the id (m1 is still checkpointing).
      yield* TestClock.adjust("1 second")
      yield* settle
      // One more copy, read live: taken (the id was forgotten) — once.
      yield* client.pushReadFirst(failed)
      yield* settle
      const acks = receiptsOf(client, "failed").filter((status) => status === "acknowledged: matched reply waiter")
      assert.strictEqual(acks.length, 2, `one read answered once: ${JSON.stringify(receiptsOf(client, "failed"))}`)
      assert.isUndefined(waiting.pollUnsafe())
      yield* Fiber.interrupt(waiting)
    }))
})
