/**
 * What bounds the reused ids kept (ReusedIdWithdrawals.ts), as its header and docs/protocol.md state it: MAX_KEYS per
 * sender, with no overall count — a sender's marks stay a day after its last reuse under each id, also after the
 * sender left, so the total grows with the senders that reuse ids within a day (review rrn8 probe 1, which expected
 * maxSessions × MAX_KEYS). With `maxSessions` 3, four senders in turn each reuse MAX_KEYS ids and leave: all
 * 4 × MAX_KEYS stay kept, none of those sends is refused (no sender's reuses refuse another's), and each sender's
 * next reuse past its own MAX_KEYS is refused. The clock does not move; no sleep. The reused ids' count is read
 * from the router's private state by narrowing (no cast).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_KEYS } from "../../src/broker/ReusedIdWithdrawals.ts"
import { message } from "../support/broker.ts"
import { custodyFeatures } from "../support/controlWorld.ts"
import { copyLeftWorld } from "../support/withdrawnCopyLeft.ts"

/** The field `name` of `from`, when `from` is an object. */
const field = (from: unknown, name: string): unknown => typeof from === "object" && from !== null ? Reflect.get(from, name) : undefined

describe("the reused ids kept, per sender and overall", () => {
  it.effect("four senders in turn each reuse MAX_KEYS ids and leave: 4 × MAX_KEYS kept, only each one's own reuse past MAX_KEYS refused", () =>
    Effect.gen(function*() {
      const maxSessions = 3
      const senders = maxSessions + 1
      const w = yield* copyLeftWorld({ replayRecords: 2, maxSessions })
      w.reg("t", { features: custodyFeatures, instanceId: "t-1" }, "T")
      const reusedIds = () => field(field(field(field(w.router, "ctx"), "records"), "reusedIds"), "reusedIds")
      for (let s = 0; s < senders; s++) {
        const a = w.reg(`a${s}`, {}, `A${s}`)
        for (let n = 0; n <= MAX_KEYS; n++) w.batch(a, [{ type: "send", to: "t", message: message(`one ${n}`, { id: `x${n}` }) }])
        for (let n = 0; n <= MAX_KEYS; n++) w.batch(a, [{ type: "send", to: "t", message: message(`two ${n}`, { id: `x${n}` }) }])
        const refused = w.framesOf(a).flatMap((f) => f.type === "delivery_failed" ? [`${f.messageId} ${f.code}`] : [])
        assert.deepStrictEqual(refused, [`x${MAX_KEYS} E_MESSAGE_ID_REUSE`], `a${s}'s sends were not refused as its own bound says`)
        w.closeAbandoned(a)
      }
      assert.strictEqual(reusedIds(), senders * MAX_KEYS, "the reused ids kept are not MAX_KEYS for each sender that left")
    }), 120_000)
})
