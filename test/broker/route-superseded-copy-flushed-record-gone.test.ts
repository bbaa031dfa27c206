/**
 * Review revroute D2's guard: the route keeps a withdrawal when the mail the
 * mailbox flushes is the withdrawn message itself, whether or not its replay
 * record is still kept. c's m0, taken by P49's other holder b-1 whose write
 * never completes, goes back to the mailbox unread (the route names b-1); d
 * supersedes m0 and b-1 is told, but the copy, never read by b-1, stays
 * (MailDelivery.superseded); m0's replay record is then pushed out
 * (`replayRecords: 3`). c's return is flushed that copy: the route's
 * withdrawal is m0's own and stays, so a cancel of m0 is refused
 * ("cannot be cancelled"), no control sent. Forgetting the withdrawal whenever no replay
 * record is kept (a widening of task route A's condition that made the
 * revroute probes pass) answers it `delivered` and sends c a cancel. The
 * clock is a plain number, never moved; no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"
import { answersFrom, copyLeftWorld, textsOf } from "../support/withdrawnCopyLeft.ts"

describe("a superseded copy flushed after its replay record left keeps its withdrawal (review revroute D2)", () => {
  it.effect("a cancel of m0 after c's return was flushed the copy is refused and c gets no cancel", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 3 })
      w.closeAbandoned(w.reg("c", {}))
      const y = w.reg("y", {}, "Y")
      const b1 = w.reg("b", { features: custodyFeatures, instanceId: "b-1" }, "B", true)
      const m0 = message("m0")
      w.send("c", m0)
      // e holds the identity (registered while b-1 is live: it takes nothing), so b-1's return takes nothing.
      w.reg("e", {})
      w.closeAbandoned(b1)
      const b1Back = w.reg("b", { features: custodyFeatures, instanceId: "b-1" })
      assert.deepStrictEqual(messagesAndControls(w.framesOf(b1Back)), [], "b-1's return took m0: the test sets up nothing")
      w.send("b", message("m1", { supersedes: m0.id }))
      assert.include(messagesAndControls(w.framesOf(b1Back)), `supersede ${m0.id}`, "b-1 was not told of the supersede: the test sets up nothing")
      for (let n = 1; n <= 3; n++) w.send("y", message(`other ${n}`))
      assert.strictEqual(textsOf(w.framesOf(y), m0.id).length, 0)
      const c = w.reg("c", {})
      assert.deepStrictEqual(textsOf(w.framesOf(c), m0.id).length, 1, "c's return was not flushed the copy: the test sets up nothing")
      const before = w.framesOf(w.d).length
      w.cancel(m0.id)
      const answers = answersFrom(w, before, m0.id)
      assert.strictEqual(answers.length, 1)
      assert.include(answers[0], "\"type\":\"delivery_failed\"", `the cancel of the superseded m0 was answered: ${answers[0]}`)
      assert.notInclude(messagesAndControls(w.framesOf(c)), `cancel ${m0.id}`, "c was sent a cancel of the superseded m0")
    }))
})
