/**
 * A rebound read after the message was lost with its connection (`TargetRebound.afterLoss`, Resending.ts)
 * whose re-list no longer finds the target: the first write, before the loss, may have been delivered, so the
 * send ends `DeliveryUnknown`, not `NotDelivered(E_TARGET_REBOUND)` — as when that re-list times out
 * (review revas AS2, test/session/reboundAfterLoss.test.ts). A rebound that answered the first write still
 * ends `NotDelivered`: nothing was delivered. Over the fake session client.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import { TargetRebound } from "../../src/client/errors.ts"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { EXACT_SEND_V1 } from "../../src/protocol/features.ts"
import { DeliveryUnknown, NotDelivered } from "../../src/session/errors.ts"
import { B, withPeers } from "./support.ts"

/** A session whose send to B is refused with `E_TARGET_REBOUND` (`afterLoss` as given), B gone from the list by then. */
const reboundWithTargetGone = (afterLoss: boolean) =>
  Effect.gen(function*() {
    const unit = yield* withPeers()
    unit.client.features = [EXACT_SEND_V1]
    unit.client.onSend = (request) => {
      unit.client.sessions = unit.client.sessions.filter((session) => session.id !== B.id)
      return Effect.fail(
        new TargetRebound({
          messageId: request.message.id,
          code: DeliveryCode.TargetRebound,
          reason: Reason.targetRebound,
          message: Reason.targetRebound,
          retryable: true,
          ...(afterLoss ? { afterLoss: true } : {})
        })
      )
    }
    const exit = yield* Effect.exit(unit.session.send({ to: "B", message: "fyi" }))
    assert.strictEqual(unit.client.sends.length, 1, "setup: sent once, not again to a target the list lost")
    return Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
  })

describe("a rebound whose re-list no longer finds the target", () => {
  it.effect("read after the message was lost on the way: DeliveryUnknown, the first write may have been delivered", () =>
    Effect.gen(function*() {
      const failure = yield* reboundWithTargetGone(true)
      assert.isFalse(failure instanceof NotDelivered, `ended ${String(failure)}: "not delivered" for a message maybe delivered`)
      assert.instanceOf(failure, DeliveryUnknown, String(failure))
    }))

  it.effect("answering the first write: NotDelivered(E_TARGET_REBOUND), nothing was delivered", () =>
    Effect.gen(function*() {
      const failure = yield* reboundWithTargetGone(false)
      assert.isTrue(failure instanceof NotDelivered && failure.code === DeliveryCode.TargetRebound, String(failure))
    }))
})
