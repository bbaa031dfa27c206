/**
 * Two forgotten withdrawals under one id (review revrec R3): m0 is delivered to b-1 and never confirmed, and its
 * replay record pushed out (`replayRecords: 3`); a later message under m0's id is queued for z; m1 supersedes m0;
 * z's return is flushed the later message, which takes the route over (`forgetEarlier` notes m0's withdrawal by the
 * later message's stamp). d cancels the later message and, its replay record pushed out, sends a third message
 * under the id to y: `keep` notes that cancel's forgetting ahead of forgetEarlier's note, which stays (it was
 * written over, and m0 came back live). The clock is a plain number, never moved (every stamp ties); no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Message } from "../../src/protocol/frames.ts"
import { message } from "../support/broker.ts"
import { custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"
import { copyLeftWorld, deliveredThenPushedOut, textsOf } from "../support/withdrawnCopyLeft.ts"

const setUp = () =>
  Effect.gen(function*() {
    const w = yield* copyLeftWorld({ replayRecords: 3 })
    w.closeAbandoned(w.reg("z", {}, "Z"))
    const y = w.reg("y", { features: custodyFeatures, instanceId: "y-1" }, "Y")
    const { b1, m0 } = deliveredThenPushedOut(w, 3)
    const later: Message = { ...m0, content: { text: "for z" } }
    w.send("z", later)
    w.send("b", message("m1", { supersedes: m0.id }))
    const z = w.reg("z", { features: custodyFeatures, instanceId: "z-1" }, "Z")
    assert.deepStrictEqual(textsOf(w.framesOf(z), m0.id), ["for z"], "z's return was not flushed the later message: the test sets up nothing")
    w.cancel(m0.id)
    assert.include(messagesAndControls(w.framesOf(z)), `cancel ${m0.id}`, "z was not sent the cancel: the test sets up nothing")
    for (let n = 1; n <= 3; n++) w.send("b", message(`more ${n}`))
    w.send("y", { ...m0, content: { text: "for y" } })
    const refused = w.framesOf(w.d).filter((f) => f.type === "error").length
    assert.strictEqual(refused, 0, "a send was refused: the test sets up nothing")
    return { w, b1, m0, y }
  })

describe("the later message, having taken m0's route, cancelled and followed by a third send", () => {
  it.effect("m0, superseded and unconfirmed at b-1, is not given to b-1's return", () =>
    Effect.gen(function*() {
      const { w, b1, m0 } = yield* setUp()
      w.closeAbandoned(b1)
      const back = w.reg("b", { features: custodyFeatures, instanceId: "b-1" })
      assert.deepStrictEqual(textsOf(w.framesOf(back), m0.id), [], "b-1's return was given m0, which d superseded")
    }))

  it.effect("the third message, given back unconfirmed by y-1, is given to y's return", () =>
    Effect.gen(function*() {
      const { w, m0, y } = yield* setUp()
      assert.deepStrictEqual(textsOf(w.framesOf(y), m0.id), ["for y"], "y was not given the third message: the test sets up nothing")
      w.closeAbandoned(y)
      const back = w.reg("y", { features: custodyFeatures, instanceId: "y-1" }, "Y")
      assert.deepStrictEqual(textsOf(w.framesOf(back), m0.id), ["for y"], "y's return was not given the third message back")
    }))
})
