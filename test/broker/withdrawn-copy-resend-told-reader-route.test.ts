/**
 * A resend under m0's id, its replay record gone, queued over the cancelled
 * copy kept for b's base instance while m0's route names f-1's stuck write
 * (a reader the cancel TOLD while live: test/support/withdrawnCopyLeft.ts's
 * `toldReader`, review revbx BX3). The resend is a new message (review revi
 * I4), and MailDelivery.queue drops the old message's route whatever reader
 * it names — not copyLeft's rule, which keeps a told reader's: kept, it
 * would tie the new message to a write that never held it. The proof: a
 * receipt f-1 sends for m0 after the resend does not reach d as if about
 * the new m0, which waits for c unread. The withdrawal that f-1's give-back
 * would need is not the route's to keep here: the resend's own replay
 * record forgets it (DeliveryRecords.keep, review revf R1), whichever rule
 * `queue` follows, and notes it for the old message's give-back
 * (DeliveryRecords.withdrawnBeforeResend; withdrawn-copy-resend-given-back
 * .test.ts) — see the comment at that call.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { copyLeftWorld, receiptsOf, toldReader } from "../support/withdrawnCopyLeft.ts"

describe("a resend queued over a cancelled copy drops the route of a reader the cancel told", () => {
  it.effect("f-1's receipt for m0 after the resend does not reach d", () =>
    Effect.gen(function*() {
      // One replay record kept: d's next send pushes m0's out while its route (its hour) stays.
      const w = yield* copyLeftWorld({ replayRecords: 1 })
      const { f1, m0 } = toldReader(w)
      w.send("c", message("m1"))
      w.send("c", { ...m0, content: { text: "m0 again" } })
      assert.strictEqual(w.router.stats().withdrawnCopiesHeld, 0, "the resend did not replace the copy: the test sets up nothing")
      w.receipt(f1, m0.id)
      assert.deepStrictEqual(
        receiptsOf(w.framesOf(w.d), m0.id),
        [],
        "f-1's receipt for the old m0 reached d along the route the resend should have dropped"
      )
    }))
})
