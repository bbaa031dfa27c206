/**
 * Review revroute D2 (HIGH, message loss): task route A's case with the
 * later message's own replay record pushed out before the mailbox flushes
 * it — here by the records' bound (`replayRecords: 3`, three more sends),
 * as by its hour for a message waiting longer in the mailbox. Dropping the
 * replay part cleared RECORD_LATER, so Receipts.addRoute no longer told the
 * flushed mail from m0 and the route kept m0's "superseded": a cancel of the
 * later message at z was refused and z told nothing, and the later message
 * given back unconfirmed by z-1 was dropped as superseded. RECORD_LATER now
 * outlives the replay part (the record's fingerprint fields stay the later
 * send's), and the flush compares the mail's fingerprint with it. The
 * deliberate case, a flushed copy that is the withdrawn message itself, is
 * route-superseded-copy-flushed-record-gone.test.ts. The clock is a plain
 * number, never moved; no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Message } from "../../src/protocol/frames.ts"
import { message } from "../support/broker.ts"
import { custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"
import { answersFrom, copyLeftWorld, deliveredThenPushedOut, textsOf } from "../support/withdrawnCopyLeft.ts"

describe("a later message under a superseded message's id whose replay record left before its flush owns the route (review revroute D2)", () => {
  it.effect("a cancel of the later message, flushed to z, is answered delivered and z is sent the cancel", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 3 })
      w.closeAbandoned(w.reg("z", {}, "Z"))
      const { b1, m0 } = deliveredThenPushedOut(w, 3)
      const later: Message = { ...m0, content: { text: "for z" } }
      w.send("z", later)
      w.send("b", message("m1", { supersedes: m0.id }))
      assert.include(messagesAndControls(w.framesOf(b1)), `supersede ${m0.id}`, "b-1 was not told of the supersede: the test sets up nothing")
      // Three more sends push the later message's replay record out (the bound); m0's route to b-1 stays.
      for (let n = 1; n <= 3; n++) w.send("b", message(`more ${n}`))
      const z = w.reg("z", { features: custodyFeatures, instanceId: "z-1" }, "Z")
      assert.deepStrictEqual(textsOf(w.framesOf(z), m0.id), ["for z"], "z's return was not flushed the later message: the test sets up nothing")
      const before = w.framesOf(w.d).length
      w.cancel(m0.id)
      const answers = answersFrom(w, before, m0.id)
      assert.strictEqual(answers.length, 1)
      assert.include(answers[0], "\"type\":\"delivered\"", `the cancel of the later message was answered: ${answers[0]}`)
      assert.include(messagesAndControls(w.framesOf(z)), `cancel ${m0.id}`, "z was not sent the cancel of the later message")
    }))

  it.effect("the later message, flushed to z-1 and given back unconfirmed, is given to z's return", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 3 })
      w.closeAbandoned(w.reg("z", {}, "Z"))
      const { m0 } = deliveredThenPushedOut(w, 3)
      w.send("z", { ...m0, content: { text: "for z" } })
      w.send("b", message("m1", { supersedes: m0.id }))
      for (let n = 1; n <= 3; n++) w.send("b", message(`more ${n}`))
      const z = w.reg("z", { features: custodyFeatures, instanceId: "z-1" }, "Z")
      assert.deepStrictEqual(textsOf(w.framesOf(z), m0.id), ["for z"], "z's return was not flushed the later message: the test sets up nothing")
      w.closeAbandoned(z)
      const back = w.reg("z", { features: custodyFeatures, instanceId: "z-1" }, "Z")
      assert.deepStrictEqual(textsOf(w.framesOf(back), m0.id), ["for z"], "z's return was not given the later message back")
    }))
})
