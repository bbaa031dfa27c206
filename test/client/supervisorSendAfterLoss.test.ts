/**
 * A child's `supervisorSend` lost on the way reads a refusal from the next broker as a plain send does (Resending.ts
 * `send`, review revbr BR4). The real broker refuses a bound child whose supervisor is not connected "supervisor
 * away" (`E_TARGET_DISCONNECTED`, src/broker/Supervisor.ts `resolveSupervisor`): after a loss it is retried through
 * the rejoin grace and, if it stands, ends as the loss (`ConnectionLost`, outcome unknown: the first write may have
 * been delivered by a broker that forgot it; review revbs BS3). The real broker never answers this channel "not
 * found" nor with a rebound; the cases that send them show the client's path all the same (a "not found" ends alike, a
 * rebound is marked `afterLoss`). It went through `retrying` alone, and every refusal failed at once, read as the
 * first write's. The plain send's case is the control: the same set-up, the same verdicts. A takeover's answer to a
 * `supervisor_send` held on a connection not granted `supervisor-v1` (E_INVALID_MESSAGE, broker/PeerReader.ts
 * `refuseHeldSends`) is that connection's state, not the write's: the loss at once (task afterloss3; it was passed on
 * as the write's own invalid message).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Option } from "effect"
import { answerAfterLoss } from "../../src/client/afterLoss.ts"
import { ConnectionLost, deliveryError, TargetRebound } from "../../src/client/errors.ts"
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

  it.effect("E_INVALID_MESSAGE 'supervisor_send without supervisor-v1' (a takeover's answer to a held send: the connection's grants) ends ConnectionLost at once carrying it, not as the write's own invalid message", () =>
    Effect.gen(function*() {
      // broker/PeerReader.ts `refuseHeldSends`: the connection's grants, which the first write's connection may have
      // had (task afterloss3); classed with the client's own SupervisorUnauthorized for a missing grant.
      const ungranted = { code: DeliveryCode.InvalidMessage, reason: Reason.supervisorSendUngranted }
      const ended = yield* refusedAfterLoss("child-0000-0007", message("progress"), ungranted, viaSupervisor)
      assert.instanceOf(ended.failure, ConnectionLost, `the supervisorSend got ${String(ended.failure)}`)
      assert.strictEqual(ended.laterWrites, 1, "written again: a retry in the grace cannot change this connection's grants")
      assert.isTrue(ended.endedAtReconnect, `not ended at once: ${ended.endedAfterMs} ms after the loss`)
      assert.deepInclude(ended.failure instanceof ConnectionLost ? ended.failure.refusal : undefined, ungranted)
      // Read late, the same (answerAfterLoss).
      const late = answerAfterLoss("m-late", Exit.fail(deliveryError({ messageId: "m-late", ...ungranted, retryable: false })))
      assert.instanceOf(Option.getOrUndefined(Exit.findErrorOption(late)), ConnectionLost)
    }))
})
