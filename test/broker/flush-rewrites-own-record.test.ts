/**
 * A mailbox flush (MailDelivery's `flush`) and a staged `replace` message's hand-over (Send.deliverStaged) rewrite
 * the replay record found by sender and id as delivered only when that record is the flushed or handed-over
 * message's own, not a later send's under the id (task flushrw; fixrr8's probe): here that later send is refused
 * retryable (P47's E_TARGET_REBOUND), and its retry must reach its target, not be answered `delivered` from the
 * earlier message's outcome. The third test guards the other side: a staged message's own record is still rewritten
 * `socket_delivered` at its hand-over (an owner check that never matched would leave it `queued`). On a Router driven
 * by hand; the clock moves by hand (the replace window only); no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Message } from "../../src/protocol/frames.ts"
import { DELIVERY_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { custodyFeatures, type Seen } from "../support/controlWorld.ts"
import { copyLeftWorld } from "../support/withdrawnCopyLeft.ts"

/** The field `name` of `from`, when `from` is an object. */
const field = (from: unknown, name: string): unknown => typeof from === "object" && from !== null ? Reflect.get(from, name) : undefined

/** The answers (`delivered` and `delivery_failed`) among `frames` for the message `id`, as `<type> <code or delivery>`. */
const answersFor = (frames: ReadonlyArray<Seen>, id: string): ReadonlyArray<string> =>
  frames.flatMap((f) => f.messageId === id && (f.type === "delivered" || f.type === "delivery_failed") ? [`${f.type} ${f.code ?? f.delivery ?? ""}`] : [])

/** How many messages of id `id` `frames` hold. */
const messagesOf = (frames: ReadonlyArray<Seen>, id: string): number =>
  frames.filter((f) => f.type === "message" && field(field(f, "message"), "id") === id).length

const WINDOW_MS = 1_000

describe("a flush or a staged hand-over rewrites only its own message's replay record", () => {
  it.effect("after m for z is flushed, a later m for t refused E_TARGET_REBOUND is given to t on its retry", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 2 })
      const t = w.reg("t", { features: custodyFeatures, instanceId: "t-1" }, "T")
      w.closeAbandoned(w.reg("z", {}, "Z"))
      const m: Message = { id: "m", timestamp: 1, content: { text: "for z" } }
      w.send("z", m)
      // Two more records push m's out (replayRecords: 2): m2's, refused retryable, is then the one under the id.
      for (let n = 1; n <= 2; n++) w.send("t", message(`push ${n}`))
      const m2: Message = { ...m, content: { text: "for t" } }
      w.batch(w.d, [{ type: "send", to: "t", targetId: "t", targetEpoch: "not-t's-epoch", message: m2 }])
      const z = w.reg("z", {}, "Z")
      assert.strictEqual(messagesOf(w.framesOf(z), m.id), 1, "z's return was not given m: the test sets up nothing")
      w.send("t", m2)
      const answers = answersFor(w.framesOf(w.d), m.id)
      assert.deepStrictEqual(answers.slice(0, 2), ["delivered queued", "delivery_failed E_TARGET_REBOUND"], "the set-up's sends were not answered as planned")
      assert.strictEqual(answers[2], "delivered socket_delivered")
      assert.strictEqual(messagesOf(w.framesOf(t), m.id), 1, "m2's retry was answered, and t was never given m2")
    }))

  it.effect("after a replace-staged m for b is handed over, a later m for t refused E_TARGET_REBOUND is given to t on its retry", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 2, replaceWindow: WINDOW_MS })
      const t = w.reg("t", { features: custodyFeatures, instanceId: "t-1" }, "T")
      const b = w.reg("b", {}, "B")
      const s = w.reg("s", { features: [DELIVERY_V1] }, "S")
      const m: Message = { id: "m", timestamp: 1, content: { text: "for b" } }
      w.batch(s, [{ type: "send", to: "b", message: m, delivery: "queue", queueMode: "replace", threadId: "status" }])
      for (let n = 1; n <= 2; n++) w.batch(s, [{ type: "send", to: "t", message: message(`push ${n}`) }])
      const m2: Message = { ...m, content: { text: "for t" } }
      w.batch(s, [{ type: "send", to: "t", targetId: "t", targetEpoch: "not-t's-epoch", message: m2 }])
      w.clock.now += WINDOW_MS
      w.router.staging.flushDue(w.clock.now)
      assert.strictEqual(messagesOf(w.framesOf(b), m.id), 1, "b was not handed m: the test sets up nothing")
      w.batch(s, [{ type: "send", to: "t", message: m2 }])
      const answers = w.framesOf(s).flatMap((f) =>
        f.messageId === m.id && (f.type === "delivery_queued" || f.type === "delivered" || f.type === "delivery_failed")
          ? [`${f.type} ${f.code ?? f.delivery ?? ""}`.trimEnd()]
          : []
      )
      assert.deepStrictEqual(answers.slice(0, 2), ["delivery_queued", "delivery_failed E_TARGET_REBOUND"], "the set-up's sends were not answered as planned")
      assert.strictEqual(answers[2], "delivered socket_delivered")
      assert.strictEqual(messagesOf(w.framesOf(t), m.id), 1, "m2's retry was answered, and t was never given m2")
    }))

  it.effect("a replace-staged message's own record still says socket_delivered after its hand-over: its retry is answered so and not written again", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replaceWindow: WINDOW_MS })
      const b = w.reg("b", {}, "B")
      const s = w.reg("s", { features: [DELIVERY_V1] }, "S")
      const m: Message = { id: "m", timestamp: 1, content: { text: "for b" } }
      const send = { type: "send", to: "b", message: m, delivery: "queue", queueMode: "replace", threadId: "status" }
      w.batch(s, [send])
      w.clock.now += WINDOW_MS
      w.router.staging.flushDue(w.clock.now)
      assert.strictEqual(messagesOf(w.framesOf(b), m.id), 1, "b was not handed m: the test sets up nothing")
      w.batch(s, [send])
      const answers = answersFor(w.framesOf(s), m.id)
      assert.deepStrictEqual(answers, ["delivered socket_delivered"])
      assert.strictEqual(messagesOf(w.framesOf(b), m.id), 1, "m's retry was written to b again")
    }))
})
