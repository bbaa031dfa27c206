/**
 * Review revaq (low): a message b-1 was written and never confirmed,
 * cancelled by d while its cancel waits parked at d's reader (b-1's outbox
 * full behind a stuck write), given back at b-1's close with b away. The
 * close drops the parked cancel and keeps the message as a cancelled copy
 * for b-1 (WithdrawnCopies.keepCancelled, a cancel made again) — but the
 * mailbox's per-recipient bytes push that copy out at once. b-1, which may
 * show the message, was told nothing when it returned: now each reader's
 * cancel is kept alone for its return (KeptControls.ts), as a control given
 * back without its message is. With room for the copy, its return gets the
 * message and the cancel, as before.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, drainedSeen, parkedControl } from "../support/controlWorld.ts"

const HOUR = 3_600_000

/** What `peer` is written, its own parked output offered one by one. */
/** The scenario of the header; `perTarget`: the mailbox's bytes per recipient. What b-1's return is written. */
const scenario = (perTarget: number) =>
  Effect.gen(function*() {
    const w = yield* world(custodyFeatures, { mailboxRetention: HOUR, outboxCapacity: 1, mailboxBytesPerTarget: perTarget })
    const m1 = message("x".repeat(8_000))
    w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
    assert.include(w.messagesOf(w.b1), m1.id, "m1 was not written to b-1: the test sets up nothing")
    w.stick()
    w.batch(w.d, [{ type: "send", to: "b", message: message("m0") }])
    w.batch(w.d, [{ type: "send", to: "b", message: message("m2") }])
    w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
    assert.isTrue(parkedControl(w.d, w.b1), "the cancel is not parked at d's reader: the test sets up nothing")
    w.closeAbandoned(w.b1)
    for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
      // each step offers one parked item
    }
    const back = w.registerB("b-1")
    return { seen: drainedSeen(w, back), m1: m1.id }
  })

describe("a read message cancelled while its cancel is parked, given back with its session away", () => {
  it.effect("its kept copy pushed out of the mailbox at once: b-1's return still gets the cancel", () =>
    Effect.gen(function*() {
      const { m1, seen } = yield* scenario(4_096)
      assert.include(seen, `cancel ${m1}`, "b-1, which read m1, was never told of its cancel")
      assert.notInclude(seen, `message ${m1}`, "the copy was not pushed out: the test checks nothing")
    }))

  it.effect("its kept copy left in the mailbox: b-1's return gets m1 and one cancel (as before)", () =>
    Effect.gen(function*() {
      const { m1, seen } = yield* scenario(1_048_576)
      assert.deepStrictEqual(seen.filter((label) => label.endsWith(m1)), [`message ${m1}`, `cancel ${m1}`])
    }))
})
