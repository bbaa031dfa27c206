/**
 * The reused ids' notes bounds (ReusedIdWithdrawals.ts) and the sends repeated after a retryable failure (P47's
 * `E_TARGET_REBOUND`): review revnotes8's probes 1–3 as regular tests. (1) a send repeated after E_TARGET_REBOUND is
 * no reuse, and the reused ids' bound is each sender's own, so another sender's 4,096 repeated sends do not make a
 * base client's unchanged retry refused; (2) one sender's repeated wrong-epoch sends leave no more than MAX_KEYS
 * reused ids; (3) a send repeated after a retryable failure under an id with eight withdrawals noted is refused like
 * any other send under it. The clock is a plain number, moved by hand (two hours in (1)); no
 * sleep. The reused ids' count is read from the router's private state by narrowing (no cast).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_KEYS } from "../../src/broker/ReusedIdWithdrawals.ts"
import type { Message } from "../../src/protocol/frames.ts"
import { message } from "../support/broker.ts"
import { custodyFeatures } from "../support/controlWorld.ts"
import { copyLeftWorld, HOUR } from "../support/withdrawnCopyLeft.ts"

/** The field `name` of `from`, when `from` is an object. */
const field = (from: unknown, name: string): unknown => typeof from === "object" && from !== null ? Reflect.get(from, name) : undefined

describe("sends repeated after a retryable failure, and the reused ids' bound per sender", () => {
  it.effect("a base client's unchanged retry after its record left is not refused E_MESSAGE_ID_REUSE because another sender made 4,096 REBOUND retries", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 2 })
      w.reg("t", { features: custodyFeatures, instanceId: "t-1" }, "T")
      const a = w.reg("a", {}, "A")
      for (let n = 0; n < 4096; n++) {
        const frame = { type: "send", to: "t", targetId: "t", targetEpoch: "not-t's-epoch", message: message("x", { id: `x${n}` }) }
        w.batch(a, [frame, frame])
      }
      const rebound = w.framesOf(a).filter((f) => f.type === "delivery_failed" && f.code === "E_TARGET_REBOUND").length
      assert.strictEqual(rebound, 8192, "a's sends were not each refused E_TARGET_REBOUND: the probe sets up nothing")
      w.clock.now += 2 * HOUR
      const m: Message = { id: "m", timestamp: 1, content: { text: "hello t" } }
      w.send("t", m)
      for (let n = 1; n <= 3; n++) w.send("t", message(`push ${n}`))
      w.send("t", m)
      const answers = w.framesOf(w.d).flatMap((f) => f.messageId === m.id && (f.type === "delivered" || f.type === "delivery_failed") ? [`${f.type} ${f.code ?? f.delivery ?? ""}`] : [])
      assert.deepStrictEqual(answers, ["delivered socket_delivered", "delivered socket_delivered"], "d's retry of m, unchanged, was refused")
    }), 60_000)

  it.effect("after 5,000 ids each sent twice with a wrong targetEpoch, the reused ids kept stay within MAX_KEYS", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 2 })
      w.reg("t", { features: custodyFeatures, instanceId: "t-1" }, "T")
      const a = w.reg("a", {}, "A")
      for (let n = 0; n < 5000; n++) {
        const frame = { type: "send", to: "t", targetId: "t", targetEpoch: "not-t's-epoch", message: message("x", { id: `x${n}` }) }
        w.batch(a, [frame, frame])
      }
      const codes = new Set(w.framesOf(a).flatMap((f) => f.type === "delivery_failed" ? [f.code] : []))
      assert.deepStrictEqual([...codes], ["E_TARGET_REBOUND"], "a's sends were not all refused E_TARGET_REBOUND: the probe sets up nothing")
      const size = field(field(field(field(field(w.router, "ctx"), "records"), "reusedIds"), "reused"), "size")
      if (typeof size !== "number") return assert.fail("the router's reused ids were not found: the probe reads nothing")
      assert.isAtMost(size, MAX_KEYS, "more reused ids kept than MAX_KEYS")
    }), 60_000)

  it.effect("after eight withdrawals under m0, a send under it whose REBOUND record was kept before the eighth is refused E_MESSAGE_ID_REUSE", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 3 })
      w.closeAbandoned(w.reg("z", {}, "Z"))
      w.reg("b", { features: custodyFeatures, instanceId: "b-1" })
      w.reg("t", { features: custodyFeatures, instanceId: "t-1" }, "T")
      w.batch(w.d, [{ type: "list", requestId: "r" }])
      const listed = w.framesOf(w.d).find((f) => f.type === "sessions")
      const sessions = field(listed, "sessions")
      const t = Array.isArray(sessions) ? sessions.find((s) => field(s, "id") === "t") : undefined
      const epoch = field(t, "endpointEpoch")
      if (typeof epoch !== "string") return assert.fail("t's endpointEpoch was not listed: the probe sets up nothing")
      const fill = (n: number) => {
        for (let k = 1; k <= 3; k++) w.send("b", message(`fill ${n}.${k}`))
      }
      const m0: Message = { id: "m0", timestamp: 1, content: { text: "for z" } }
      // Seven messages under m0, each queued for away z and cancelled: seven withdrawals.
      for (let n = 0; n < 7; n++) {
        fill(n)
        w.send("z", { ...m0, content: { text: `for z ${n}` } })
        w.cancel(m0.id)
      }
      fill(7)
      w.send("b", { ...m0, content: { text: "for b" } })
      fill(8)
      const toT = (targetEpoch: string) => ({ type: "send", to: "t", targetId: "t", targetEpoch, message: { ...m0, content: { text: "for t" } } })
      w.batch(w.d, [toT("not-t's-epoch")])
      w.cancel(m0.id)
      w.batch(w.d, [toT(epoch)])
      // The bound is reached whatever became of that send: a plain send under m0, its record pushed out, is refused.
      fill(9)
      w.send("z", { ...m0, content: { text: "for z last" } })
      const answers = w.framesOf(w.d).flatMap((f) => f.messageId === m0.id && (f.type === "delivered" || f.type === "delivery_failed") ? [`${f.type} ${f.code ?? f.delivery ?? ""}`] : [])
      const cancels = answers.filter((a) => a === "delivered ")
      const sends = answers.filter((a) => a !== "delivered ")
      assert.strictEqual(cancels.length, 8, "not eight cancels accepted: the probe sets up nothing")
      const planned = [...Array.from({ length: 7 }, () => "delivered queued"), "delivered socket_delivered", "delivery_failed E_TARGET_REBOUND"]
      assert.deepStrictEqual(sends.slice(0, 9), planned, "the set-up's sends were not answered as planned")
      assert.strictEqual(sends.at(-1), "delivery_failed E_MESSAGE_ID_REUSE", "a plain send under m0 was not refused: eight withdrawals were not noted")
      assert.deepStrictEqual(sends.slice(9, -1), ["delivery_failed E_MESSAGE_ID_REUSE"], "the send after the eighth withdrawal was not refused")
    }), 60_000)

})
