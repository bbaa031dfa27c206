/**
 * Under a reused id, an ask staged in `replace` mode for b and, later, a message under the same id staged too:
 * `cancel_ask` names the sender's ask, so it withdraws the newest staged ASK under the id, whatever plain message was
 * staged after it (docs/protocol.md: "`cancel_ask` on a staged ask does the same"; review rvstg probe 2). Before,
 * ReplaceStaging.withdraw(asksOnly) looked at the newest under the id only, found the plain message, and withdrew
 * nothing: b was asked when the window closed. ReplaceStaging.stagedAsk, which a `question_ask` reads to refuse the
 * id of an accepted ask (Questions.ts), agrees: of two asks staged under one id, the newest. The replay bound
 * (`replayRecords: 1`) and a send between make each later send under m0 a new message, not a reuse refused. On a
 * Router driven by hand, the clock in the test's hands; no sleep.
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

describe("the newest staged ask under a reused id", () => {
  it.effect("cancel_ask withdraws the staged ask (for b) under a plain message staged later (for z): b is never asked, z gets its message", () =>
    Effect.gen(function*() {
      const clock = { now: START }
      const hand = yield* handRouter({ replaceWindow: WINDOW_MS, replayRecords: 1 }, () => clock.now)
      const { connect, framesOf } = recordedSessions(hand)
      const b = connect(1, "b", [])
      const z = connect(2, "z", [])
      const d = connect(3, "d", [DELIVERY_V1])
      const m0 = message("m0")
      hand.batch(d, [{ type: "send", to: "b", message: { ...m0, content: { text: "ask b" }, expectsReply: true }, ...replace }])
      hand.batch(d, [{ type: "send", to: "z", message: message("other") }])
      clock.now += 1
      hand.batch(d, [{ type: "send", to: "z", message: { ...m0, content: { text: "plain for z" } }, ...replace }])
      const staged = framesOf(d).filter((f) => f.messageId === m0.id).map((f) => f.type)
      assert.deepStrictEqual(staged, ["delivery_queued", "delivery_queued"], "setup: both sends under m0 were not staged")
      hand.batch(d, [{ type: "cancel_ask", messageId: m0.id }])
      clock.now += WINDOW_MS
      hand.router.staging.flushDue(clock.now)
      const asked = framesOf(b).filter((f) => f.type === "message" && f.message?.id === m0.id).length
      assert.strictEqual(asked, 0, "the ask its asker withdrew by cancel_ask was delivered to b")
      const plain = framesOf(z).filter((f) => f.type === "message" && f.message?.id === m0.id).length
      assert.strictEqual(plain, 1, "the plain message for z, not an ask, was not handed over")
    }))

  it.effect("stagedAsk names the ask staged last (for z), not the first staged (for b)", () =>
    Effect.gen(function*() {
      const clock = { now: START }
      const hand = yield* handRouter({ replaceWindow: WINDOW_MS, replayRecords: 1 }, () => clock.now)
      const { connect, framesOf } = recordedSessions(hand)
      connect(1, "b", [])
      const z = connect(2, "z", [])
      const d = connect(3, "d", [DELIVERY_V1])
      const m0 = message("m0")
      hand.batch(d, [{ type: "send", to: "b", message: { ...m0, content: { text: "ask b" }, expectsReply: true }, ...replace }])
      hand.batch(d, [{ type: "send", to: "z", message: message("other") }])
      clock.now += 1
      hand.batch(d, [{ type: "send", to: "z", message: { ...m0, content: { text: "ask z" }, expectsReply: true }, ...replace }])
      const staged = framesOf(d).filter((f) => f.messageId === m0.id).map((f) => f.type)
      assert.deepStrictEqual(staged, ["delivery_queued", "delivery_queued"], "setup: both asks under m0 were not staged")
      const senderKey = d.session?.key ?? ""
      const zKey = z.session?.key
      assert.isDefined(zKey, "setup: z is not registered")
      assert.strictEqual(hand.router.staging.stagedAsk(senderKey, m0.id)?.mail.targetKey, zKey, "stagedAsk did not name the newest staged ask's recipient (z)")
    }))
})
