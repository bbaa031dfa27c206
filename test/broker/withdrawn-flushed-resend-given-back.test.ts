/**
 * Task cg2tie (message loss, found by helper route): the resend under the id
 * of a withdrawn message whose record never held a fingerprint (flushed from
 * the mailbox after its replay record was pushed out, `replayRecords: 1`,
 * so Receipts.addRoute made its route on an empty record; review revcg CG2),
 * given back unconfirmed itself, carries the very stamp DeliveryRecords.keep
 * noted the forgotten withdrawal with. withdrawnBeforeResend found it
 * withdrawn (the stamp alone told, and a tie counted as withdrawn), so its
 * receiver's return got nothing. Now a tie is told by the resend's own
 * content, kept with the note; a message received before the resend is
 * still found withdrawn. One test per way the resend or the withdrawal can
 * go: written at once or queued first, cancelled or superseded, and the
 * withdrawn message itself at the resend's stamp. A stuck connection is one
 * whose writes never complete (controlWorld's `stick`); the clock is a plain
 * number moved by hand, no sleep; the step back in the last test is its
 * modelled fault.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { type CopyLeftWorld, copyLeftWorld, HOUR, textsOf } from "../support/withdrawnCopyLeft.ts"
import type { Peer } from "../../src/broker/Peer.ts"
import type { Message } from "../../src/protocol/frames.ts"

/**
 * CG2's set-up on `w`: d's m0 to b (away) is queued, its replay record pushed out by a send to z, and flushed to
 * b's return on a stuck connection (b-1): its route is made on a record with no fingerprint.
 */
const flushedWithoutRecord = (w: CopyLeftWorld): { readonly m0: Message; readonly b1: Peer } => {
  w.closeAbandoned(w.reg("b", {}))
  w.reg("z", {}, "Z")
  const m0 = message("m0")
  w.send("b", m0)
  w.send("z", message("other"))
  const b1 = w.reg("b", {}, "B", true)
  return { m0, b1 }
}

/** d's refusals (`delivery_failed`, `error`) so far: a set-up step d's broker refused sets up nothing. */
const refusals = (w: CopyLeftWorld): ReadonlyArray<string> =>
  w.framesOf(w.d).flatMap((f) => (f.type === "delivery_failed" || f.type === "error") ? [f.type] : [])

/**
 * Past the replay window, d resends m0's id with other text to y, written at once to y's stuck connection, which
 * gives it back; b-1 closes too: what y's and b's returns get under m0's id (`refused`: d's refusals before that).
 */
const resendGivenBack = (w: CopyLeftWorld, b1: Peer, m0: Message) => {
  w.clock.now += HOUR + 1_000
  const y = w.reg("y", {}, "Y", true)
  w.send("y", { ...m0, content: { text: "m0 again" } })
  const refused = refusals(w)
  w.closeAbandoned(y)
  const y2 = w.reg("y", {}, "Y")
  w.closeAbandoned(b1)
  const b = w.reg("b", {})
  return { refused, got: { b: textsOf(w.framesOf(b), m0.id), y: textsOf(w.framesOf(y2), m0.id) } }
}

describe("a resend under the id of a flushed message withdrawn without its record, given back itself (task cg2tie)", () => {
  it.effect("written at once to y and given back: y's return gets the resend, b's return nothing of the cancelled m0", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 1 })
      const { b1, m0 } = flushedWithoutRecord(w)
      w.cancel(m0.id)
      const { got, refused } = resendGivenBack(w, b1, m0)
      assert.deepStrictEqual(refused, [], "d's cancel or resend was refused: the test sets up nothing")
      assert.deepStrictEqual(
        got,
        { b: [], y: ["m0 again"] },
        "the resend given back was lost (or the cancelled m0 came back live)"
      )
    }))

  it.effect("queued for y, flushed to its stuck connection and given back: y's return gets the resend", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 1 })
      const { b1, m0 } = flushedWithoutRecord(w)
      w.cancel(m0.id)
      w.clock.now += HOUR + 1_000
      w.closeAbandoned(w.reg("y", {}, "Y"))
      w.send("y", { ...m0, content: { text: "m0 again" } })
      assert.deepStrictEqual(refusals(w), [], "d's cancel or resend was refused: the test sets up nothing")
      const y1 = w.reg("y", {}, "Y", true)
      w.closeAbandoned(y1)
      const y2 = w.reg("y", {}, "Y")
      w.closeAbandoned(b1)
      assert.deepStrictEqual(textsOf(w.framesOf(y2), m0.id), ["m0 again"], "the resend, flushed and given back, was lost")
    }))

  it.effect("after a supersede of m0, written at once to y and given back: y's return gets the resend, b's return nothing of m0", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 1 })
      const { b1, m0 } = flushedWithoutRecord(w)
      w.send("b", message("m1", { supersedes: m0.id }))
      const { got, refused } = resendGivenBack(w, b1, m0)
      assert.deepStrictEqual(refused, [], "d's supersede or resend was refused: the test sets up nothing")
      assert.deepStrictEqual(
        got,
        { b: [], y: ["m0 again"] },
        "the resend given back was lost (or the superseded m0 came back live)"
      )
    }))

  it.effect("m0 at the resend's stamp (the clock stepped back): b's return gets nothing of the cancelled m0, y's return the resend", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 + 3 * HOUR }
      const w = yield* copyLeftWorld({ replayRecords: 1 }, clock)
      // A stamp given at the later reading; the clock then steps back three hours, so every stamp below is this one.
      w.reg("x", {}, "X")
      w.send("x", message("before the step back"))
      clock.now = 1_000_000
      const { b1, m0 } = flushedWithoutRecord(w)
      w.cancel(m0.id)
      const { got, refused } = resendGivenBack(w, b1, m0)
      assert.deepStrictEqual(refused, [], "d's cancel or resend was refused: the test sets up nothing")
      assert.deepStrictEqual(
        got,
        { b: [], y: ["m0 again"] },
        "in the stamp tie the resend was lost or the cancelled m0 came back live"
      )
    }))
})
