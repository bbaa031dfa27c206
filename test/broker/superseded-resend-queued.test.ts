/**
 * Task route (C, a suspicion): d's m0 for c (away) is delivered to b-1, the
 * sole live holder of c's identity (P49); the records' bound pushes its
 * replay record out while its route stays; d sends m0 again, the very same
 * message, and with e holding the identity too it is queued for c
 * (RECORD_LATER on m0's record). d then supersedes m0 at b: b-1 is told,
 * and the queued copy, which no told client read, is another message under
 * the id and stays (docs/protocol.md, reviews revcg CG1, revdd DD1) — so a
 * retry of it is answered `queued`, which is true, and c's return is given
 * it. Nothing waits on time.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"
import { answersFrom, copyLeftWorld, textsOf } from "../support/withdrawnCopyLeft.ts"

describe("m0 sent again under its id after its record left, queued, then m0 superseded (task route C)", () => {
  it.effect("a retry of the queued copy is answered queued and c's return is given it", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 2 })
      w.closeAbandoned(w.reg("c", {}))
      const b1 = w.reg("b", { features: custodyFeatures, instanceId: "b-1" })
      const m0 = message("m0")
      w.send("c", m0)
      assert.deepStrictEqual(messagesAndControls(w.framesOf(b1)), [`message ${m0.id}`], "b-1 did not take m0")
      w.send("b", message("other"))
      w.send("b", message("other 2"))
      // Two live holders of c's identity (b, e): P49 queues the same message sent again.
      w.reg("e", {})
      w.send("c", m0)
      const queued = w.framesOf(w.d).flatMap((frame) =>
        frame.type === "delivered" && frame.messageId === m0.id ? [frame.delivery ?? "?"] : []
      )
      assert.deepStrictEqual(queued, ["socket_delivered", "queued"], "m0 sent again was not queued: the test sets up nothing")
      w.send("b", message("m1", { supersedes: m0.id }))
      assert.include(messagesAndControls(w.framesOf(b1)), `supersede ${m0.id}`, "b-1 was not told of the supersede: the test sets up nothing")
      const before = w.framesOf(w.d).length
      w.send("c", m0)
      const answers = answersFrom(w, before, m0.id)
      assert.strictEqual(answers.length, 1)
      assert.include(answers[0], "\"delivery\":\"queued\"", `the retry of the queued copy was answered: ${answers[0]}`)
      assert.deepStrictEqual(textsOf(w.framesOf(w.reg("c", {})), m0.id), ["m0"], "c's return was not given the queued copy")
    }))
})
