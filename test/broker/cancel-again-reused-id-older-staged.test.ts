/**
 * A repeat cancel under a reused id, an older message under the id still staged (`replace` mode) for another
 * recipient: the first cancel withdrew the id's newest message — staged for a second recipient (case 1), or waiting
 * in the mailbox for an away one (case 2) — and a repeat (its first answer lost, say) must be answered from that
 * message's fate and withdraw nothing else (docs/protocol.md, cancel under a reused id; review rvstg probe 1). The
 * id's replay record, which holds its last send, is the newest's, cancelled, not the staged message's: the repeat
 * is recognised by it (Cancels.namedPastStaged). Before, with the mailbox empty, the repeat went to
 * ReplaceStaging.withdraw, which took the older staged message (for b), one its sender never withdrew. The replay
 * bound (`replayRecords: 1`) and a send between make the second send under m0 a new message, not a reuse refused.
 * On a Router driven by hand, the clock in the test's hands; no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { stagedUnderOneId } from "../support/stagedUnderOneId.ts"

describe("a repeat cancel under a reused id, an older message under it staged for b", () => {
  it.effect("after the newest (staged for z) was withdrawn, is answered delivered and b is handed the older one", () =>
    Effect.gen(function*() {
      const { b, z, hand, stageTwo, answersUnderM0, cancelM0, givenM0, closeWindow } = yield* stagedUnderOneId()
      stageTwo({ to: "b", text: "for b", staged: true }, { to: "z", text: "for z", staged: true })
      assert.deepStrictEqual(answersUnderM0(), ["delivery_queued ", "delivery_queued "], "setup: both sends under m0 were not staged")
      cancelM0()
      assert.strictEqual(hand.router.staging.size, 1, "setup: the first cancel did not withdraw exactly one staged message")
      assert.deepStrictEqual(cancelM0(), ["delivered"], "the repeat was not answered delivered (the newest's fate: cancelled)")
      closeWindow()
      assert.deepStrictEqual({ b: givenM0(b), z: givenM0(z) }, { b: 1, z: 0 }, "the repeat cancel withdrew the older staged message (for b), which its sender never withdrew")
    }))

  it.effect("after the newest (waiting in the mailbox for away z) was cancelled there, is answered delivered and b is handed the older one", () =>
    Effect.gen(function*() {
      const { b, hand, stageTwo, answersUnderM0, cancelM0, givenM0, closeWindow } = yield* stagedUnderOneId(true)
      stageTwo({ to: "b", text: "for b", staged: true }, { to: "z", text: "for z", staged: false }, "b")
      assert.deepStrictEqual(answersUnderM0(), ["delivery_queued ", "delivered queued"], "setup: m0 for b was not staged, or m0 for z not queued")
      cancelM0()
      assert.deepStrictEqual(
        { mailbox: hand.router.heldMail()?.messages ?? 0, staged: hand.router.staging.size },
        { mailbox: 0, staged: 1 },
        "setup: the first cancel did not take m0 for z out of the mailbox, leaving m0 for b staged"
      )
      assert.deepStrictEqual(cancelM0(), ["delivered"], "the repeat was not answered delivered (the newest's fate: cancelled)")
      closeWindow()
      assert.strictEqual(givenM0(b), 1, "the repeat cancel withdrew the older staged message (for b), which its sender never withdrew")
    }))

  it.effect("after the newest (delivered to z) was cancelled along its route and its record left, is answered delivered and b is handed the older one", () =>
    Effect.gen(function*() {
      const { b, z, d, m0, hand, framesOf, stageTwo, answersUnderM0, cancelM0, givenM0, closeWindow } = yield* stagedUnderOneId()
      stageTwo({ to: "b", text: "for b", staged: true }, { to: "z", text: "for z", staged: false })
      assert.deepStrictEqual(answersUnderM0(), ["delivery_queued ", "delivered socket_delivered"], "setup: m0 for b was not staged, or m0 for z not delivered")
      cancelM0()
      const control = framesOf(z).filter((f) => f.type === "message_control" && f.control?.messageId === m0.id).length
      assert.strictEqual(control, 1, "setup: the first cancel did not go along m0's route to z")
      // The replay bound (one record) pushes m0's record out; its route, cancelled, stays.
      hand.batch(d, [{ type: "send", to: "z", message: message("another") }])
      assert.deepStrictEqual(cancelM0(), ["delivered"], "the repeat was not answered delivered (the newest's fate: cancelled)")
      closeWindow()
      assert.strictEqual(givenM0(b), 1, "the repeat cancel withdrew the older staged message (for b), which its sender never withdrew")
    }))
})
