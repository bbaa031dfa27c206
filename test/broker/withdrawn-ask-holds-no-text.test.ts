/**
 * Review revdg DG2 (memory): fixdc made a withdrawal name the ask it withdrew by holding the ask's `Message`
 * (`Withdrawal.ask`), so every remembered withdrawal kept that ask's whole text alive — up to MAX_WITHDRAWN (4,096)
 * ids × MAX_WITHDRAWN_PER_KEY (4), for up to 30 days, each message up to a frame (1 MiB). Now it holds an
 * `AskIdentity` (AnsweredAsks.ts): the ask's record key only. Checked on the remembered withdrawal's serialised
 * size (it held the 200,000-character text before). Hand-driven Router (test/support/questionHandWorld.ts); no
 * time passes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { recordKeyOf } from "../../src/broker/DeliveryRecords.ts"
import { message } from "../support/broker.ts"
import { questionHandWorld } from "../support/questionHandWorld.ts"

describe("a withdrawn ask's remembered withdrawal", () => {
  it.effect("does not keep the ask's message text alive", () =>
    Effect.gen(function*() {
      const world = yield* questionHandWorld({}, () => 1_000_000)
      const { batch, router, answerOf } = world
      const session = world.child.session
      if (session === undefined) throw new Error("setup: the child is not registered")
      const text = "x".repeat(200_000)
      const ask = { ...message(text, { expectsReply: true }), id: "big-ask" }
      batch(world.child, [{ type: "send", to: "bob", message: ask }])
      assert.strictEqual(answerOf(world.child, "big-ask")?.type, "delivered", "setup: the ask was not delivered")
      batch(world.child, [{ type: "cancel_ask", messageId: "big-ask" }])
      assert.strictEqual(router.stats().asks, 0, "setup: the ask's edge is still open")
      const withdrawal = router["asks"]["withdrawals"]["withdrawn"].get(recordKeyOf(session.key, "big-ask"))
      assert.isDefined(withdrawal, "setup: the withdrawal is not remembered")
      const kept = JSON.stringify(withdrawal ?? null).length
      assert.isBelow(kept, 10_000, `the withdrawal keeps ${kept} characters: the ask's message content`)
    }))
})
