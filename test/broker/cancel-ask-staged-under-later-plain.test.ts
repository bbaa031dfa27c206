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
import { stagedUnderOneId } from "../support/stagedUnderOneId.ts"

describe("the newest staged ask under a reused id", () => {
  it.effect("cancel_ask withdraws the staged ask (for b) under a plain message staged later (for z): b is never asked, z gets its message", () =>
    Effect.gen(function*() {
      const { b, z, stageTwo, answersUnderM0, cancelM0, givenM0, closeWindow } = yield* stagedUnderOneId()
      stageTwo({ to: "b", text: "ask b", expectsReply: true, staged: true }, { to: "z", text: "plain for z", staged: true })
      assert.deepStrictEqual(answersUnderM0(), ["delivery_queued ", "delivery_queued "], "setup: both sends under m0 were not staged")
      cancelM0("cancel_ask")
      closeWindow()
      assert.strictEqual(givenM0(b), 0, "the ask its asker withdrew by cancel_ask was delivered to b")
      assert.strictEqual(givenM0(z), 1, "the plain message for z, not an ask, was not handed over")
    }))

  it.effect("stagedAsk names the ask staged last (for z), not the first staged (for b)", () =>
    Effect.gen(function*() {
      const { z, d, m0, hand, stageTwo, answersUnderM0 } = yield* stagedUnderOneId()
      stageTwo({ to: "b", text: "ask b", expectsReply: true, staged: true }, { to: "z", text: "ask z", expectsReply: true, staged: true })
      assert.deepStrictEqual(answersUnderM0(), ["delivery_queued ", "delivery_queued "], "setup: both asks under m0 were not staged")
      const senderKey = d.session?.key ?? ""
      const zKey = z.session?.key
      assert.isDefined(zKey, "setup: z is not registered")
      assert.strictEqual(hand.router.staging.stagedAsk(senderKey, m0.id)?.mail.targetKey, zKey, "stagedAsk did not name the newest staged ask's recipient (z)")
    }))
})
