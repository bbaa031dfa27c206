/**
 * `reply-elsewhere-v1` and a reply lost after another client instance of the
 * asker's session was written it (AnsweredAsks.forget, from Asks.answerLost):
 * b-1 asks d and leaves; b-2 is written d's reply, never confirms it and
 * leaves (given back to the mailbox); d withdraws the reply there, so it is
 * lost. The ask is not answered: before its deadline its edge opens again,
 * past it the ask expired. Either way the asking instance is never told
 * `ask_answered_elsewhere` — not at its registration, not for a resend.
 * Driven by hand on a clock the test sets (test/support/controlWorld.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ASK_TIMEOUT_V1, REPLY_ELSEWHERE_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { controlWorld, custodyFeatures } from "../support/controlWorld.ts"

const ASKER = [...custodyFeatures, ASK_TIMEOUT_V1, REPLY_ELSEWHERE_V1]
const TIMEOUT_MS = 600_000

/** b-1 asks d and leaves; b-2 is written d's reply and leaves it unconfirmed; `lostAt`, d withdraws the reply. */
const lostReply = (lostAt: (start: number) => number) =>
  Effect.gen(function*() {
    const clock = { now: 1_000_000 }
    const w = yield* controlWorld(ASKER, {}, clock)
    const ask = message("well?", { expectsReply: true })
    w.batch(w.b1, [{ type: "send", to: "d", message: ask, askTimeoutMs: TIMEOUT_MS }])
    assert.include(w.messagesOf(w.d), ask.id, "setup: d was not asked")
    w.closeAbandoned(w.b1)
    // d (a base client: the write is its delivery) replies while b is away: the reply closes the edge.
    const reply = message("the answer", { replyTo: ask.id })
    w.batch(w.d, [{ type: "send", to: "b", message: reply }])
    assert.strictEqual(w.router.stats().asks, 0, "setup: the reply did not close the edge")
    const b2 = w.registerB("b-2", ASKER)
    assert.include(w.messagesOf(b2), reply.id, "setup: the flush did not write the reply to b-2")
    w.closeAbandoned(b2)
    clock.now = lostAt(clock.now)
    w.batch(w.d, [{ type: "cancel_message", messageId: reply.id }])
    return { w, ask, clock }
  })

const elsewhereOf = (frames: ReadonlyArray<{ readonly type: string; readonly messageId?: string }>) =>
  frames.flatMap((frame) => frame.type === "ask_answered_elsewhere" ? [frame.messageId] : [])

describe("reply-elsewhere-v1: a reply lost after another instance was written it answered nothing", () => {
  it.effect("lost before the deadline: the asker returning is not told, and the reply d sends again reaches it", () =>
    Effect.gen(function*() {
      const { ask, w } = yield* lostReply((start) => start + 1)
      assert.strictEqual(w.router.stats().asks, 1, "setup: the edge did not open again")
      const back = w.registerB("b-1", ASKER)
      const again = message("the answer, again", { replyTo: ask.id })
      w.batch(w.d, [{ type: "send", to: "b", message: again }])
      assert.include(w.messagesOf(back), again.id, "the reply along the reopened edge did not reach b-1")
      assert.deepStrictEqual(elsewhereOf(w.framesOf(back)), [], "told answered elsewhere for an ask open again")
    }))

  it.effect("lost past the deadline: the asker resending its ask is not told it was answered elsewhere", () =>
    Effect.gen(function*() {
      const { ask, w } = yield* lostReply((start) => start + TIMEOUT_MS + 1)
      assert.strictEqual(w.router.stats().asks, 0, "setup: an edge opened past the deadline")
      const back = w.registerB("b-1", ASKER)
      // Past the deadline a registration tells nothing anyway (ask-reply-elsewhere-deadline.test.ts): the resend is the check.
      w.batch(back, [{ type: "send", to: "d", message: ask, askTimeoutMs: TIMEOUT_MS }])
      const answers = w.framesOf(back).filter((frame) => frame.messageId === ask.id && frame.type !== "ask_answered_elsewhere")
      assert.isNotEmpty(answers, "setup: the resend was not answered")
      assert.deepStrictEqual(elsewhereOf(w.framesOf(back)), [], "told answered elsewhere for an ask whose reply was lost")
    }))
})
