/**
 * A cancel parked at its sender's reader while its message still waits,
 * unwritten, in the receiver's full outbox, when the receiver unregisters
 * (helper sim111: seed 111 of `--reader-return --client-timings`).
 *
 * b-1's socket takes nothing (`stick`) and its outbox holds one frame: d's
 * m0 is written into the stuck write, m1 waits in the outbox, and d's
 * cancel of m1 finds no room, so it parks at d's reader. b-1 unregisters:
 * its hand-back (Custody.handBack) gives m0 and m1 back, and m1, withdrawn
 * on its way and never written, is dropped (its route dropped as never
 * got). The cancel is not in b-1's lists, so the hand-back does not see it:
 * d's drainer later queues it into b-1's old connection, whose close gives
 * it back alone. It was kept there for b-1's return (MailReturns.keepAlone
 * took a control given back without its message for one whose message its
 * client confirmed), and b-1's return got a cancel of m1, which it never
 * received. Now a control whose message no instance was given
 * (Receipts.droppedUnread: withdrawn on its way, dropped never written) goes nowhere.
 *
 * On a Router driven by hand (controlWorld): each connection's frames are
 * recorded; d's drainer offers its parked items one by one (`tryDrain`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, drainedSeen, m1StuckBehindM0, parkedControl } from "../support/controlWorld.ts"

const RETENTION_MS = 3_600_000

/** What `peer` is written, its own parked output (a mailbox flush past its one-frame outbox) offered one by one. */
describe("a cancel parked behind a full outbox when its receiver unregisters, its message never written", () => {
  it.effect("b-1's return gets neither the message nor its cancel, and d's cancel was answered delivered", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: RETENTION_MS, outboxCapacity: 1 })
      w.stick()
      const { m0, m1 } = m1StuckBehindM0(w)
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      assert.isTrue(parkedControl(w.d, w.b1), "the cancel is not parked at d's reader: the test sets up nothing")
      w.batch(w.b1, [{ type: "unregister" }])
      // d's drainer offers the cancel: b-1's hand-back emptied its outbox, so it finds room there.
      for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
        // each step offers one parked item
      }
      assert.isFalse(parkedControl(w.d, w.b1), "the cancel is still parked at d's reader: the test checks nothing")
      assert.deepStrictEqual(w.answersOf(m1.id), ["delivered", "delivered"])
      w.closeAbandoned(w.b1)
      const back = w.registerB("b-1")
      const seen = drainedSeen(w, back)
      assert.notInclude(seen, `cancel ${m1.id}`, "b-1's return got a cancel of m1, which it never received")
      assert.notInclude(seen, `message ${m1.id}`, "m1, cancelled on its way, reached b-1's return")
      assert.include(seen, `message ${m0.id}`, "m0, never confirmed, did not come back to b-1's return")
    }))

  it.effect("its message confirmed first: b-1's return still gets the cancel (kept, as before)", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: RETENTION_MS, outboxCapacity: 1 })
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      w.batch(w.b1, [{ type: "received", frames: w.b1.framesWritten }])
      assert.strictEqual(w.b1.custody?.size, 0, "b-1 did not confirm m1: the test sets up nothing")
      w.stick()
      const m0 = message("m0")
      const m2 = message("m2")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "send", to: "b", message: m2 }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      assert.isTrue(parkedControl(w.d, w.b1), "the cancel is not parked at d's reader: the test sets up nothing")
      w.batch(w.b1, [{ type: "unregister" }])
      for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
        // each step offers one parked item
      }
      w.closeAbandoned(w.b1)
      const back = w.registerB("b-1")
      assert.include(drainedSeen(w, back), `cancel ${m1.id}`)
    }))

  it.effect("at a close instead: the cancel, refused at b-1's closed connection after b-1 came back, does not reach that return", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: RETENTION_MS, outboxCapacity: 1 })
      w.stick()
      const m0 = message("m0")
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      assert.isTrue(parkedControl(w.d, w.b1), "the cancel is not parked at d's reader: the test sets up nothing")
      // b-1's connection drops with m1 unwritten: m1, withdrawn on its way, is dropped; then b-1 comes back.
      w.closeAbandoned(w.b1)
      const back = w.registerB("b-1")
      // d's drainer offers the cancel to b-1's closed connection: refused, it goes where b's session is now.
      for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
        // each step offers one parked item
      }
      assert.isFalse(parkedControl(w.d, w.b1), "the cancel is still parked at d's reader: the test checks nothing")
      const seen = drainedSeen(w, back)
      assert.notInclude(seen, `cancel ${m1.id}`, "b-1's return got a cancel of m1, which it never received")
      assert.notInclude(seen, `message ${m1.id}`, "m1, cancelled on its way, reached b-1's return")
      assert.include(seen, `message ${m0.id}`, "m0, never confirmed, did not come back to b-1's return")
    }))
})
