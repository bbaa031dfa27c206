/**
 * A child's `supervisorSend` lost on the way reads a refusal from the next broker as a plain send does (Resending.ts
 * `send`, review revbr BR4). The real broker refuses a bound child whose supervisor is not connected "supervisor
 * away" (`E_TARGET_DISCONNECTED`, src/broker/Supervisor.ts `resolveSupervisor`): after a loss it is retried through
 * the rejoin grace and, if it stands, ends as the loss (`ConnectionLost`, outcome unknown: the first write may have
 * been delivered by a broker that forgot it; review revbs BS3). The real broker never answers this channel "not
 * found" nor with a rebound; the cases that send them show the client's path all the same (a "not found" ends alike, a
 * rebound is marked `afterLoss`). It went through `retrying` alone, and every refusal failed at once, read as the
 * first write's. The plain send's case is the control: the same set-up, the same verdicts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ConnectionLost, TargetRebound } from "../../src/client/errors.ts"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { message } from "../support/broker.ts"
import { REJOIN_GRACE_MS, refusedAfterLoss, type SendVia } from "./refusedAfterLoss.ts"

const viaSupervisor: SendVia = (client, sent) => client.supervisorSend({ message: sent })
const viaSend: SendVia = (client, sent) => client.send({ to: "sup-1", message: sent })
const supervisorAway = { code: DeliveryCode.TargetDisconnected, reason: Reason.supervisorAway }
const notFound = { code: DeliveryCode.TargetNotFound, reason: Reason.targetNotFound }
const rebound = { code: DeliveryCode.TargetRebound, reason: Reason.targetRebound }

describe("a supervisorSend lost on the way, then refused by the next broker", () => {
  it.effect("supervisor away (the real broker's refusal) is retried through the rejoin grace, then ends ConnectionLost", () =>
    Effect.gen(function*() {
      const ended = yield* refusedAfterLoss("child-0000-0005", message("progress"), supervisorAway, viaSupervisor)
      assert.instanceOf(ended.failure, ConnectionLost, `the supervisorSend got ${String(ended.failure)}`)
      assert.isAbove(ended.laterWrites, 1, "not written again in the rejoin grace")
      assert.isAtLeast(ended.endedAfterMs ?? 0, REJOIN_GRACE_MS, "ended before the rejoin grace was over")
    }))

  it.effect("the path (a refusal the real broker does not send here): a not found is retried through the grace, then ends ConnectionLost", () =>
    Effect.gen(function*() {
      const ended = yield* refusedAfterLoss("child-0000-0001", message("progress"), notFound, viaSupervisor)
      assert.instanceOf(ended.failure, ConnectionLost, `the supervisorSend got ${String(ended.failure)}`)
      assert.isAbove(ended.laterWrites, 1, "not written again in the rejoin grace")
      assert.isAtLeast(ended.endedAfterMs ?? 0, REJOIN_GRACE_MS, "ended before the rejoin grace was over")
    }))

  it.effect("the path (a refusal the real broker does not send here): a rebound is marked afterLoss", () =>
    Effect.gen(function*() {
      const ended = yield* refusedAfterLoss("child-0000-0002", message("progress"), rebound, viaSupervisor)
      assert.instanceOf(ended.failure, TargetRebound, `setup: the supervisorSend got ${String(ended.failure)}`)
      assert.isTrue(ended.failure instanceof TargetRebound && ended.failure.afterLoss === true, "the rebound read as the first write's")
    }))

  it.effect("control: a plain send in the same set-up ends alike", () =>
    Effect.gen(function*() {
      const lost = yield* refusedAfterLoss("child-0000-0003", message("progress"), notFound, viaSend)
      assert.instanceOf(lost.failure, ConnectionLost, `the send got ${String(lost.failure)}`)
      assert.isAbove(lost.laterWrites, 1)
      const marked = yield* refusedAfterLoss("child-0000-0004", message("progress"), rebound, viaSend)
      assert.isTrue(marked.failure instanceof TargetRebound && marked.failure.afterLoss === true, `the send got ${String(marked.failure)}`)
    }))
})
