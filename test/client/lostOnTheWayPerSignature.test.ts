/**
 * The client's record of sends lost on the way keeps each (message id, signature) on its own (Resending.ts
 * `lostOnTheWay`, review revbr BR3): a send of another signature under the same id (an id reused), lost in its
 * turn, is recorded beside the first, not in its place — keyed by id alone, the first was forgotten, and a later
 * retry of it read a "not found" as "not delivered" though its write may have been delivered. Plain synchronous
 * code over a side no test path uses.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { IntercomNotConnected } from "../../src/client/errors.ts"
import type { UnansweredSend } from "../../src/client/PendingSends.ts"
import { MAX_LOST_ON_THE_WAY, Resending } from "../../src/client/Resending.ts"
import { StateEpochs } from "../../src/client/StateEpochs.ts"
import { signatureOf } from "../../src/client/requests.ts"

/** A client's re-sending with no connection ever (the record alone is used). */
const recordOnly = () =>
  new Resending({
    withConnection: () => Effect.fail(new IntercomNotConnected({ reason: "the record alone is tested" })),
    retirementOf: () => undefined,
    ended: () => true,
    whenStopped: Effect.void,
    rejoining: () => false
  }, new StateEpochs(), 1_000)

/** A plain send of `text` under `id`, lost unanswered at `since`, with its real signature. */
const lostText = (id: string, text: string, since: number): UnansweredSend => {
  const request = { to: "beta", message: { id, timestamp: 0, content: { text } } }
  return { request, frameType: "send", signature: signatureOf(request, "send"), since, abandoned: false }
}

describe("the record of sends lost on the way, under a reused id", () => {
  it("keeps a lost send when another send of the same id is lost after it", () => {
    const record = recordOnly()
    const first = lostText("m1", "first", 0)
    const reused = lostText("m1", "reused", 10)
    record.lost([first], () => true)
    record.lost([reused], () => true)
    assert.isTrue(record.lostOnTheWay("m1", first.signature, 20), "the first send forgotten when the id was reused")
    assert.isTrue(record.lostOnTheWay("m1", reused.signature, 20))
    assert.isFalse(record.lostOnTheWay("m1", lostText("m1", "never lost", 0).signature, 20), "a send never lost recorded")
  })

  it("counts each signature as an entry of the bound", () => {
    const record = recordOnly()
    const sends = Array.from({ length: MAX_LOST_ON_THE_WAY + 1 }, (_, i) => lostText("m1", `text ${i}`, 0))
    record.lost(sends, () => false)
    assert.isFalse(record.lostOnTheWay("m1", sends[0]!.signature, 1), "the oldest kept past the bound")
    assert.isTrue(record.lostOnTheWay("m1", sends[1]!.signature, 1))
    assert.isTrue(record.lostOnTheWay("m1", sends[MAX_LOST_ON_THE_WAY]!.signature, 1))
  })
})
