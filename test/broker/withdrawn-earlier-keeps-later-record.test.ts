/**
 * Review revdd DD1 (HIGH, a wrong answer to the sender): one outbound record
 * holds a message id's replay record and its receipt route
 * (OutboundRecord.ts). When the replay bound pushes d's m0's replay record
 * out while its route to b-1 stays, d's later message under m0's id is
 * recorded on that same record. A withdrawal of m0 found by its route — a
 * supersede, a cancel — rewrote that replay record, the later message's, to
 * m0's fate, so a retry of the later message was answered superseded or
 * cancelled though it was not. Now the replay part is marked a later send's
 * (`OutboundRecord.recordLater`) and such a withdrawal leaves it
 * (DeliveryRecords.rewrite's `route`). The last two tests guard the
 * marking the other way: a later message that owns the route too — flushed
 * to its receiver, or delivered live — is superseded with its record
 * rewritten as before. Nothing waits on time.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Message } from "../../src/protocol/frames.ts"
import { message } from "../support/broker.ts"
import { custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"
import { answersFrom, copyLeftWorld, deliveredThenPushedOut, textsOf } from "../support/withdrawnCopyLeft.ts"

describe("a withdrawal of a message by its route, whose id a later message's replay record holds (review revdd DD1)", () => {
  it.effect("a supersede: a retry of the later message, still queued, is answered queued, and z's return is given it", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 2 })
      w.closeAbandoned(w.reg("z", {}, "Z"))
      const { b1, m0 } = deliveredThenPushedOut(w, 2)
      const forZ: Message = { ...m0, content: { text: "for z" } }
      w.send("z", forZ)
      w.send("b", message("m1", { supersedes: m0.id }))
      assert.include(messagesAndControls(w.framesOf(b1)), `supersede ${m0.id}`, "b-1 was not told of the supersede: the test sets up nothing")
      const before = w.framesOf(w.d).length
      w.send("z", forZ)
      const answers = answersFrom(w, before, m0.id)
      assert.strictEqual(answers.length, 1)
      assert.include(answers[0], "\"delivery\":\"queued\"", `the retry of the message for z, still queued, was answered: ${answers[0]}`)
      assert.deepStrictEqual(textsOf(w.framesOf(w.reg("z", {}, "Z")), m0.id), ["for z"], "z's return was not given the message for it")
    }))

  it.effect("the later message flushed to z owns the route: a supersede of it at z rewrites its record", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 2 })
      w.closeAbandoned(w.reg("z", {}, "Z"))
      const { m0 } = deliveredThenPushedOut(w, 2)
      const forZ: Message = { ...m0, content: { text: "for z" } }
      w.send("z", forZ)
      const z = w.reg("z", { features: custodyFeatures, instanceId: "z-1" }, "Z")
      assert.deepStrictEqual(textsOf(w.framesOf(z), m0.id), ["for z"], "z's return was not given the message for it: the test sets up nothing")
      w.send("z", message("m2", { supersedes: m0.id }))
      assert.include(messagesAndControls(w.framesOf(z)), `supersede ${m0.id}`, "z was not told of the supersede: the test sets up nothing")
      const before = w.framesOf(w.d).length
      w.send("z", forZ)
      const answers = answersFrom(w, before, m0.id)
      assert.strictEqual(answers.length, 1)
      assert.include(answers[0], "E_DELIVERY_SUPERSEDED", `the retry of the superseded message for z was answered: ${answers[0]}`)
    }))

  it.effect("a later message delivered live under the id owns the route: a supersede of it rewrites its record", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 2 })
      const { b1, m0 } = deliveredThenPushedOut(w, 2)
      const again: Message = { ...m0, content: { text: "again for b" } }
      w.send("b", again)
      assert.deepStrictEqual(textsOf(w.framesOf(b1), m0.id), ["m0", "again for b"], "b-1 did not take the later message: the test sets up nothing")
      w.send("b", message("m2", { supersedes: m0.id }))
      const before = w.framesOf(w.d).length
      w.send("b", again)
      const answers = answersFrom(w, before, m0.id)
      assert.strictEqual(answers.length, 1)
      assert.include(answers[0], "E_DELIVERY_SUPERSEDED", `the retry of the superseded later message was answered: ${answers[0]}`)
    }))

  it.effect("a cancel: a retry of the later message, refused, is answered with its refusal, not cancelled", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 2 })
      const { b1, m0 } = deliveredThenPushedOut(w, 2)
      // An exact send to a session that does not exist: refused, and the refusal recorded (P47).
      const refused = { type: "send", to: "nobody", targetId: "nobody", targetEpoch: "e-1", message: { ...m0, content: { text: "for nobody" } } }
      w.batch(w.d, [refused])
      const first = answersFrom(w, 0, m0.id)
      assert.include(first[first.length - 1], "\"type\":\"delivery_failed\"", "the later send was not refused: the test sets up nothing")
      w.cancel(m0.id)
      assert.include(messagesAndControls(w.framesOf(b1)), `cancel ${m0.id}`, "b-1 was not told of the cancel: the test sets up nothing")
      const before = w.framesOf(w.d).length
      w.batch(w.d, [refused])
      const answers = answersFrom(w, before, m0.id)
      assert.strictEqual(answers.length, 1)
      assert.notInclude(answers[0], "cancel", `the retry of the refused send was answered: ${answers[0]}`)
      assert.strictEqual(answers[0], first[first.length - 1], "the retry was not answered as the refused send was")
    }))
})
