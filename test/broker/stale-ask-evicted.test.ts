/**
 * A copy of an ask waiting in the mailbox past its deadline, before any
 * send swept its edge, that the mailbox's bounds push out: its ask expired
 * first, so its asker is told so (`expired`, Reason.askExpired) and a retry
 * hears E_DELIVERY_EXPIRED — not that the mailbox evicted it
 * (MailDelivery's `evicted` asks StaleAsks, as its expiry does).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { message } from "../support/broker.ts"
import { custodyFeatures, recordedSessions } from "../support/controlWorld.ts"
import { handRouter } from "../support/handRouter.ts"

const ASK_TIMEOUT_MS = 60_000

describe("an ask's mailbox copy evicted past its deadline, before the sweep", () => {
  it.effect("its asker gets the ask's expired receipt, and a retry hears E_DELIVERY_EXPIRED, not evicted", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      // One message fits the mailbox: the second pushes out the heaviest sender's oldest.
      const hand = yield* handRouter(
        { askTimeout: ASK_TIMEOUT_MS, mailboxCapacity: 1 },
        () => clock.now
      )
      const { batch, closeAbandoning, router } = hand
      const recorded = recordedSessions(hand)
      const connect = (id: number, sessionId: string, features: ReadonlyArray<string>): Peer =>
        recorded.connect(id, sessionId, features, `${sessionId}-1`)
      const framesOf = recorded.framesOf
      const a = connect(1, "a", [])
      const b = connect(2, "b", custodyFeatures)
      const d = connect(3, "d", custodyFeatures)
      const ask = message("still need this?", { expectsReply: true })
      const note = message("fyi")
      batch(a, [{ type: "send", to: "b", message: ask }, { type: "send", to: "d", message: note }])
      const messages = (peer: Peer) => framesOf(peer).flatMap((frame) => frame.type === "message" ? [frame.message?.id] : [])
      assert.deepStrictEqual(messages(b), [ask.id], "setup: the ask was not written to b")
      assert.deepStrictEqual(messages(d), [note.id], "setup: the note was not written to d")
      // b drops before confirming the ask: its copy goes back to the mailbox, the ask still open.
      closeAbandoning(b)
      assert.strictEqual(router.stats().mailbox, 1, "setup: the ask did not go back to the mailbox")
      // Its deadline passes; no send comes, so nothing sweeps its edge.
      clock.now += ASK_TIMEOUT_MS
      // d drops too: a's note goes back to the mailbox and, a the heaviest sender, pushes a's ask out.
      closeAbandoning(d)
      assert.strictEqual(router.stats().mailbox, 1, "setup: the note did not push the ask out")
      const receipts = framesOf(a).flatMap((frame) => frame.type === "message_receipt" ? [frame.receipt] : [])
      assert.deepStrictEqual(
        receipts.map((receipt) => [receipt?.messageId, receipt?.status, receipt?.detail]),
        [[ask.id, "expired", Reason.askExpired]],
        "the ask's copy was told as evicted, though its ask had expired first"
      )
      // A same-id retry is answered from its record: expired, as a swept ask's is.
      batch(a, [{ type: "send", to: "b", message: ask }])
      const answer = framesOf(a).findLast((frame) => frame.type === "delivery_failed")
      assert.strictEqual(answer?.code, DeliveryCode.DeliveryExpired, "a retry of the expired ask was not answered expired")
    }))
})
