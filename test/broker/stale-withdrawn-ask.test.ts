/**
 * A withdrawn ask past its deadline, given back with its receiver away and
 * not kept as a cancelled copy (review revl, helper ctlback): d asks b; the
 * ask is on its way to b-1 (its socket took none of the write, so b-1 never
 * read it and no copy is kept for it); d cancels it (`cancel_message`,
 * answered `delivered`) or supersedes it (accepted); the ask's deadline
 * passes; b-1's connection drops. The ask comes back over (stale) and
 * withdrawn. d was told it is withdrawn: it must not be told it expired too,
 * nor its replay record rewritten so, and b's return is asked nothing.
 *
 * On a Router driven by hand (controlWorld), its clock moved by the test.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Reason } from "../../src/protocol/delivery.ts"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"

const ASK_TIMEOUT_MS = 60_000

/** d's ask is on its way to b-1, whose socket takes nothing; d withdraws it, its deadline passes, b-1 drops. */
const withdrawnPastDeadline = (withdraw: "cancel" | "supersede") =>
  Effect.gen(function*() {
    const clock = { now: 1_000_000 }
    const w = yield* world(custodyFeatures, { askTimeout: ASK_TIMEOUT_MS }, clock)
    const ask = message("still need this?", { expectsReply: true })
    const next = message("and this?")
    w.stick()
    w.batch(w.d, [{ type: "send", to: "b", message: ask }])
    if (withdraw === "cancel") w.batch(w.d, [{ type: "cancel_message", messageId: ask.id }])
    else w.batch(w.d, [{ type: "send", to: "b", message: { ...next, supersedes: ask.id } }])
    assert.deepStrictEqual(w.messagesOf(w.b1), [], "the ask was written to b-1: the test sets up nothing")
    clock.now += ASK_TIMEOUT_MS + 1
    w.closeAbandoned(w.b1)
    return { ask, next, w }
  })

/** The receipts `frames` hold, as `status id`. */
const receipts = (frames: ReadonlyArray<{ readonly type: string; readonly receipt?: { readonly messageId: string; readonly status: string } }>) =>
  frames.flatMap((frame) => frame.type === "message_receipt" ? [`${frame.receipt?.status} ${frame.receipt?.messageId}`] : [])

describe("a withdrawn ask past its deadline, given back with its receiver away and not kept", () => {
  it.effect("cancelled: its sender gets no expired receipt, a retry still hears cancelled, and b's return is asked nothing", () =>
    Effect.gen(function*() {
      const { ask, w } = yield* withdrawnPastDeadline("cancel")
      assert.deepStrictEqual(receipts(w.framesOf(w.d)), [])
      w.batch(w.d, [{ type: "send", to: "b", message: ask }])
      assert.deepStrictEqual(w.answersOf(ask.id), ["delivered", "delivered", `failed: ${Reason.cancelled}`])
      const back = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(back)), [])
    }))

  it.effect("superseded: its sender gets no expired receipt, a retry still hears superseded, and b's return gets only the new message", () =>
    Effect.gen(function*() {
      const { ask, next, w } = yield* withdrawnPastDeadline("supersede")
      assert.deepStrictEqual(receipts(w.framesOf(w.d)), [])
      w.batch(w.d, [{ type: "send", to: "b", message: ask }])
      assert.deepStrictEqual(w.answersOf(ask.id), ["delivered", `failed: ${Reason.superseded(next.id)}`])
      const back = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(back)), [`message ${next.id}`])
    }))
})
