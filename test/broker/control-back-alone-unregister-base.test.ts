/**
 * A base client's (no `received-v1`) cancel queued behind a write in
 * progress at its `unregister` (review revv V1). Its outbox is not handed
 * back then (Custody.handBack: handed back first, it would overtake the
 * write's rest); it comes back at the connection's close. b-1 read m0 (its
 * socket took it: delivered), d cancels m0, and the cancel waits in b-1's
 * outbox behind a write its socket never takes. If b-1 registers again on
 * a new connection only after that close, the cancel is kept for it and
 * given at its return. If it registers again before the close, the close
 * found the session live and dropped the cancel as if the connection were
 * another instance's; now it goes to that same instance, live again
 * (MailDelivery.keepAlone). Kept after an `unregister`, it does not hold a
 * memory broker's idle exit (review revv V2).
 *
 * On a Router driven by hand (controlWorld): `stick()` makes b-1's writes
 * never complete, and each connection's frames are recorded.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { baseFeatures, controlWorld as world, messagesAndControls } from "../support/controlWorld.ts"

const RETENTION_MS = 3_600_000

/** b-1 (base) is written m0; d sends mx, which sticks in b-1's write, then cancels m0; b-1 unregisters. */
const cancelBehindWriteAtUnregister = () =>
  Effect.gen(function*() {
    const w = yield* world(baseFeatures, { mailboxRetention: RETENTION_MS })
    const m0 = message("m0")
    w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
    assert.deepStrictEqual(w.messagesOf(w.b1), [m0.id], "m0 was not written to b-1: the test sets up nothing")
    w.stick()
    const mx = message("mx")
    w.batch(w.d, [{ type: "send", to: "b", message: mx }])
    w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
    assert.ok(w.b1.writer.inFlight !== undefined, "no write in progress: the test sets up nothing")
    assert.ok(w.b1.outbox.length > 0, "the cancel is not in b-1's outbox: the test sets up nothing")
    w.batch(w.b1, [{ type: "unregister" }])
    return { w, m0, mx }
  })

describe("a base client's cancel queued behind a write in progress at its unregister", () => {
  it.effect("the old connection closes first: the cancel is kept, holds no idle exit, and b-1's return gets it", () =>
    Effect.gen(function*() {
      const { m0, mx, w } = yield* cancelBehindWriteAtUnregister()
      w.closeAbandoned(w.b1)
      // mx, given back from the write, is in the mailbox; the cancel kept for b-1 holds nothing.
      assert.strictEqual(w.router.heldMail()?.messages, 1, "mx did not go back to the mailbox: the test sets up nothing")
      assert.strictEqual(w.router.heldMail()?.controls, 0)
      const back = w.registerB("b-1", baseFeatures)
      assert.deepStrictEqual(messagesAndControls(w.framesOf(back)), [`cancel ${m0.id}`, `message ${mx.id}`])
    }))

  it.effect("b-1 registers again on a new connection before the old one closes: the close gives it the cancel", () =>
    Effect.gen(function*() {
      const { m0, mx, w } = yield* cancelBehindWriteAtUnregister()
      const back = w.registerB("b-1", baseFeatures)
      w.closeAbandoned(w.b1)
      assert.deepStrictEqual(messagesAndControls(w.framesOf(back)), [`message ${mx.id}`, `cancel ${m0.id}`])
    }))

  it.effect("another instance registers before the old connection closes: it gets mx but not the cancel", () =>
    Effect.gen(function*() {
      const { mx, w } = yield* cancelBehindWriteAtUnregister()
      const other = w.registerB("b-2", baseFeatures)
      w.closeAbandoned(w.b1)
      assert.deepStrictEqual(messagesAndControls(w.framesOf(other)), [`message ${mx.id}`])
    }))
})
