/**
 * Review revcg CG1 (HIGH, message loss, found in fixcc's merge): a supersede
 * took a copy waiting in the mailbox for its session out by the id's key,
 * checked against the id's CURRENT replay record — under a reused id that is
 * the later message's own record, so it always matched. A later message under
 * m0's id queued for c, a session of b's identity (two live holders, b and e,
 * so P49 queues it), was deleted by d's supersede of m0 at b. The supersede
 * now takes a mailbox copy out only when the client instance it told read
 * that very copy (MailDelivery.superseded; superseded-mailbox-copy.test.ts):
 * the later message, never written to anyone, stays.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"
import { copyLeftWorld, textsOf } from "../support/withdrawnCopyLeft.ts"

describe("a supersede of m0 and a later message under its id queued for b's identity (review revcg CG1)", () => {
  it.effect("c's return gets the later message queued for it", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 1 })
      w.closeAbandoned(w.reg("c", {}))
      const b1 = w.reg("b", { features: custodyFeatures, instanceId: "b-1" })
      w.reg("e", {})
      const m0 = message("m0")
      w.send("b", m0)
      assert.deepStrictEqual(messagesAndControls(w.framesOf(b1)), [`message ${m0.id}`], "b-1 did not take m0")
      // The replay bound pushes m0's record out; its route (to b) stays.
      w.send("b", message("other"))
      // Two live holders of c's identity (b, e): P49 queues it.
      w.send("c", { ...m0, content: { text: "later for c" } })
      const answers = w.framesOf(w.d).flatMap((frame) =>
        frame.type === "delivered" && frame.messageId === m0.id ? [frame.delivery ?? "?"] : []
      )
      assert.deepStrictEqual(answers, ["socket_delivered", "queued"], "the later message was not queued: the test sets up nothing")
      w.send("b", message("m1", { supersedes: m0.id }))
      assert.include(messagesAndControls(w.framesOf(b1)), `supersede ${m0.id}`, "b-1 was not told of the supersede: the test sets up nothing")
      const c = w.reg("c", {})
      assert.deepStrictEqual(textsOf(w.framesOf(c), m0.id), ["later for c"], "the later message queued for c was deleted by the supersede of m0")
    }))
})

