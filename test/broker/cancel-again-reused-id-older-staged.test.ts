/**
 * A repeat cancel under a reused id, an older message under the id still staged (`replace` mode) for another
 * recipient: the first cancel withdrew the id's newest message — staged for a second recipient (case 1), or waiting
 * in the mailbox for an away one (case 2) — and a repeat (its first answer lost, say) must be answered from that
 * message's fate and withdraw nothing else (docs/protocol.md, cancel under a reused id; review rvstg probe 1). The
 * id's replay record, which holds its last send, is the newest's, cancelled, not the staged message's: the repeat
 * is recognised by it (Cancels.namedPastStaged). Before, with the mailbox empty, the repeat went to
 * ReplaceStaging.withdraw, which took the older staged message (for b), one its sender never withdrew. The replay
 * bound (`replayRecords: 1`) and a send between make the second send under m0 a new message, not a reuse refused.
 * On a Router driven by hand, the clock in the test's hands; no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DELIVERY_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { recordedSessions } from "../support/controlWorld.ts"
import { handRouter } from "../support/handRouter.ts"

const START = 1_000_000
const WINDOW_MS = 1_000
const replace = { delivery: "queue", queueMode: "replace", threadId: "t" }

describe("a repeat cancel under a reused id, an older message under it staged for b", () => {
  it.effect("after the newest (staged for z) was withdrawn, is answered delivered and b is handed the older one", () =>
    Effect.gen(function*() {
      const clock = { now: START }
      const hand = yield* handRouter({ replaceWindow: WINDOW_MS, replayRecords: 1 }, () => clock.now)
      const { connect, framesOf } = recordedSessions(hand)
      const b = connect(1, "b", [])
      const z = connect(2, "z", [])
      const d = connect(3, "d", [DELIVERY_V1])
      const m0 = message("m0")
      hand.batch(d, [{ type: "send", to: "b", message: { ...m0, content: { text: "for b" } }, ...replace }])
      hand.batch(d, [{ type: "send", to: "z", message: message("other") }])
      clock.now += 1
      hand.batch(d, [{ type: "send", to: "z", message: { ...m0, content: { text: "for z" } }, ...replace }])
      const staged = framesOf(d).filter((f) => f.messageId === m0.id).map((f) => f.type)
      assert.deepStrictEqual(staged, ["delivery_queued", "delivery_queued"], "setup: both sends under m0 were not staged")
      hand.batch(d, [{ type: "cancel_message", messageId: m0.id }])
      assert.strictEqual(hand.router.staging.size, 1, "setup: the first cancel did not withdraw exactly one staged message")
      const from = framesOf(d).length
      hand.batch(d, [{ type: "cancel_message", messageId: m0.id }])
      const answer = framesOf(d).slice(from).filter((f) => f.messageId === m0.id).map((f) => f.type)
      assert.deepStrictEqual(answer, ["delivered"], "the repeat was not answered delivered (the newest's fate: cancelled)")
      clock.now += WINDOW_MS
      hand.router.staging.flushDue(clock.now)
      const under = (peer: typeof b) => framesOf(peer).filter((f) => f.type === "message" && f.message?.id === m0.id).length
      assert.deepStrictEqual({ b: under(b), z: under(z) }, { b: 1, z: 0 }, "the repeat cancel withdrew the older staged message (for b), which its sender never withdrew")
    }))

  it.effect("after the newest (waiting in the mailbox for away z) was cancelled there, is answered delivered and b is handed the older one", () =>
    Effect.gen(function*() {
      const clock = { now: START }
      const hand = yield* handRouter({ replaceWindow: WINDOW_MS, replayRecords: 1 }, () => clock.now)
      const { connect, framesOf } = recordedSessions(hand)
      const b = connect(1, "b", [])
      const zAway = connect(2, "z", [])
      hand.close(zAway)
      const d = connect(3, "d", [DELIVERY_V1])
      const m0 = message("m0")
      hand.batch(d, [{ type: "send", to: "b", message: { ...m0, content: { text: "for b" } }, ...replace }])
      hand.batch(d, [{ type: "send", to: "b", message: message("other") }])
      clock.now += 1
      hand.batch(d, [{ type: "send", to: "z", message: { ...m0, content: { text: "for z" } } }])
      const setup = framesOf(d).filter((f) => f.messageId === m0.id).map((f) => `${f.type} ${f.delivery ?? ""}`)
      assert.deepStrictEqual(setup, ["delivery_queued ", "delivered queued"], "setup: m0 for b was not staged, or m0 for z not queued")
      hand.batch(d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(
        { mailbox: hand.router.heldMail()?.messages ?? 0, staged: hand.router.staging.size },
        { mailbox: 0, staged: 1 },
        "setup: the first cancel did not take m0 for z out of the mailbox, leaving m0 for b staged"
      )
      const from = framesOf(d).length
      hand.batch(d, [{ type: "cancel_message", messageId: m0.id }])
      const answer = framesOf(d).slice(from).filter((f) => f.messageId === m0.id).map((f) => f.type)
      assert.deepStrictEqual(answer, ["delivered"], "the repeat was not answered delivered (the newest's fate: cancelled)")
      clock.now += WINDOW_MS
      hand.router.staging.flushDue(clock.now)
      const forB = framesOf(b).filter((f) => f.type === "message" && f.message?.id === m0.id).length
      assert.strictEqual(forB, 1, "the repeat cancel withdrew the older staged message (for b), which its sender never withdrew")
    }))
  it.effect("after the newest (delivered to z) was cancelled along its route and its record left, is answered delivered and b is handed the older one", () =>
    Effect.gen(function*() {
      const clock = { now: START }
      const hand = yield* handRouter({ replaceWindow: WINDOW_MS, replayRecords: 1 }, () => clock.now)
      const { connect, framesOf } = recordedSessions(hand)
      const b = connect(1, "b", [])
      const z = connect(2, "z", [])
      const d = connect(3, "d", [DELIVERY_V1])
      const m0 = message("m0")
      hand.batch(d, [{ type: "send", to: "b", message: { ...m0, content: { text: "for b" } }, ...replace }])
      hand.batch(d, [{ type: "send", to: "z", message: message("other") }])
      clock.now += 1
      hand.batch(d, [{ type: "send", to: "z", message: { ...m0, content: { text: "for z" } } }])
      const setup = framesOf(d).filter((f) => f.messageId === m0.id).map((f) => `${f.type} ${f.delivery ?? ""}`)
      assert.deepStrictEqual(setup, ["delivery_queued ", "delivered socket_delivered"], "setup: m0 for b was not staged, or m0 for z not delivered")
      hand.batch(d, [{ type: "cancel_message", messageId: m0.id }])
      const control = framesOf(z).filter((f) => f.type === "message_control" && f.control?.messageId === m0.id).length
      assert.strictEqual(control, 1, "setup: the first cancel did not go along m0's route to z")
      // The replay bound (one record) pushes m0's record out; its route, cancelled, stays.
      hand.batch(d, [{ type: "send", to: "z", message: message("another") }])
      const from = framesOf(d).length
      hand.batch(d, [{ type: "cancel_message", messageId: m0.id }])
      const answer = framesOf(d).slice(from).filter((f) => f.messageId === m0.id).map((f) => f.type)
      assert.deepStrictEqual(answer, ["delivered"], "the repeat was not answered delivered (the newest's fate: cancelled)")
      clock.now += WINDOW_MS
      hand.router.staging.flushDue(clock.now)
      const forB = framesOf(b).filter((f) => f.type === "message" && f.message?.id === m0.id).length
      assert.strictEqual(forB, 1, "the repeat cancel withdrew the older staged message (for b), which its sender never withdrew")
    }))
})
