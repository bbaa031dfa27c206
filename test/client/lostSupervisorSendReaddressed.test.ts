/**
 * A child's `supervisor_send` in the client's record of sends lost on the way (Resending.ts `lostOnTheWay`, review
 * revbs BS1): lost while the connection was bound to one supervisor, written again on a connection bound to another,
 * it is the same send to the client (PendingSends.ts `addressedTo` re-addresses the re-send so that the caller's retry
 * joins it), so the record finds the retry addressed to the new supervisor — its signature names no supervisor
 * (requests.ts `signatureOf`). Keyed by the signature naming the old one, the retry was not found there, and a
 * refusal it read ended as "not delivered" though the first write may have reached the old supervisor.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { IntercomNotConnected } from "../../src/client/errors.ts"
import type { UnansweredSend } from "../../src/client/PendingSends.ts"
import { Resending } from "../../src/client/Resending.ts"
import { StateEpochs } from "../../src/client/StateEpochs.ts"
import { signatureOf } from "../../src/client/requests.ts"

const recordOnly = () =>
  new Resending({
    withConnection: () => Effect.fail(new IntercomNotConnected({ reason: "the record alone is tested" })),
    retirementOf: () => undefined,
    ended: () => true,
    whenStopped: Effect.void,
    rejoining: () => false
  }, new StateEpochs(), 1_000)

describe("a supervisor_send in the record of sends lost on the way", () => {
  it("a supervisor_send lost while bound to sup-1 is found by its retry addressed to sup-2", () => {
    const record = recordOnly()
    const message = { id: "m1", timestamp: 0, content: { text: "progress" } }
    const toOld = { to: "sup-1", message }
    const lost: UnansweredSend = {
      request: toOld,
      frameType: "supervisor_send",
      signature: signatureOf(toOld, "supervisor_send"),
      since: 0,
      abandoned: true
    }
    record.lost([lost], () => false)
    assert.isTrue(record.lostOnTheWay("m1", signatureOf(toOld, "supervisor_send"), 10), "setup: the same address")
    const toNew = { to: "sup-2", message }
    assert.isTrue(
      record.lostOnTheWay("m1", signatureOf(toNew, "supervisor_send"), 10),
      "the retry addressed to the connection's new supervisor is not read as after the loss"
    )
  })
})
