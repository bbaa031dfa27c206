/**
 * A `replace`-staged message handed over without its `supersedes` (the message it named was settled while it
 * waited: Send.deliverStaged rebuilds its mail without the field) keeps its place in the acceptance order
 * (`Mail[ACCEPTED]` rides on every copy of its mail), so a mailbox cancel under a reused id in a stamp tie still
 * withdraws the message accepted last (MailDelivery.newestUnder). d stages m0 ("for b", superseding p) for b, then
 * cancels p; past m0's replay record d sends m0 again to z (away), queued, at the same stamp. m0's window closes:
 * "for b" is written to b without `supersedes` and never confirmed; b's connection closes and "for b" goes back
 * behind "for z". d's cancel of m0 withdraws "for z", its latest send, and b's return is given "for b".
 * A Router driven by hand (the test flushes output queued outside a batch, as the broker's output fiber does);
 * its clock is a number the test moves once, to close the window (both messages under m0 were stamped before
 * that); nothing waits on time.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DELIVERY_V1 } from "../../src/protocol/features.ts"
import { registerFrame } from "../support/broker.ts"
import { features, noting } from "../support/custodyHold.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"
import { flushedTo, register } from "../support/handSessions.ts"

const T0 = 1_000_000
const WINDOW_MS = 1_000
const p = { id: "p", timestamp: 1, content: { text: "p" } }
const m0 = { id: "m0", timestamp: 1, content: { text: "for b" }, supersedes: p.id }

describe("a mailbox cancel under a reused id in a stamp tie, the older message staged and handed over", () => {
  it.effect("withdraws the later send (for z), not the staged message given back after it without its supersedes (for b)", () =>
    Effect.gen(function*() {
      const clock = { now: T0 }
      const hand = yield* handRouter({ replayRecords: 1, replaceWindow: WINDOW_MS }, () => clock.now)
      const writtenB: Array<string> = []
      const b = hand.attach(noting(1, writtenB))
      hand.batch(b, [registerFrame({ sessionId: "b", frame: { features, instanceId: "b-1" } })])
      register(hand, 2, "s")
      hand.close(register(hand, 3, "z"))
      const d = hand.attach(fakeConnection(4, false))
      hand.batch(d, [registerFrame({ sessionId: "d", frame: { features: [DELIVERY_V1] } })])
      hand.batch(d, [{ type: "send", to: "b", message: p }])
      hand.batch(d, [{ type: "send", to: "b", message: m0, delivery: "queue", queueMode: "replace", threadId: "t" }])
      hand.batch(d, [{ type: "cancel_message", messageId: p.id }])
      // One replay record: the fill pushes m0's out, so the next send under m0 is a new message.
      hand.batch(d, [{ type: "send", to: "s", message: { id: "fill", timestamp: 1, content: { text: "fill" } } }])
      hand.batch(d, [{ type: "send", to: "z", message: { id: m0.id, timestamp: 1, content: { text: "for z" } } }])
      clock.now = T0 + WINDOW_MS
      hand.router.staging.flushDue(clock.now)
      // What the broker's output fiber does when output is queued outside a batch (Broker.ts).
      hand.router.output.wakeTouched()
      assert.deepStrictEqual(writtenB, ["p", "for b"], "b was not written the staged m0: the test sets up nothing")
      hand.closeAbandoning(b)
      // Both under m0, and p's cancelled copy, kept for the instance of b that read it (WithdrawnCopies.ts).
      assert.strictEqual(hand.router.heldMail()?.messages, 3, "both messages under m0 are not queued: the test sets up nothing")
      hand.batch(d, [{ type: "cancel_message", messageId: m0.id }])
      const flushed = { z: flushedTo(hand, 10, "z"), b: flushedTo(hand, 11, "b") }
      assert.deepStrictEqual(flushed, { z: [], b: ["for b"] }, "d's cancel withdrew the staged \"for b\", and z was given the \"for z\" d cancelled")
    }))
})
