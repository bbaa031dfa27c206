/**
 * A mailbox copy of an ask dropped before its deadline ends that ask's
 * edge (Asks.askLost) — its own edge only. An old copy of an ask whose edge
 * expired can come back (its recipient's connection closes unconfirmed)
 * after its asker reused the id, past the replay window, for a new ask to
 * someone else; the mailbox then drops that old copy, and the new ask's
 * edge, which is not the copy's (another deadline), stays open: its replier's
 * answer is taken (review revae AE1).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { REPLAY_WINDOW_MS } from "../../src/protocol/constants.ts"
import { message } from "../support/broker.ts"
import { custodyFeatures, recordedSessions } from "../support/controlWorld.ts"
import { handRouter } from "../support/handRouter.ts"

/** Replay records are kept up to an hour while there is room (DeliveryRecords.ts). */
const HOUR = 3_600_000

describe("a lost ask copy ends only its own ask's edge", () => {
  it.effect("an old copy of an expired ask, lost after its id was reused, leaves the new ask's edge open", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const hand = yield* handRouter({ askTimeout: 1_000, mailboxCapacity: 1 }, () => clock.now)
      const { batch, closeAbandoning, router } = hand
      const { connect, framesOf } = recordedSessions(hand)
      const a = connect(1, "a", custodyFeatures, "a-1")
      const b = connect(2, "b", custodyFeatures, "b-2")
      const c = connect(3, "c", custodyFeatures, "c-3")
      const d = connect(4, "d", custodyFeatures, "d-4")
      const old = message("old question", { expectsReply: true })
      batch(a, [{ type: "send", to: "b", message: old }])
      framesOf(b)
      // The old ask expires (its edge swept by a's next send) past the replay records' hour; b never confirmed it.
      clock.now += HOUR + REPLAY_WINDOW_MS
      batch(a, [{ type: "send", to: "c", message: message("tick") }])
      // a reuses the id for a new ask to c, and sends d a note.
      const fresh = { ...message("new question", { expectsReply: true }), id: old.id }
      batch(a, [{ type: "send", to: "c", message: fresh }, { type: "send", to: "d", message: message("fyi") }])
      assert.isTrue(framesOf(c).some((f) => f.type === "message" && f.message?.id === old.id), "setup: c was not asked")
      assert.strictEqual(router.stats().asks, 1, "setup: the new ask's edge is not open")
      // b's connection closes: the old copy goes back (as if open: the new edge answers for its key).
      closeAbandoning(b)
      // d's too: a's note goes back and pushes a's old copy out of the one-place mailbox.
      closeAbandoning(d)
      const asksAfter = router.stats().asks
      const reply = message("answer", { replyTo: old.id })
      batch(c, [{ type: "send", to: "a", message: reply }])
      const answer = framesOf(c).find((f) => f.messageId === reply.id)
      assert.strictEqual(asksAfter, 1, "the new ask's edge closed when the OLD ask's copy was dropped")
      assert.strictEqual(answer?.type, "delivered", `c's answer to the new ask was refused: ${answer?.reason}`)
    }))
})
