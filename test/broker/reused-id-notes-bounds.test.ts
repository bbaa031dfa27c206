/**
 * The bounds of the withdrawals kept under reused ids (ReusedIdWithdrawals.ts) refuse the send that would cross
 * them, `E_MESSAGE_ID_REUSE`, instead of dropping a withdrawal or a reuse mark, so a give-back under a reused id is
 * still judged by every withdrawal made under it. Review revmodel's probes 2 (eight later withdrawals under the id
 * pushed out the supersede of the m0 b-1 was written: b-1's return was written m0 bare) and 4 (4,096 other reused
 * ids pushed m0's reuse mark out, and the rules by key dropped y's m0, never withdrawn), as regular tests; and a
 * reuse of an id whose withdrawal's note the bound of ids not reused pushed out, refused with `reuse-reason-v1`'s
 * text; and a base client's reuse past its sender's bound, refused with the bound's text rather than P46's, which
 * speaks of a kept record (task byid item 4). The clock is a plain number, never moved (every stamp ties); no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { REUSE_REASON_V1 } from "../../src/protocol/features.ts"
import type { Message } from "../../src/protocol/frames.ts"
import { message } from "../support/broker.ts"
import { custodyFeatures } from "../support/controlWorld.ts"
import { copyLeftWorld, type CopyLeftWorld, deliveredThenPushedOut, textsOf } from "../support/withdrawnCopyLeft.ts"

/** d's refused sends and cancels, as `<message id> <code>` (`<message id> <type>` for a code-less refusal). */
const refusals = (w: CopyLeftWorld): ReadonlyArray<string> =>
  w.framesOf(w.d).flatMap((f) => f.type === "error" || f.type === "delivery_failed" ? [`${f.messageId} ${f.code ?? f.type}`] : [])

