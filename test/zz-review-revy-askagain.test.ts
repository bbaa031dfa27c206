/**
 * Review revy, probe Y1 (replyack): an ask whose reply was lost after it
 * went to another instance (its sender withdrew it while it waited in the
 * mailbox, given back unconfirmed) is open again and asked again
 * (Asks.answerLost reopens its edge) — yet AnsweredAsks keeps the entry
 * for the lost reply, whose route still names the other instance, so the
 * asking instance returning is told `ask_answered_elsewhere` for an ask that
 * is open: here its replier answers it again and the reply reaches the asker
 * right behind the notice. A false "elsewhere": its client would end the ask
 * with AskAnsweredElsewhere, and the reply that follows answers nobody.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ASK_TIMEOUT_V1, REPLY_ELSEWHERE_V1 } from "../src/protocol/features.ts"
import { message } from "./support/broker.ts"
import { controlWorld as world, custodyFeatures } from "./support/controlWorld.ts"

const ASKER = [...custodyFeatures, ASK_TIMEOUT_V1, REPLY_ELSEWHERE_V1]

describe("review revy Y1: reply lost after another instance was written it, the ask open again", () => {
  it.effect("the asking instance returning is not told the ask was answered elsewhere", () =>
    Effect.gen(function*() {
      const w = yield* world(ASKER)
      // b-1 asks d (d is base: the write is its delivery) and its connection drops.
      const ask = message("well?", { expectsReply: true })
      w.batch(w.b1, [{ type: "send", to: "d", message: ask, askTimeoutMs: 600_000 }])
      assert.include(w.messagesOf(w.d), ask.id, "setup: d was not asked")
      w.closeAbandoned(w.b1)
      // d replies while b is away: the reply waits in the mailbox and closes the edge.
      const reply = message("the answer", { replyTo: ask.id })
      w.batch(w.d, [{ type: "send", to: "b", message: reply }])
      assert.strictEqual(w.router.stats().asks, 0, "setup: the reply did not close the edge")
      // b-2 (another instance) registers, is written the reply, never confirms it, and drops: given back.
      const b2 = w.registerB("b-2", ASKER)
      assert.include(w.messagesOf(b2), reply.id, "setup: the flush did not write the reply to b-2")
      w.closeAbandoned(b2)
      // d withdraws its reply before anyone confirmed it: the ask is unanswered again, asked again.
      w.batch(w.d, [{ type: "cancel_message", messageId: reply.id }])
      assert.strictEqual(w.router.stats().asks, 1, "setup: the edge did not open again")
      // b-1 takes its session back: its ask is open (d may answer it again), so nothing says it was answered.
      const back = w.registerB("b-1", ASKER)
      // d answers again: accepted along the reopened edge, and written to b-1.
      const again = message("the answer, again", { replyTo: ask.id })
      w.batch(w.d, [{ type: "send", to: "b", message: again }])
      assert.include(w.messagesOf(back), again.id, "setup: the second reply did not reach b-1")
      const told = w.framesOf(back).flatMap((frame) => frame.type === "ask_answered_elsewhere" ? [frame.messageId] : [])
      assert.deepStrictEqual(told, [], "told answered elsewhere for an ask that was open again (and then answered here)")
    }))
})
