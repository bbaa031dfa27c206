/**
 * A copy of an ask that went back to the mailbox (its recipient's
 * connection closed before it confirmed reading it) and that the mailbox
 * drops before the ask's deadline — pushed out by its bounds, or past its
 * retention — gets its asker an `expired` receipt: the question will not be
 * asked. That ends the ask: its edge closes as a withdrawn ask's does
 * (MailDelivery's `lost` → Asks.askLost), so the asked session, back, cannot
 * answer a question whose asker was told it failed (its reply is refused
 * E_REPLY_TARGET, "…a pending ask"), and may ask the asker (no E_MUTUAL_ASK).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { message } from "../support/broker.ts"
import { custodyFeatures, recordedSessions } from "../support/controlWorld.ts"
import { handRouter } from "../support/handRouter.ts"

const ASK_TIMEOUT_MS = 600_000
const RETENTION_MS = 60_000

/** How the mailbox drops a's ask's copy, well before the ask's deadline. */
type Drop = "evicted" | "expired"

/**
 * a asks b; b drops before confirming it, and the mailbox drops the copy
 * (`drop`). b comes back, answers, then asks a. What a was told of its ask,
 * what b's reply and ask were answered, and the open asks left.
 */
const askCopyLost = (drop: Drop) =>
  Effect.gen(function*() {
    const clock = { now: 1_000_000 }
    // One message fits the mailbox: the second pushes out the heaviest sender's oldest.
    const hand = yield* handRouter(
      { askTimeout: ASK_TIMEOUT_MS, mailboxCapacity: 1, mailboxRetention: RETENTION_MS },
      () => clock.now
    )
    const { batch, closeAbandoning, router } = hand
    const recorded = recordedSessions(hand)
    let connections = 0
    const connect = (sessionId: string, features: ReadonlyArray<string>): Peer => {
      connections++
      return recorded.connect(connections, sessionId, features, `${sessionId}-${connections}`)
    }
    const framesOf = recorded.framesOf
    const a = connect("a", [])
    const b = connect("b", custodyFeatures)
    const d = connect("d", custodyFeatures)
    const ask = message("still need this?", { expectsReply: true })
    const note = message("fyi")
    batch(a, [{ type: "send", to: "b", message: ask }, { type: "send", to: "d", message: note }])
    const messages = (peer: Peer) => framesOf(peer).flatMap((frame) => frame.type === "message" ? [frame.message?.id] : [])
    assert.deepStrictEqual(messages(b), [ask.id], "setup: the ask was not written to b")
    // b drops before confirming the ask: its copy goes back to the mailbox, the ask open.
    closeAbandoning(b)
    assert.strictEqual(router.stats().mailbox, 1, "setup: the ask did not go back to the mailbox")
    if (drop === "evicted") {
      // d drops too: a's note goes back to the mailbox and, a the heaviest sender, pushes a's ask out.
      closeAbandoning(d)
    } else {
      // Past the mailbox's retention, well before the ask's deadline: a's next send prunes it.
      clock.now += RETENTION_MS + 1
      batch(a, [{ type: "send", to: "a", message: message("tick") }])
    }
    const told = framesOf(a).flatMap((frame) =>
      frame.type === "message_receipt" && frame.receipt?.messageId === ask.id ? [frame.receipt.status] : []
    )
    const asksAfterDrop = router.stats().asks
    // b comes back within the ask's deadline, answers the question it read, then asks a something.
    const b2 = connect("b", custodyFeatures)
    const reply = message("yes", { replyTo: ask.id })
    const bAsks = message("and you?", { expectsReply: true })
    batch(b2, [{ type: "send", to: "a", message: reply }, { type: "send", to: "a", message: bAsks }])
    const answerTo = (id: string) => {
      const answer = framesOf(b2).find((frame) => frame.messageId === id)
      return [answer?.type, answer?.code, answer?.reason]
    }
    return {
      told,
      asksAfterDrop,
      reply: answerTo(reply.id),
      bAsks: answerTo(bAsks.id)[0],
      aGotReply: messages(a).includes(reply.id)
    }
  })

describe("an ask's mailbox copy dropped before the ask's deadline, its asker told expired", () => {
  for (const drop of ["evicted", "expired"] as const) {
    it.effect(`${drop}: the ask's edge closes — the asked session's reply is refused, its ask of the asker goes`, () =>
      Effect.gen(function*() {
        const result = yield* askCopyLost(drop)
        assert.deepStrictEqual(result.told, ["expired"], "setup: a was not told its ask's copy was dropped")
        assert.strictEqual(result.asksAfterDrop, 0, "the ask's edge stayed open after its asker was told it failed")
        assert.deepStrictEqual(result.reply, ["delivery_failed", DeliveryCode.ReplyTarget, Reason.replyNoAsk])
        assert.isFalse(result.aGotReply, "a got an answer to an ask it was told had failed")
        assert.strictEqual(result.bAsks, "delivered", "b's ask of a was refused over the dropped ask")
      }))
  }
})
