/**
 * A control that comes back alone (helper ctlback): b-1 reads m0 and
 * confirms it; its sender then cancels (or supersedes) m0, and the broker
 * writes the control to b-1, whose connection drops before it confirms the
 * control. m0 does not come back (it was confirmed), so the control comes
 * back without it, with b away. b-1's return must still get the control (it
 * showed m0; its client must learn m0 was withdrawn); another instance never
 * saw m0, gets nothing, and leaves the control for b-1.
 *
 * On a Router driven by hand (controlWorld): writes complete at once, and
 * each connection's frames are recorded.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"

const RETENTION_MS = 3_600_000

/**
 * b-1 confirms m0, d withdraws it (`withdraw`), the control reaches b-1 unconfirmed, and b-1 drops; the
 * broker keeps mail `RETENTION_MS`, on `clock`.
 */
const readThenWithdrawnThenDropped = (withdraw: "cancel" | "supersede", clock = { now: 1_000_000 }) =>
  Effect.gen(function*() {
    const w = yield* world(custodyFeatures, { mailboxRetention: RETENTION_MS }, clock)
    const m0 = message("m0")
    w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
    w.batch(w.b1, [{ type: "received", frames: w.b1.framesWritten }])
    assert.strictEqual(w.b1.custody?.size, 0, "b-1 did not confirm m0: the test sets up nothing")
    const m1 = message("m1")
    if (withdraw === "cancel") w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
    else w.batch(w.d, [{ type: "send", to: "b", message: { ...m1, supersedes: m0.id } }])
    assert.deepStrictEqual(w.controlsOf(w.b1), [`${withdraw} ${m0.id}`], "b-1 was not written the control")
    assert.ok((w.b1.custody?.size ?? 0) > 0, "the control is not in b-1's custody: the test sets up nothing")
    w.closeAbandoned(w.b1)
    return { w, m0, m1 }
  })

describe("a control whose message was confirmed comes back alone at a drop, the session away", () => {
  it.effect("a cancel: b-1's return gets it, and d's answer stays the delivered it was", () =>
    Effect.gen(function*() {
      const { m0, w } = yield* readThenWithdrawnThenDropped("cancel")
      const back = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(back)), [`cancel ${m0.id}`])
      // The cancel was answered delivered (the control went to the client given m0), and a cancel again
      // is answered so too: nothing told d otherwise.
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered", "delivered"])
      assert.deepStrictEqual(w.controlsOf(back), [`cancel ${m0.id}`], "the cancel again was sent a second control")
    }))

  it.effect("a cancel: another instance registering b gets nothing, and b-1's return after it still gets the cancel", () =>
    Effect.gen(function*() {
      const { m0, w } = yield* readThenWithdrawnThenDropped("cancel")
      const other = w.registerB("b-2")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(other)), [])
      w.closeAbandoned(other)
      // b-2 never got m0 and takes nothing from b-1, which showed it (review revm M2: as a cancelled copy
      // stays in the mailbox for the instances that read it).
      const back = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(back)), [`cancel ${m0.id}`])
    }))

  it.effect("a cancel: kept as long as the mailbox keeps mail, and no longer", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const { m0, w } = yield* readThenWithdrawnThenDropped("cancel", clock)
      clock.now += RETENTION_MS
      const inTime = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(inTime)), [`cancel ${m0.id}`])

      const late = yield* readThenWithdrawnThenDropped("cancel", clock)
      clock.now += RETENTION_MS + 1
      const back = late.w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(late.w.framesOf(back)), [])
    }))

  it.effect("a cancel its socket never took (the write stuck): b-1's return gets it", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures)
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.b1, [{ type: "received", frames: w.b1.framesWritten }])
      assert.strictEqual(w.b1.custody?.size, 0, "b-1 did not confirm m0: the test sets up nothing")
      w.stick()
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(w.b1), [], "the cancel was written to b-1: the test sets up nothing")
      w.closeAbandoned(w.b1)
      const back = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(back)), [`cancel ${m0.id}`])
    }))

  it.effect("a supersede: b-1's return gets the supersede, then the new message it is for", () =>
    Effect.gen(function*() {
      const { m0, m1, w } = yield* readThenWithdrawnThenDropped("supersede")
      const back = w.registerB("b-1")
      const seen = messagesAndControls(w.framesOf(back))
      assert.deepStrictEqual(seen, [`supersede ${m0.id}`, `message ${m1.id}`])
    }))
})
