/**
 * The world of the tests of a withdrawal that follows its replay record, its route gone, and is kept at once —
 * charged to its receiver's share, not its sender's (test/broker/withdrawals-kept-charged-receiver-no-route,
 * withdrawals-kept-charged-receiver-supersede): d's m1 stuck in b-1's outbox, d's MAX_KEPT_WITHDRAWALS messages
 * waiting in the custody of a never-confirming `a`, and every route pushed out. Found by `duplicates`: both files
 * built it alike.
 */
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { recordKeyOf } from "../../src/broker/DeliveryRecords.ts"
import { MAX_KEPT_WITHDRAWALS } from "../../src/broker/KeptWithdrawals.ts"
import { message } from "./broker.ts"
import { custodyFeatures, m1StuckWorld, pushOutRoutes } from "./controlWorld.ts"

/**
 * `m1StuckWorld` on `clock`; then `a` (instance a-1, custody, confirming nothing it is written, so each withdrawal
 * of a message to it is kept) registers and d sends it MAX_KEPT_WITHDRAWALS messages, n0, n1, … (`flood`, their
 * ids); then a minute passes and every route so far is pushed out by MAX_ROUTES newer ones (`pushOutRoutes`) while
 * the replay records stay. Fails the test when n0 is not in a's custody (it would set up nothing).
 */
export const floodedNoRoutes = (clock: { now: number }) =>
  Effect.gen(function*() {
    const { w, m0, m1 } = yield* m1StuckWorld(clock)
    const a = w.registerOther("a", {}, false, { features: custodyFeatures, instanceId: "a-1" })
    const flood: Array<string> = []
    for (let sent = 0; sent < MAX_KEPT_WITHDRAWALS; sent++) {
      const n = message(`n${sent}`)
      flood.push(n.id)
      w.batch(w.d, [{ type: "send", to: "a", message: n }])
      w.d.writer.flush()
      a.writer.flush()
    }
    assert.isTrue(a.custody?.holdsMessage(recordKeyOf(w.d.session?.key ?? "", flood[0]!)) === true, "n0 is not in a's custody: the test sets up nothing")
    clock.now += 60_000
    pushOutRoutes(w, "r")
    return { w, m0, m1, a, flood }
  })