describe("the reused ids' withdrawal notes refuse a send past their bounds", () => {
  it.effect("after eight withdrawals under m0, the next send under it is refused, and superseded m0 is not given to b-1's return (revmodel 2)", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 3 })
      w.closeAbandoned(w.reg("z", {}, "Z"))
      const { b1, m0 } = deliveredThenPushedOut(w, 3)
      // m0's id reused by a message queued for away z; m1 supersedes b-1's m0 (the first withdrawal); the one for
      // z cancelled (the second).
      w.send("z", { ...m0, content: { text: "for z 0" } })
      w.send("b", message("m1", { supersedes: m0.id }))
      w.cancel(m0.id)
      // Seven more under the id, each queued for z and cancelled (m0's replay record pushed out first: a send under
      // a kept record of other content is refused as a reuse anyway): the seventh, after eight withdrawals, is
      // refused, and its cancel finds the sixth, cancelled already (accepted, it would be the ninth withdrawal).
      for (let n = 1; n <= 7; n++) {
        for (let k = 1; k <= 3; k++) w.send("b", message(`fill ${n}.${k}`))
        w.send("z", { ...m0, content: { text: `for z ${n}` } })
        w.cancel(m0.id)
      }
      w.closeAbandoned(b1)
      const back = w.reg("b", { features: custodyFeatures, instanceId: "b-1" })
      assert.deepStrictEqual(textsOf(w.framesOf(back), m0.id), [], "b-1's return was given m0, which d superseded")
      assert.deepStrictEqual(refusals(w), [`${m0.id} E_MESSAGE_ID_REUSE`], "not exactly the send after the eighth withdrawal refused")
    }))

  it.effect("after 4,096 ids reused, the reuse of one more is refused, and y's m0, never withdrawn, is given to its return (revmodel 4)", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 2 })
      const y = w.reg("y", { features: custodyFeatures, instanceId: "y-1" }, "Y")
      w.reg("b", { features: custodyFeatures, instanceId: "b-1" })
      w.reg("q", { features: custodyFeatures, instanceId: "q-1" }, "Q")
      const m0: Message = { id: "m0", timestamp: 1, content: { text: "for y" } }
      w.send("y", m0)
      for (let n = 1; n <= 2; n++) w.send("b", message(`other ${n}`))
      // m0's id reused for b, and that message superseded: the chain the model-based test shrank to.
      w.send("b", { ...m0, content: { text: "for b" } })
      w.send("b", message("m1", { supersedes: m0.id }))
      // 4,096 other ids, each sent to q-1 (its route kept, unconfirmed), then again once its record left: the
      // last one's second send would be the 4,097th reuse.
      for (let n = 0; n < 4096; n++) w.send("q", message("first", { id: `x${n}` }))
      for (let n = 0; n < 4096; n++) w.send("q", message("second", { id: `x${n}` }))
      assert.deepStrictEqual(textsOf(w.framesOf(y), m0.id), ["for y"], "y was not given m0: the test sets up nothing")
      w.closeAbandoned(y)
      const back = w.reg("y", { features: custodyFeatures, instanceId: "y-1" }, "Y")
      assert.deepStrictEqual(textsOf(w.framesOf(back), m0.id), ["for y"], "y's return was not given m0, which d never withdrew")
      assert.deepStrictEqual(refusals(w), ["x4095 E_MESSAGE_ID_REUSE"], "not exactly the 4,097th reuse refused")
    }), 60_000)

  it.effect("a base client's reuse past its 4,096 reused ids is refused with the bound's text, not P46's", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 2 })
      w.reg("q", { features: custodyFeatures, instanceId: "q-1" }, "Q")
      // 4,097 ids, each sent to q-1 (its route kept, unconfirmed), then each sent again with other content once its
      // record left: the last would be the 4,097th reuse of d, a base client (no reuse-reason-v1). (An unchanged
      // resend is no reuse at all: test/broker/reused-id-unchanged-retry.test.ts.)
      for (let n = 0; n <= 4096; n++) w.send("q", message("first", { id: `x${n}` }))
      for (let n = 0; n <= 4096; n++) w.send("q", message("second", { id: `x${n}` }))
      const refused = w.framesOf(w.d).filter((f) => f.type === "delivery_failed")
      assert.deepStrictEqual(refused.map((f) => [f.messageId, f.code]), [["x4096", DeliveryCode.MessageIdReuse]],
        "not exactly the 4,097th reuse refused: the test sets up nothing")
      // The send was refused for the bound, not compared with a kept record: the bound's text, not P46's.
      assert.deepStrictEqual(refused.map((f) => f.reason), [Reason.messageIdReusedPastBound], "not the base text of the bound")
    }), 60_000)

  it.effect("a reuse of an id whose cancel's note 4,096 other ids' cancels pushed out is refused, with reuse-reason-v1's text", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 2 })
      w.reg("b", { features: custodyFeatures, instanceId: "b-1" })
      w.closeAbandoned(w.reg("q", {}, "Q"))
      const s = w.reg("s", { features: [REUSE_REASON_V1] }, "S")
      const send = (to: string, sent: Message) => w.batch(s, [{ type: "send", to, message: sent }])
      const cancel = (id: string) => w.batch(s, [{ type: "cancel_message", messageId: id }])
      // m0 to b-1 (its route kept, unconfirmed), cancelled there: a withdrawal under an id not reused.
      const m0: Message = { id: "m0", timestamp: 1, content: { text: "for b" } }
      send("b", m0)
      cancel(m0.id)
      // 4,096 other ids, each queued for away q and cancelled there: the last pushes m0's note out (and the sends
      // push m0's replay record out, so a send under it is no replay).
      for (let n = 0; n < 4096; n++) {
        send("q", message("other", { id: `x${n}` }))
        cancel(`x${n}`)
      }
      const before = w.framesOf(s).filter((f) => f.type === "error" || f.type === "delivery_failed")
      assert.deepStrictEqual(before, [], "a send or cancel was refused: the test sets up nothing")
      send("b", { ...m0, content: { text: "for b again" } })
      const refused = w.framesOf(s).filter((f) => f.type === "delivery_failed" && f.messageId === m0.id)
      assert.deepStrictEqual(refused.map((f) => [f.code, f.reason]), [[DeliveryCode.MessageIdReuse, Reason.messageIdReusedPastNotes]])
    }), 60_000)
})
