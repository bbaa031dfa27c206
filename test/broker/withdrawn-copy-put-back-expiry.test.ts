/**
 * A cancelled copy given to one reader and put back for the others
 * (WithdrawnCopies.give -> MailDelivery.put -> Mailbox.put with its queue
 * place) goes back at its place in the mailbox's age order: mail queued
 * after it, still young, does not stand in front of it, so `Mailbox.expire`
 * lets it go at its retention and a reader coming back after that gets
 * nothing (review revr R2: it used to be appended as the newest entry).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"

const RETENTION_MS = 3_600_000

describe("a cancelled copy put back behind younger mail", () => {
  it.effect("expires at the mailbox's retention: b-2's return after it gets nothing", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, { mailboxRetention: RETENTION_MS }, clock)
      w.closeAbandoned(w.registerOther("c"))
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      assert.deepStrictEqual(w.messagesOf(w.b1), [m0.id], "setup: b-1 was not written m0")
      w.closeAbandoned(w.b1)
      clock.now += 1_000
      const b2 = w.registerB("b-2")
      assert.deepStrictEqual(w.messagesOf(b2), [m0.id], "setup: b-2 was not written m0")
      w.closeAbandoned(b2)
      const requeuedAt = clock.now
      // Younger mail for another absent session.
      clock.now += 1_000
      const mx = message("mx")
      w.batch(w.d, [{ type: "send", to: "c", message: mx }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      clock.now += 1_000
      const b1Again = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(b1Again)), [`message ${m0.id}`, `cancel ${m0.id}`], "setup: b-1 not given the copy")
      // b-1 confirms both and leaves: nothing of it comes back.
      w.batch(b1Again, [{ type: "received", frames: b1Again.framesWritten }])
      assert.strictEqual(b1Again.custody?.size, 0, "setup: b-1 did not confirm the copy and its cancel")
      w.closeAbandoned(b1Again)
      assert.strictEqual(w.router.heldMail()?.messages, 2, "setup: the copy (for b-2) and mx are not both queued")
      // Past the copy's retention (queued at requeuedAt), not mx's.
      clock.now = requeuedAt + RETENTION_MS + 1
      w.router.prune(clock.now)
      const b2Again = w.registerB("b-2")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(b2Again)), [], "the copy outlived the mailbox's retention")
    }))
})
