/**
 * A mailbox cancel rewrites its message's replay record only when that record is the queued mail's
 * (DeliveryRecords.rewrite's `owner`, `isRecordOfMail`). A `replace`-staged message whose `supersedes` was settled
 * while it waited is handed over without that field (Send.ts `withoutSupersedes`, review revbt bt1) while its
 * record keeps the send's fingerprint, `supersedes` included: it is still found its record's. d's m1 (supersedes
 * m0, staged) is delivered to b after d cancelled m0; b's connection drops unconfirmed, m1 goes back to the
 * mailbox, and d cancels m1 there: m1's record says cancelled, so d's retry of m1 is answered E_DELIVERY_CANCELLED
 * (review rrmk probe 4). On a Router driven by hand, the clock in the test's hands; no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DELIVERY_V1, RECEIVED_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { recordedSessions } from "../support/controlWorld.ts"
import { handRouter } from "../support/handRouter.ts"

const WINDOW_MS = 1_000
const replace = { delivery: "queue", queueMode: "replace", threadId: "status" }

describe("a mailbox cancel of a staged message handed over without its settled supersedes", () => {
  it.effect("rewrites its replay record: a retry of it is answered cancelled, not delivered", () =>
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
      assert.strictEqual(m1ToB.length, 1, "m1 was not delivered to b: the probe sets up nothing")
      assert.strictEqual(m1ToB[0]?.message?.supersedes, undefined, "m1 was delivered naming m0: the probe sets up nothing")
      hand.closeAbandoning(b)
      // Back in the mailbox: m1, and m0's cancelled copy kept for b-1, which read it.
      const held = router.heldMail()?.messages ?? 0
      assert.strictEqual(held, 2, "m1 did not go back to the mailbox: the probe sets up nothing")
      const from = framesOf(d).length
      batch(d, [{ type: "cancel_message", messageId: m1.id }])
      batch(d, [{ type: "send", to: "b", message: m1, ...replace }])
      const answers = framesOf(d).slice(from).filter((f) => f.messageId === m1.id).map((f) => f.type === "delivery_failed" ? `${f.type} ${f.code}` : f.type)
      assert.deepStrictEqual(answers, ["delivered", "delivery_failed E_DELIVERY_CANCELLED"], "d's retry of the cancelled m1 was not answered cancelled")
    }))
})
