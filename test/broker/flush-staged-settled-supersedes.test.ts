/**
 * A mailbox flush rewrites its message's replay record `socket_delivered` when that record is the flushed mail's
 * (DeliveryRecords.rewrite's `owner`, task flushrw), also for a `replace`-staged message handed over without the
 * `supersedes` its sender settled while it waited (Send.ts `withoutSupersedes`), whose record keeps the send's
 * fingerprint, `supersedes` included. d's m1 (supersedes m0, staged) is delivered to b-1 after d cancelled m0; b's
 * connection drops unconfirmed, m1 goes back to the mailbox, b-1 returns and is flushed m1: a retry of m1 is then
 * answered delivered to the socket, not `queued`. On a Router driven by hand, the clock in the test's hands; no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DELIVERY_V1, RECEIVED_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { recordedSessions } from "../support/controlWorld.ts"
import { handRouter } from "../support/handRouter.ts"

const WINDOW_MS = 1_000
const replace = { delivery: "queue", queueMode: "replace", threadId: "status" }

describe("a mailbox flush of a staged message handed over without its settled supersedes", () => {
  it.effect("rewrites its own replay record: a retry of it is answered socket_delivered, not queued", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const hand = yield* handRouter({ replaceWindow: WINDOW_MS }, () => clock.now)
      const { batch, router } = hand
      const { connect, framesOf } = recordedSessions(hand)
      const b = connect(1, "b", [RECEIVED_V1], "b-1")
      const d = connect(2, "d", [DELIVERY_V1])
      const m0 = message("status: building")
      const m1 = message("status: done", { supersedes: m0.id })
      batch(d, [{ type: "send", to: "b", message: m0 }])
      batch(d, [{ type: "send", to: "b", message: m1, ...replace }])
      batch(d, [{ type: "cancel_message", messageId: m0.id }])
      clock.now += WINDOW_MS
      router.staging.flushDue(clock.now)
      const m1ToB = framesOf(b).filter((f) => f.type === "message" && f.message?.id === m1.id)
      assert.strictEqual(m1ToB.length, 1, "m1 was not delivered to b: the test sets up nothing")
      assert.strictEqual(m1ToB[0]?.message?.supersedes, undefined, "m1 was delivered naming m0: the test sets up nothing")
      hand.closeAbandoning(b)
      assert.strictEqual(router.heldMail()?.messages ?? 0, 2, "m1 did not go back to the mailbox: the test sets up nothing")
      const back = connect(3, "b", [RECEIVED_V1], "b-1")
      assert.strictEqual(framesOf(back).filter((f) => f.type === "message" && f.message?.id === m1.id).length, 1, "b-1's return was not flushed m1: the test sets up nothing")
      const from = framesOf(d).length
      batch(d, [{ type: "send", to: "b", message: m1, ...replace }])
      const answers = framesOf(d).slice(from).filter((f) => f.messageId === m1.id).map((f) => `${f.type} ${f.delivery ?? f.code ?? ""}`.trimEnd())
      assert.deepStrictEqual(answers, ["delivered socket_delivered"], "d's retry of the flushed m1 was not answered delivered to the socket")
    }))
})
