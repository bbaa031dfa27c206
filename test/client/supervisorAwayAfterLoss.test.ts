/**
 * A child's `supervisorSend` lost on the way, then refused as the real broker refuses it on the supervisor channel
 * (src/broker/Supervisor.ts `resolveSupervisor`: a bound child whose supervisor is not connected gets
 * `E_TARGET_DISCONNECTED` "supervisor away" — never "not found" nor a rebound), e.g. after a restart the supervisor
 * re-authorized the child (C-SUP-15) then dropped again (Resending.ts `send`, review revbs BS3). The first write may
 * have been delivered, so the refusal read after the loss ends as the loss (`ConnectionLost`, outcome unknown): it
 * failed at once as a plain refusal, read as the first write's. Set-up: test/client/refusedAfterLoss.ts; the grace's
 * timing is checked in supervisorSendAfterLoss.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ConnectionLost } from "../../src/client/errors.ts"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { message } from "../support/broker.ts"
import { refusedAfterLoss, type SendVia } from "./refusedAfterLoss.ts"

const viaSupervisor: SendVia = (client, sent) => client.supervisorSend({ message: sent })

describe("a supervisorSend lost on the way, then refused as the real broker refuses it", () => {
  it.effect("a supervisorSend refused 'supervisor away' after the loss ends ConnectionLost, not a plain refusal", () =>
    Effect.gen(function*() {
      const away = { code: DeliveryCode.TargetDisconnected, reason: Reason.supervisorAway }
      const ended = yield* refusedAfterLoss("child-0000-0101", message("progress"), away, viaSupervisor)
      assert.instanceOf(ended.failure, ConnectionLost, `the supervisorSend got ${String(ended.failure)}`)
    }))
})
