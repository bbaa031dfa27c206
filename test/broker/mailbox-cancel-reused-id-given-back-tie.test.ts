/**
 * A mailbox cancel under a reused id withdraws the message accepted last (MailDelivery.newestUnder, by
 * `Mail[ACCEPTED]` in a stamp tie), not the last queued: a message given back is queued again behind
 * later ones. d's m0 ("for b") is written to b and never confirmed; past its replay record d sends a second
 * message under m0 to z (away), queued; b's connection drops and "for b" goes back behind it. d's cancel of m0 —
 * its latest send — withdraws "for z", and b's return is given "for b" with no cancel (review revmailkey2 probe 6).
 * The hand-driven Router of mailbox-one-id-two-waiting.test.ts; its clock is a plain number never moved (every
 * stamp ties); no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Message } from "../../src/protocol/frames.ts"
import { message } from "../support/broker.ts"
import { custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"
import { answersFrom, copyLeftWorld, textsOf } from "../support/withdrawnCopyLeft.ts"

const m0: Message = { id: "m0", timestamp: 1, content: { text: "for b" } }

describe("a mailbox cancel under a reused id in a stamp tie", () => {
  it.effect("withdraws the later send (for z), not the older message given back after it (for b)", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 2 })
      w.reg("s", {}, "S")
      w.closeAbandoned(w.reg("z", { features: custodyFeatures, instanceId: "z-1" }, "Z"))
      const b = w.reg("b", { features: custodyFeatures, instanceId: "b-1" })
      w.send("b", m0)
      for (let n = 1; n <= 2; n++) w.send("s", message(`fill ${n}`))
      w.send("z", { ...m0, content: { text: "for z" } })
      assert.deepStrictEqual(textsOf(w.framesOf(b), m0.id), ["for b"], "b was not written its message: the test sets up nothing")
      w.closeAbandoned(b)
      const from = w.framesOf(w.d).length
      w.cancel(m0.id)
      assert.deepStrictEqual(answersFrom(w, from, m0.id), [JSON.stringify({ type: "delivered", messageId: m0.id })], "d's cancel was not answered done: the test sets up nothing")
      const zBack = w.reg("z", { features: custodyFeatures, instanceId: "z-1" }, "Z")
      assert.deepStrictEqual(textsOf(w.framesOf(zBack), m0.id), [], "z's return was given d's latest send under m0, which d cancelled")
      const bBack = w.reg("b", { features: custodyFeatures, instanceId: "b-1" })
      assert.deepStrictEqual(messagesAndControls(w.framesOf(bBack)), [`message ${m0.id}`], "b's return was given its message with a cancel d never made for it")
    }))
})
