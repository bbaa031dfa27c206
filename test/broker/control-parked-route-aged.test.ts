/**
 * A cancel parked at its sender's reader while its message waits unwritten
 * in the receiver's full outbox, when that message's receipt route ages out
 * before the receiver's `unregister` hands the message back (review revao
 * AO2): after its hour (its replay record aged with it), or pushed out by
 * MAX_ROUTES newer routes (its replay record by the records' bound).
 *
 * b-1's socket takes nothing (`stick`) and its outbox holds one frame: d's
 * m0 goes into the stuck write, m1 waits in the outbox, and d's cancel of
 * m1 parks at d's reader. The route kept the cancel's withdrawal
 * (`OutboundRecord.withdrawal`) and the record its outcome; with both gone,
 * the hand-back found m1 not withdrawn and put it in the mailbox, and b-1's
 * return got m1, cancelled on its way (and the cancel given back alone at
 * the old close was kept for it). Now a route that ages out keeps its
 * withdrawal past it (OutboundRecords.ageRoute): m1 is dropped unread at the
 * hand-back, its parked cancel with it.
 *
 * On a Router driven by hand (controlWorld): each connection's frames are
 * recorded; d's drainer offers its parked items one by one (`tryDrain`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_ROUTES } from "../../src/broker/Receipts.ts"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, drainedSeen, m1StuckBehindM0, parkedControl } from "../support/controlWorld.ts"

const HOUR = 3_600_000

/** What `peer` is written, its own parked output offered one by one. */
/** The scenario of the header; `age` makes m1's route and record go (after the cancel parked, before the hand-back). */
const scenario = (
  options: { readonly replayRecords?: number },
  age: (w: Effect.Success<ReturnType<typeof world>>, clock: { now: number }) => void
) =>
  Effect.gen(function*() {
    const clock = { now: 1_000_000 }
    const w = yield* world(custodyFeatures, { mailboxRetention: 24 * HOUR, outboxCapacity: 1, ...options }, clock)
    w.stick()
    const { m0, m1 } = m1StuckBehindM0(w)
    w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
    assert.isTrue(parkedControl(w.d, w.b1), "the cancel is not parked at d's reader: the test sets up nothing")
    age(w, clock)
    w.batch(w.b1, [{ type: "unregister" }])
    for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
      // each step offers one parked item
    }
    assert.isFalse(parkedControl(w.d, w.b1), "the cancel is still parked at d's reader: the test checks nothing")
    w.closeAbandoned(w.b1)
    const back = w.registerB("b-1")
    return { seen: drainedSeen(w, back), m0: m0.id, m1: m1.id }
  })

describe("a parked cancel whose message's route aged out before the hand-back", () => {
  it.effect("after the route's hour: b-1's return gets neither m1 nor its cancel", () =>
    Effect.gen(function*() {
      const { m0, m1, seen } = yield* scenario({}, (w, clock) => {
        clock.now += HOUR + 1_000
        w.router.prune(clock.now)
      })
      assert.notInclude(seen, `message ${m1}`, "m1, cancelled on its way, reached b-1's return")
      assert.notInclude(seen, `cancel ${m1}`, "b-1's return got a cancel of m1, which it never received")
      assert.include(seen, `message ${m0}`, "m0, never confirmed, did not come back to b-1's return")
    }))

  it.effect("pushed out by MAX_ROUTES newer routes, its record by the records' bound: the same", () =>
    Effect.gen(function*() {
      const { m0, m1, seen } = yield* scenario({ replayRecords: 1_024 }, (w, clock) => {
        // Past the records' two-minute window, so the bound takes d's records first (DeliveryRecords.makeRoom).
        clock.now += 3 * 60_000
        // Another sender's mail to a reading session: one send a batch, both outboxes written before the next.
        const e = w.registerOther("e")
        const sink = w.registerOther("sink")
        for (let sent = 0; sent < MAX_ROUTES; sent++) {
          w.batch(e, [{ type: "send", to: "sink", message: message(`n${sent}`) }])
          e.writer.flush()
          sink.writer.flush()
        }
        assert.strictEqual(w.messagesOf(sink).length, MAX_ROUTES, "the routes were not pushed out: the test sets up nothing")
      })
      assert.notInclude(seen, `message ${m1}`, "m1, cancelled on its way, reached b-1's return")
      assert.notInclude(seen, `cancel ${m1}`, "b-1's return got a cancel of m1, which it never received")
      assert.include(seen, `message ${m0}`, "m0, never confirmed, did not come back to b-1's return")
    }), 120_000)
})
