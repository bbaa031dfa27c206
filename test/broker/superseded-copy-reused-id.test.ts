/**
 * A supersede leaves a message under a reused id alone (review revcc, item 1,
 * its probe 5): d's m0 is delivered to b-1 (its route names b); the replay
 * bound (`replayRecords: 1`) pushes m0's record out while its route stays, so
 * d's next message under m0's id, "for z", sent to z (away, another
 * identity), is a new message, waits in the mailbox under the same key, and
 * its record is the id's. d then supersedes m0 at b (the route passes P72's
 * check) and b-1 is told. A supersede takes a mailbox copy out only when b-1
 * read that very copy (it once took one out by the id's key: this lost "for
 * z"; see also superseded-later-reused-id.test.ts): "for z", never written,
 * stays, and z's return gets it. The world is
 * test/support/withdrawnCopyLeft.ts's; nothing waits on time.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"
import { copyLeftWorld, textsOf } from "../support/withdrawnCopyLeft.ts"

describe("a supersede of a delivered message whose id a later queued message reuses", () => {
  it.effect("z's return gets the message queued for it", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 1 })
      w.closeAbandoned(w.reg("z", {}, "Z"))
      const b1 = w.reg("b", { features: custodyFeatures, instanceId: "b-1" })
      const m0 = message("m0")
      w.send("b", m0)
      assert.deepStrictEqual(messagesAndControls(w.framesOf(b1)), [`message ${m0.id}`], "b-1 did not take m0")
      // The replay bound pushes m0's record out; its route stays.
      w.send("b", message("other"))
      w.send("z", { ...m0, content: { text: "for z" } })
      const answers = w.framesOf(w.d).flatMap((frame) =>
        (frame.type === "delivered" || frame.type === "delivery_failed") && frame.messageId === m0.id ? [frame.type] : []
      )
      assert.deepStrictEqual(answers, ["delivered", "delivered"], "the message for z was not accepted: the test sets up nothing")
      w.send("b", message("m1", { supersedes: m0.id }))
      assert.include(messagesAndControls(w.framesOf(b1)), `supersede ${m0.id}`, "b-1 was not told of the supersede: the test sets up nothing")
      const z = w.reg("z", {}, "Z")
      assert.deepStrictEqual(textsOf(w.framesOf(z), m0.id), ["for z"], "z's return was not given the message queued for it")
    }))
})
