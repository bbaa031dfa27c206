/**
 * Two messages under one id waiting in the mailbox at once (docs/protocol.md, "holds one message per sender and
 * id"): d sends m0's id to two sessions, each message written and left unconfirmed, and each given back — by two
 * sessions leaving, or by one leaving while the other message is queued for a session away. Each return must be
 * given its own message: neither was withdrawn. The set-up is the model-based test's shrunk op list
 * (one-id-model.test.ts, `[send b, fill 2, send z, leave z]`, then b leaves) on the hand-driven Router of
 * reused-id-give-back.test.ts; `replayRecords: 2` and two fillers push the first message's replay record out, so
 * the second send under the id is a new message. The clock is a plain number, never moved; no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Message } from "../../src/protocol/frames.ts"
import { message } from "../support/broker.ts"
import { custodyFeatures } from "../support/controlWorld.ts"
import { copyLeftWorld, type CopyLeftWorld, textsOf } from "../support/withdrawnCopyLeft.ts"

/** No send of d's was refused (the test would set up nothing). */
const noneRefused = (w: CopyLeftWorld): void => {
  const failed = w.framesOf(w.d).filter((f) => f.type === "error" || f.type === "delivery_failed")
  assert.deepStrictEqual(failed, [], "a send was refused: the test sets up nothing")
}

const m0: Message = { id: "m0", timestamp: 1, content: { text: "for b" } }

describe("two messages under one id waiting in the mailbox at once", () => {
  it.effect("given back by two sessions: each session's return is given its own message", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 2 })
      w.reg("s", {}, "S")
      const b = w.reg("b", { features: custodyFeatures, instanceId: "b-1" })
      const z = w.reg("z", { features: custodyFeatures, instanceId: "z-1" }, "Z")
      w.send("b", m0)
      for (let n = 1; n <= 2; n++) w.send("s", message(`fill ${n}`))
      w.send("z", { ...m0, content: { text: "for z" } })
      noneRefused(w)
      assert.deepStrictEqual(textsOf(w.framesOf(b), m0.id), ["for b"], "b was not written its message: the test sets up nothing")
      assert.deepStrictEqual(textsOf(w.framesOf(z), m0.id), ["for z"], "z was not written its message: the test sets up nothing")
      w.closeAbandoned(z)
      w.closeAbandoned(b)
      const zBack = w.reg("z", { features: custodyFeatures, instanceId: "z-1" }, "Z")
      const bBack = w.reg("b", { features: custodyFeatures, instanceId: "b-1" })
      assert.deepStrictEqual(textsOf(w.framesOf(zBack), m0.id), ["for z"], "z's return was not given its message back")
      assert.deepStrictEqual(textsOf(w.framesOf(bBack), m0.id), ["for b"], "b's return was not given its message back")
    }))

  it.effect("one given back while the other is queued for a session away: each session's return is given its own message", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 2 })
      w.reg("s", {}, "S")
      w.closeAbandoned(w.reg("z", { features: custodyFeatures, instanceId: "z-1" }, "Z"))
      const b = w.reg("b", { features: custodyFeatures, instanceId: "b-1" })
      w.send("b", m0)
      for (let n = 1; n <= 2; n++) w.send("s", message(`fill ${n}`))
      w.send("z", { ...m0, content: { text: "for z" } })
      noneRefused(w)
      assert.deepStrictEqual(textsOf(w.framesOf(b), m0.id), ["for b"], "b was not written its message: the test sets up nothing")
      w.closeAbandoned(b)
      const zBack = w.reg("z", { features: custodyFeatures, instanceId: "z-1" }, "Z")
      const bBack = w.reg("b", { features: custodyFeatures, instanceId: "b-1" })
      assert.deepStrictEqual(textsOf(w.framesOf(zBack), m0.id), ["for z"], "z's return was not given the message queued for it")
      assert.deepStrictEqual(textsOf(w.framesOf(bBack), m0.id), ["for b"], "b's return was not given its message back")
    }))
})
