/**
 * A send lost on the way, then refused `E_TARGET_DISCONNECTED` by the next broker (Resending.ts `send`, review revbs
 * BS3). On the supervisor channel it is the real broker's refusal for a bound child whose supervisor is not connected
 * (src/broker/Supervisor.ts `resolveSupervisor`: "supervisor away" — never "not found" nor a rebound), e.g. after a
 * restart the supervisor re-authorized the child (C-SUP-15) then dropped again; for a plain ask it is the refusal of
 * an ask to a disconnected target. The first write may have been delivered, so the refusal read after the loss is
 * retried through the rejoin grace and, if it stands, ends as the loss (`ConnectionLost`, outcome unknown): it failed
 * at once as a plain refusal, read as the first write's. Set-up: test/client/refusedAfterLoss.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ConnectionLost } from "../../src/client/errors.ts"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { message } from "../support/broker.ts"
import { REJOIN_GRACE_MS, refusedAfterLoss, type SendVia } from "./refusedAfterLoss.ts"

const viaSupervisor: SendVia = (client, sent) => client.supervisorSend({ message: sent })
const askVia: SendVia = (client, sent) => client.send({ to: "sup-1", message: { ...sent, expectsReply: true } })

describe("a send lost on the way, then refused as its target being away", () => {
  it.effect("a supervisorSend refused 'supervisor away' after the loss ends ConnectionLost, not a plain refusal", () =>
    Effect.gen(function*() {
      const away = { code: DeliveryCode.TargetDisconnected, reason: Reason.supervisorAway }
      const ended = yield* refusedAfterLoss("child-0000-0101", message("progress"), away, viaSupervisor)
      assert.instanceOf(ended.failure, ConnectionLost, `the supervisorSend got ${String(ended.failure)}`)
    }))

  it.effect("a plain ask refused 'target disconnected' after the loss is retried through the grace, then ends ConnectionLost", () =>
    Effect.gen(function*() {
      const away = { code: DeliveryCode.TargetDisconnected, reason: Reason.targetDisconnected }
      const ended = yield* refusedAfterLoss("child-0000-0102", message("question"), away, askVia)
      assert.instanceOf(ended.failure, ConnectionLost, `the ask got ${String(ended.failure)}`)
      assert.isAbove(ended.laterWrites, 1, "not written again in the rejoin grace")
      assert.isAtLeast(ended.endedAfterMs ?? 0, REJOIN_GRACE_MS, "ended before the rejoin grace was over")
    }))
})
