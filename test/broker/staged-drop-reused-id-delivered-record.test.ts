/**
 * A `replace`-staged message dropped because its recipient left (ReplaceStaging `tell`, C-DLV-9's kin) rewrites
 * only its own replay record (`rewrite`'s owner, the mail's fingerprint), not the one found by sender and id alone
 * (review rrmk item 3, the staging's kin of probe 5). d stages m0 "for b" for live b; past its replay record d sends
 * a second message under m0 to z, delivered, its record kept. b leaves before the window closes, so "for b" is
 * dropped as expired: a retry of the message for z is still answered delivered, not E_DELIVERY_EXPIRED. On a Router
 * driven by hand, the clock a plain number; no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DELIVERY_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { recordedSessions } from "../support/controlWorld.ts"
import { handRouter } from "../support/handRouter.ts"

const replace = { delivery: "queue", queueMode: "replace", threadId: "status" }

describe("a staged message dropped under a reused id", () => {
  it.effect("leaves the record of the other message under the id, delivered: its retry is answered delivered", () =>
    Effect.gen(function*() {
      const hand = yield* handRouter({ replayRecords: 2, replaceWindow: 1_000 }, () => 1_000_000)
      const { batch, close } = hand
      const { connect, framesOf } = recordedSessions(hand)
      const b = connect(1, "b")
      const z = connect(2, "z")
      connect(3, "s")
      const d = connect(4, "d", [DELIVERY_V1])
      const m0 = message("m0")
      const forZ = { ...m0, content: { text: "for z" } }
      batch(d, [{ type: "send", to: "b", message: { ...m0, content: { text: "for b" } }, ...replace }])
      // The replay bound (two records) pushes m0's record out: the next send under m0's id is a new message.
      batch(d, [{ type: "send", to: "s", message: message("other 1") }])
      batch(d, [{ type: "send", to: "s", message: message("other 2") }])
      batch(d, [{ type: "send", to: "z", message: forZ }])
      assert.strictEqual(framesOf(z).filter((f) => f.type === "message" && f.message?.id === m0.id).length, 1, "z was not written \"for z\": the test sets up nothing")
      assert.strictEqual(framesOf(b).filter((f) => f.type === "message" && f.message?.id === m0.id).length, 0, "\"for b\" was not staged: the test sets up nothing")
      close(b)
      const from = framesOf(d).length
      batch(d, [{ type: "send", to: "z", message: forZ }])
      const answers = framesOf(d).slice(from).filter((f) => f.messageId === m0.id).map((f) => f.type === "delivery_failed" ? `${f.type} ${f.code}` : f.type)
      assert.deepStrictEqual(answers, ["delivered"], `the retry of the delivered message for z was answered ${JSON.stringify(answers)}`)
      assert.strictEqual(framesOf(z).filter((f) => f.type === "message" && f.message?.id === m0.id).length, 1, "z was written \"for z\" again")
    }))
})
