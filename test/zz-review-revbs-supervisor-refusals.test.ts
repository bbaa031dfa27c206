/**
 * Review revbs probe bs3: what a child's `supervisorSend` lost on the way ends as when the next broker refuses it
 * as the real broker does on the supervisor channel (src/broker/Supervisor.ts `resolveSupervisor`: never
 * "not found" nor "rebound" — a bound child whose supervisor is not connected gets `E_TARGET_DISCONNECTED`
 * "supervisor away", e.g. after a restart the supervisor re-authorized it (C-SUP-15) then dropped again). The first write may have been delivered, so a
 * refusal read after the loss should not end as "not delivered" (the merge's own rule, review revbr BR4); on main
 * it does. Same set-up as test/client/supervisorSendAfterLoss.test.ts (test/client/refusedAfterLoss.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ConnectionLost } from "../src/client/errors.ts"
import { DeliveryCode, Reason } from "../src/protocol/delivery.ts"
import { message } from "./support/broker.ts"
import { refusedAfterLoss, type SendVia } from "./client/refusedAfterLoss.ts"

const viaSupervisor: SendVia = (client, sent) => client.supervisorSend({ message: sent })

describe("review revbs bs3: a supervisorSend lost on the way, refused as the real broker refuses it", () => {
  it.effect("supervisor away after the loss ends ConnectionLost, not a plain refusal", () =>
    Effect.gen(function*() {
      const away = { code: DeliveryCode.TargetDisconnected, reason: Reason.supervisorAway }
      const ended = yield* refusedAfterLoss("child-0000-0101", message("progress"), away, viaSupervisor)
      assert.instanceOf(ended.failure, ConnectionLost, `the supervisorSend got ${String(ended.failure)}`)
    }))

})
