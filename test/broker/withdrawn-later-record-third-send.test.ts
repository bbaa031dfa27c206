/**
 * A third message under a reused id, sent after the later message's replay record left (review revrec R1): m0 is
 * delivered to b-1 and never confirmed, and its replay record pushed out (`replayRecords: 3`); d sends a later
 * message under m0's id to z, away, so it is queued and the record's replay part is that later send's
 * (RECORD_LATER); m1 supersedes m0 (the route's withdrawal, m0's); three more sends push the later message's replay
 * part out; d then sends a third message under the id. Recording it forgets the withdrawal: `keep` notes it by the
 * third send's stamp, sparing the later message's fingerprint (the record's), not as the withdrawn message's
 * fingerprint — so m0 given back is found withdrawn, the later message given back is not. With the third message
 * delivered live, its route is kept on the record before `keep` and clears RECORD_LATER: the send's own record
 * carries ROUTE_TAKEN_LATER for it. The clock is a plain number, never moved (every stamp ties); no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Message } from "../../src/protocol/frames.ts"
import { message } from "../support/broker.ts"
import { custodyFeatures } from "../support/controlWorld.ts"
import { copyLeftWorld, deliveredThenPushedOut, textsOf } from "../support/withdrawnCopyLeft.ts"

/** The steps above up to the third send, which goes to y: registered (delivered live) or away (queued). */
const setUp = (yLive: boolean) =>
  Effect.gen(function*() {
    const w = yield* copyLeftWorld({ replayRecords: 3 })
    w.closeAbandoned(w.reg("z", {}, "Z"))
    const y = yLive ? w.reg("y", { features: custodyFeatures, instanceId: "y-1" }, "Y") : undefined
    if (!yLive) w.closeAbandoned(w.reg("y", {}, "Y"))
    const { b1, m0 } = deliveredThenPushedOut(w, 3)
    const later: Message = { ...m0, content: { text: "for z" } }
    w.send("z", later)
    w.send("b", message("m1", { supersedes: m0.id }))
    for (let n = 1; n <= 3; n++) w.send("b", message(`more ${n}`))
    w.send("y", { ...m0, content: { text: "for y" } })
    const refused = w.framesOf(w.d).filter((f) => f.type === "error" || f.type === "delivery_failed").length
    assert.strictEqual(refused, 0, "a send was refused: the test sets up nothing")
    return { w, b1, m0, y }
  })

describe("a third message under a reused id after the later message's replay record left", () => {
  it.effect("m0, superseded and unconfirmed at b-1, is not given to b-1's return (third message delivered live)", () =>
    Effect.gen(function*() {
      const { w, b1, m0, y } = yield* setUp(true)
      assert.isDefined(y)
      if (y !== undefined) assert.deepStrictEqual(textsOf(w.framesOf(y), m0.id), ["for y"], "y was not given the third message: the test sets up nothing")
      w.closeAbandoned(b1)
      const back = w.reg("b", { features: custodyFeatures, instanceId: "b-1" })
      assert.deepStrictEqual(textsOf(w.framesOf(back), m0.id), [], "b-1's return was given m0, which d superseded")
    }))

  it.effect("m0, superseded and unconfirmed at b-1, is not given to b-1's return (third message queued)", () =>
    Effect.gen(function*() {
      const { w, b1, m0 } = yield* setUp(false)
      w.closeAbandoned(b1)
      const back = w.reg("b", { features: custodyFeatures, instanceId: "b-1" })
      assert.deepStrictEqual(textsOf(w.framesOf(back), m0.id), [], "b-1's return was given m0, which d superseded")
    }))

  it.effect("the later message, flushed to z-1 and given back unconfirmed, is given to z's return", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* setUp(true)
      const z = w.reg("z", { features: custodyFeatures, instanceId: "z-1" }, "Z")
      assert.deepStrictEqual(textsOf(w.framesOf(z), m0.id), ["for z"], "z's return was not flushed the later message: the test sets up nothing")
      w.closeAbandoned(z)
      const back = w.reg("z", { features: custodyFeatures, instanceId: "z-1" }, "Z")
      assert.deepStrictEqual(textsOf(w.framesOf(back), m0.id), ["for z"], "z's return was not given the later message back")
    }))

  it.effect("the third message, given back unconfirmed by y-1, is given to y's return", () =>
    Effect.gen(function*() {
      const { w, m0, y } = yield* setUp(true)
      assert.isDefined(y)
      if (y === undefined) return
      w.closeAbandoned(y)
      const back = w.reg("y", { features: custodyFeatures, instanceId: "y-1" }, "Y")
      assert.deepStrictEqual(textsOf(w.framesOf(back), m0.id), ["for y"], "y's return was not given the third message back")
    }))
})
