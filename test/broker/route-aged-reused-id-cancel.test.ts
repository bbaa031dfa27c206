/**
 * Task route (B, a suspicion): d's m0 is delivered to b-1 and its replay
 * record pushed out by the records' bound while its route stays; d's later
 * send under the id is refused and recorded on that same record
 * (RECORD_LATER). Once m0's route ages out (its hour), a cancel of the id
 * finds no route, and follows the record (Receipts.recordedRoute) — the
 * later send's, which says refused, so it goes nowhere: the cancel is
 * answered "cannot be cancelled", b-1 is sent no control, and a retry of
 * the later send is still answered with its refusal (docs/protocol.md,
 * review revdd DD1). The clock is a plain number moved by hand, no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { messagesAndControls } from "../support/controlWorld.ts"
import { answersFrom, copyLeftWorld, deliveredThenPushedOut, HOUR } from "../support/withdrawnCopyLeft.ts"

describe("a cancel under a reused id after the earlier message's route aged out (task route B)", () => {
  it.effect("is answered cannot be cancelled, sends b-1 nothing, and leaves the later send's refusal", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 2 })
      const { b1, m0 } = deliveredThenPushedOut(w, 2)
      // Half an hour on, an exact send to a session that does not exist: refused, the refusal recorded (P47).
      w.clock.now += HOUR / 2
      const refused = { type: "send", to: "nobody", targetId: "nobody", targetEpoch: "e-1", message: { ...m0, content: { text: "for nobody" } } }
      w.batch(w.d, [refused])
      const first = answersFrom(w, 0, m0.id)
      assert.include(first[first.length - 1], "\"type\":\"delivery_failed\"", "the later send was not refused: the test sets up nothing")
      // m0's route is past its hour; the later send's record is not.
      w.clock.now += HOUR / 2 + 60_000
      w.router.prune(w.clock.now)
      const before = w.framesOf(w.d).length
      w.cancel(m0.id)
      const cancelled = answersFrom(w, before, m0.id)
      assert.strictEqual(cancelled.length, 1)
      assert.include(cancelled[0], "cannot be cancelled", `the cancel was answered: ${cancelled[0]}`)
      assert.notInclude(messagesAndControls(w.framesOf(b1)), `cancel ${m0.id}`, "b-1 was sent a cancel")
      const again = w.framesOf(w.d).length
      w.batch(w.d, [refused])
      const retried = answersFrom(w, again, m0.id)
      assert.strictEqual(retried.length, 1)
      assert.strictEqual(retried[0], first[first.length - 1], "the retry was not answered as the refused send was")
    }))
})
