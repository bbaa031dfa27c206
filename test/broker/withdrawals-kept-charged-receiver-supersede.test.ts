/**
 * A supersede's withdrawal that follows the replay record (its route gone:
 * here MAX_ROUTES newer routes; Receipts.recordedRoute) and is kept at once
 * (OutboundRecords.keepWithdrawal) is charged to the share of the session
 * the superseded message was for — the supersede's target, its receiver —
 * not to its sender's (the supersede stage, SupersedeStage.ts passes `target.key`).
 * d's m1 to b is stuck unwritten in b-1's outbox and d's 4,096 messages to
 * a never-confirming `a` wait in a's custody; all their routes are pushed
 * out, then d supersedes m1 and the 4,096: the list fills, and its drop
 * takes the oldest of a, the receiver holding the most, so b-1's return
 * gets m0 and never m1. Charged to d, all 4,097 would be d's share and its
 * oldest, m1's, would go (seen: this test fails with the supersede stage
 * passing `sender.key` for `target.key`). The cancel path's own test:
 * withdrawals-kept-charged-receiver-no-route.test.ts. Hand-driven Router,
 * controlWorld.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { b1LeavesAndReturns } from "../support/controlWorld.ts"
import { floodedNoRoutes } from "../support/floodedNoRoutes.ts"

const HOUR = 3_600_000

describe("a supersede's withdrawal kept with no route is charged to its target's share", () => {
  it.effect("m1, superseded by d along its replay record, never reaches b-1's return though d's supersedes of messages to a never-confirming a fill the list", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      // a confirms nothing it is written, so each supersede is kept; every route so far is pushed out.
      const { w, m0, m1, a, flood } = yield* floodedNoRoutes(clock)
      // The supersedes follow the records to b-1 and a (same instances, live): each withdrawal kept on the list at once.
      const m1b = message("m1b", { supersedes: m1.id })
      w.batch(w.d, [{ type: "send", to: "b", message: m1b }])
      w.d.writer.flush()
      for (const [at, id] of flood.entries()) {
        w.batch(w.d, [{ type: "send", to: "a", message: message(`n${at}b`, { supersedes: id }) }])
        w.d.writer.flush()
        a.writer.flush()
      }
      assert.include(w.controlsOf(a), `supersede ${flood[flood.length - 1]}`, "a was not sent the supersedes: the test is confused")
      // The hour passes (the replay records age; the withdrawals stay a day), and b-1 leaves and comes back.
      clock.now += HOUR
      w.router.prune(clock.now)
      const seen = b1LeavesAndReturns(w)
      assert.include(seen, `message ${m0.id}`, "m0, never confirmed, did not come back: the test checks nothing")
      assert.include(seen, `message ${m1b.id}`, "m1b, the superseding message, did not come back: the test is confused")
      assert.notInclude(seen, `message ${m1.id}`, "m1, superseded on its way, reached b-1's return")
    }), 180_000)
})
