/**
 * A base client's unchanged retry of a message already delivered, whose replay record left while its route stayed,
 * is the same message, not a reuse of its id (DeliveryRecords.holdsEarlierMessage compares the fingerprint the entry
 * keeps): it marks no id reused, so past MAX_KEYS such retries none is refused E_MESSAGE_ID_REUSE (review rrn8 probe
 * 3; before, each counted as a reuse and the 4,097th was refused, not retryable, though never reused). The clock
 * does not move; no sleep. The reused ids' count is read from the router's private state by narrowing (no cast).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_KEYS } from "../../src/broker/ReusedIdWithdrawals.ts"
import { message } from "../support/broker.ts"
import { custodyFeatures } from "../support/controlWorld.ts"
import { copyLeftWorld } from "../support/withdrawnCopyLeft.ts"

/** The field `name` of `from`, when `from` is an object. */
const field = (from: unknown, name: string): unknown => typeof from === "object" && from !== null ? Reflect.get(from, name) : undefined

describe("an unchanged retry after the record left while the route stayed", () => {
  it.effect("a base client's MAX_KEYS + 3 unchanged retries are each delivered again, none refused, and mark no id reused", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 2 })
      const t = w.reg("t", { features: custodyFeatures, instanceId: "t-1" }, "T")
      const a = w.reg("a", {}, "A")
      const count = MAX_KEYS + 3
      const sent = Array.from({ length: count }, (_, n) => message(`hello ${n}`, { id: `x${n}` }))
      for (const m of sent) w.batch(a, [{ type: "send", to: "t", message: m }])
      // Each answer lost, say: a retries every message unchanged, under its own id.
      for (const m of sent) w.batch(a, [{ type: "send", to: "t", message: m }])
      const refused = w.framesOf(a).flatMap((f) => f.type === "delivery_failed" ? [`${f.messageId} ${f.code}`] : [])
      assert.deepStrictEqual(refused, [], "an unchanged retry was refused")
      const given = w.framesOf(t).filter((f) => f.type === "message").length
      assert.strictEqual(given, 2 * count, "t was not given each message twice")
      const kept = field(field(field(field(w.router, "ctx"), "records"), "reusedIds"), "reusedIds")
      if (typeof kept !== "number") return assert.fail("the router's reused ids were not found: the test reads nothing")
      assert.strictEqual(kept, 0, "an unchanged retry marked its id reused")
    }), 120_000)
})
