/**
 * Under a reused id, a supersede that withdrew an older message's route does not make a cancel of the newer message
 * waiting in the mailbox a repeat: the cancel names the sender's newest under the id (Cancels.ts `named`; stop 71),
 * which its sender never withdrew, so it is cancelled there (task stgnew limit 2). The replay bound
 * (`replayRecords: 1`) and sends between push m0's record out, so the second send under m0 is a new message. On a
 * Router driven by hand, the clock in the test's hands; no sleep. A probe of task stgnew's limit 2 that passed on
 * main's head too (the supersede, found by the route, leaves the later send's record: RECORD_LATER), kept as a guard.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { recordedSessions } from "../support/controlWorld.ts"
import { handRouter } from "../support/handRouter.ts"

const START = 1_000_000

describe("a cancel under a reused id after a supersede withdrew the older route", () => {
  it.effect("cancels the newer message waiting in the mailbox, answered delivered", () =>
    Effect.gen(function*() {
      const clock = { now: START }
      const hand = yield* handRouter({ replayRecords: 1 }, () => clock.now)
      const { connect, framesOf } = recordedSessions(hand)
      const b = connect(1, "b", [])
      const zAway = connect(2, "z", [])
      hand.close(zAway)
      const d = connect(3, "d", [])
      const m0 = message("m0")
      hand.batch(d, [{ type: "send", to: "b", message: { ...m0, content: { text: "for b" } } }])
      hand.batch(d, [{ type: "send", to: "b", message: message("other") }])
      clock.now += 1
      hand.batch(d, [{ type: "send", to: "z", message: { ...m0, content: { text: "for z" } } }])
      hand.batch(d, [{ type: "send", to: "b", message: message("other 2") }])
      const m1 = message("m1", { supersedes: m0.id })
      hand.batch(d, [{ type: "send", to: "b", message: m1 }])
      const setup = framesOf(d).filter((f) => f.messageId === m0.id || f.messageId === m1.id).map((f) => `${f.type} ${f.delivery ?? f.code ?? ""}`)
      assert.deepStrictEqual(setup, ["delivered socket_delivered", "delivered queued", "delivered socket_delivered"], "setup: m0 for b, m0 for z and m1 were not taken")
      assert.strictEqual(framesOf(b).filter((f) => f.type === "message_control" && f.control?.action === "supersede").length, 1, "setup: b was not told m0 superseded")
      const from = framesOf(d).length
      hand.batch(d, [{ type: "cancel_message", messageId: m0.id }])
      const answer = framesOf(d).slice(from).filter((f) => f.messageId === m0.id).map((f) => f.type === "delivery_failed" ? `${f.type} ${f.reason}` : f.type)
      assert.deepStrictEqual(answer, ["delivered"], "the cancel of m0, for z waiting, was answered from the older message's supersede")
      const zBack = connect(4, "z", [])
      const forZ = framesOf(zBack).filter((f) => f.type === "message" && f.message?.id === m0.id).length
      assert.strictEqual(forZ, 0, "m0 for z was not cancelled in the mailbox")
    }))
})
