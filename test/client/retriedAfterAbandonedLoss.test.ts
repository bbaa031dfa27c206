/**
 * A caller's own retry of a send lost on the way, written afresh outside the client's re-sent batch (the first
 * send was abandoned before the loss, and nothing settles it, so the client does not write it again), and
 * abandoned in its turn, has its late answer read as one after the loss: the connection marks the write
 * `afterLoss` from the client's record as it enters it (PendingSends.ts `begin`), so a rebound read late is
 * `TargetRebound.afterLoss` and a "not found" or a "target disconnected" is the loss (`ConnectionLost`) — the
 * first write may have been delivered (the `late` task's leftover; closed by the record fixbo added, pinned here;
 * the "target disconnected" — an ask's, or a child's `supervisorSend`'s "supervisor away" — read so since task
 * askver, one rule with the send's own retry, src/client/afterLoss.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ConnectionLost, TargetRebound } from "../../src/client/errors.ts"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { retriedAfterAbandonedLoss } from "./retriedAfterAbandonedLoss.ts"

describe("a caller's retry written afresh after its send was abandoned and lost, abandoned again", () => {
  it.effect("a late rebound is marked afterLoss", () =>
    Effect.gen(function*() {
      const read = yield* retriedAfterAbandonedLoss("asker-0000-0101", { code: DeliveryCode.TargetRebound, reason: Reason.targetRebound })
      assert.strictEqual(read.writesOnSecond, 1, "setup: the retry was not the one write on connection 2")
      assert.instanceOf(read.failure, TargetRebound, `setup: the late verdict was ${String(read.failure)}`)
      assert.isTrue(read.failure instanceof TargetRebound && read.failure.afterLoss === true, "the late rebound read as the first write's")
    }))

  it.effect("a late not found is read as the loss", () =>
    Effect.gen(function*() {
      const read = yield* retriedAfterAbandonedLoss("asker-0000-0102", { code: DeliveryCode.TargetNotFound, reason: Reason.targetNotFound })
      assert.strictEqual(read.writesOnSecond, 1, "setup: the retry was not the one write on connection 2")
      assert.instanceOf(read.failure, ConnectionLost, `the late verdict was ${String(read.failure)}`)
    }))

  it.effect("a late 'target disconnected' is read as the loss, as the ask's own retry ends on it (afterLoss.ts)", () =>
    Effect.gen(function*() {
      const read = yield* retriedAfterAbandonedLoss("asker-0000-0103", {
        code: DeliveryCode.TargetDisconnected,
        reason: Reason.targetDisconnected
      })
      assert.strictEqual(read.writesOnSecond, 1, "setup: the retry was not the one write on connection 2")
      assert.instanceOf(read.failure, ConnectionLost, `the late verdict was ${String(read.failure)}`)
    }))

  it.effect("a child's supervisorSend: a late 'supervisor away' is read as the loss, as its own retry ends on it", () =>
    Effect.gen(function*() {
      const read = yield* retriedAfterAbandonedLoss(
        "child-0000-0104",
        { code: DeliveryCode.TargetDisconnected, reason: Reason.supervisorAway },
        "supervisor"
      )
      assert.strictEqual(read.writesOnSecond, 1, "setup: the retry was not the one write on connection 2")
      assert.instanceOf(read.failure, ConnectionLost, `the late verdict was ${String(read.failure)}`)
    }))
})
