/**
 * Task route (A): one outbound record holds a message id's replay record and
 * its receipt route (OutboundRecord.ts). d's m0 is delivered to b-1, its
 * replay record pushed out by the records' bound while its route stays; d's
 * later message under the id, queued for z, is recorded on that same record
 * (RECORD_LATER); d supersedes m0 at b-1, which keeps m0's fate on the route
 * (`OutboundRecord.withdrawal`). When z returns and is flushed the later
 * message, that message owns the route. The route's withdrawal was m0's and
 * stayed, so a cancel of the later message was answered "cannot be
 * cancelled" and z got no `message_control`. The route now forgets it
 * (DeliveryRecords.forgetEarlier). The later message given back by z-1
 * unconfirmed was also found superseded, and dropped: z's return got
 * nothing. The third test guards the forgetting's note by stamp: m0, still
 * unwritten at b-1 when the later message took the route, is still found
 * superseded when b-1's connection gives it back. The clock is a plain
 * number moved by hand, no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Message } from "../../src/protocol/frames.ts"
import { message } from "../support/broker.ts"
import { custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"
import { answersFrom, copyLeftWorld, type CopyLeftWorld, deliveredThenPushedOut, textsOf } from "../support/withdrawnCopyLeft.ts"

/**
 * d's m0 delivered to b-1 and pushed out of the replay records (`replayRecords: 3`), its route to b-1 kept;
 * d's later message under m0's id queued for z (away); d supersedes m0 at b-1; z returns (z-1) and is flushed
 * the later message. Returns m0, the later message and z-1's connection.
 */
const laterFlushedAfterSupersede = (w: CopyLeftWorld) => {
  w.closeAbandoned(w.reg("z", {}, "Z"))
  const { b1, m0 } = deliveredThenPushedOut(w, 3)
  const later: Message = { ...m0, content: { text: "for z" } }
  w.send("z", later)
  w.send("b", message("m1", { supersedes: m0.id }))
  assert.include(messagesAndControls(w.framesOf(b1)), `supersede ${m0.id}`, "b-1 was not told of the supersede: the test sets up nothing")
  const z = w.reg("z", { features: custodyFeatures, instanceId: "z-1" }, "Z")
  assert.deepStrictEqual(textsOf(w.framesOf(z), m0.id), ["for z"], "z's return was not flushed the later message: the test sets up nothing")
  return { m0, later, z }
}

describe("a later message under a superseded message's id, flushed to its receiver, owns the route (task route A)", () => {
  it.effect("a cancel of it is answered delivered and z is sent the cancel control", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 3 })
      const { m0, z } = laterFlushedAfterSupersede(w)
      const before = w.framesOf(w.d).length
      w.cancel(m0.id)
      const answers = answersFrom(w, before, m0.id)
      assert.strictEqual(answers.length, 1)
      assert.include(answers[0], "\"type\":\"delivered\"", `the cancel of the later message was answered: ${answers[0]}`)
      assert.include(messagesAndControls(w.framesOf(z)), `cancel ${m0.id}`, "z was not sent the cancel of the later message")
    }))

  it.effect("a supersede of it is told to z, and a retry of it is answered superseded", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 3 })
      const { later, m0, z } = laterFlushedAfterSupersede(w)
      const before = w.framesOf(w.d).length
      w.send("z", message("m2", { supersedes: m0.id }))
      assert.include(messagesAndControls(w.framesOf(z)), `supersede ${m0.id}`, "z was not told of the supersede of the later message")
      w.send("z", later)
      const answers = answersFrom(w, before, m0.id)
      assert.strictEqual(answers.length, 1)
      assert.include(answers[0], "E_DELIVERY_SUPERSEDED", `the retry of the superseded later message was answered: ${answers[0]}`)
    }))

  it.effect("m0, unwritten at b-1 when the later message took the route, is not given to b-1's return", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 3 })
      w.closeAbandoned(w.reg("z", {}, "Z"))
      const y = w.reg("y", {}, "Y")
      // b-1's writes never complete: m0, and the supersede's control behind it, wait in its outbox.
      const b1 = w.reg("b", { features: custodyFeatures, instanceId: "b-1" }, "B", true)
      const m0 = message("m0")
      w.send("b", m0)
      w.send("y", message("other"))
      w.send("y", message("other 2"))
      w.send("y", message("other 3"))
      assert.deepStrictEqual(textsOf(w.framesOf(y), m0.id), [], "y was given m0: the test sets up nothing")
      // The later message is received after m0 (a later stamp).
      w.clock.now += 1_000
      w.send("z", { ...m0, content: { text: "for z" } })
      w.send("b", message("m1", { supersedes: m0.id }))
      const z = w.reg("z", { features: custodyFeatures, instanceId: "z-1" }, "Z")
      assert.deepStrictEqual(textsOf(w.framesOf(z), m0.id), ["for z"], "z's return was not flushed the later message: the test sets up nothing")
      w.closeAbandoned(b1)
      const back = w.reg("b", { features: custodyFeatures, instanceId: "b-1" })
      assert.deepStrictEqual(textsOf(w.framesOf(back), m0.id), [], "b-1's return was given m0, which d superseded")
    }))

  it.effect("the later message, given back unconfirmed by z-1, is given to z's return", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 3 })
      const { m0, z } = laterFlushedAfterSupersede(w)
      w.closeAbandoned(z)
      const back = w.reg("z", { features: custodyFeatures, instanceId: "z-1" }, "Z")
      assert.deepStrictEqual(textsOf(w.framesOf(back), m0.id), ["for z"], "z's return was not given the later message back")
    }))
})
