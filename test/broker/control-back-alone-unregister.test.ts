/**
 * A control handed back alone at an `unregister` (helper unregctl): b-1, a
 * `received-v1` client, reads m0 and confirms it; its sender cancels (or
 * supersedes) m0 and the broker writes the control to b-1, which sends
 * `unregister` before it confirms the control. Its custody hands back what
 * it never confirmed (Custody.handBack): the control, without m0. It was
 * dropped there, while the same control given back at a close is kept for
 * b-1's return (control-back-alone.test.ts) — and the same instance may
 * register again after its own `unregister` (docs/protocol.md). Now it is
 * kept as at a close (MailDelivery.giveBack, `keepAlone`), but not for a
 * short-lived session that ended by `unregister`: it never comes back; and
 * kept at an `unregister`, it does not hold a memory broker's idle exit
 * (review revv V2).
 *
 * On a Router driven by hand (controlWorld): writes complete at once, and
 * each connection's frames are recorded.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { EPHEMERAL_V1 } from "../../src/protocol/features.ts"
import { message, registerFrame } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"

const RETENTION_MS = 3_600_000

/** b-1 confirms m0, d withdraws it (`withdraw`), the control reaches b-1 unconfirmed, and b-1 unregisters. */
const readThenWithdrawnThenUnregistered = (withdraw: "cancel" | "supersede") =>
  Effect.gen(function*() {
    const w = yield* world(custodyFeatures, { mailboxRetention: RETENTION_MS })
    const m0 = message("m0")
    w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
    w.batch(w.b1, [{ type: "received", frames: w.b1.framesWritten }])
    assert.strictEqual(w.b1.custody?.size, 0, "b-1 did not confirm m0: the test sets up nothing")
    const m1 = message("m1")
    if (withdraw === "cancel") w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
    else w.batch(w.d, [{ type: "send", to: "b", message: { ...m1, supersedes: m0.id } }])
    assert.deepStrictEqual(w.controlsOf(w.b1), [`${withdraw} ${m0.id}`], "b-1 was not written the control")
    assert.ok((w.b1.custody?.size ?? 0) > 0, "the control is not in b-1's custody: the test sets up nothing")
    assert.strictEqual(w.router.heldMail(), undefined, "something is held already: the test sets up nothing")
    w.batch(w.b1, [{ type: "unregister" }])
    return { w, m0, m1 }
  })

describe("a control whose message was confirmed comes back alone at its reader's unregister", () => {
  it.effect("a cancel: b-1 registering again on the same connection gets it; d's answers stay delivered", () =>
    Effect.gen(function*() {
      const { m0, w } = yield* readThenWithdrawnThenUnregistered("cancel")
      const before = w.framesOf(w.b1).length
      w.batch(w.b1, [registerFrame({ sessionId: "b", frame: { features: custodyFeatures, instanceId: "b-1" } })])
      assert.deepStrictEqual(messagesAndControls(w.framesOf(w.b1).slice(before)), [`cancel ${m0.id}`])
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered"])
    }))

  it.effect("a cancel: b-1 registering again on a new connection gets it", () =>
    Effect.gen(function*() {
      const { m0, w } = yield* readThenWithdrawnThenUnregistered("cancel")
      const back = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(back)), [`cancel ${m0.id}`])
      assert.strictEqual(w.router.heldMail(), undefined, "still held after b-1's return took it")
    }))

  it.effect("a supersede: b-1's return gets the supersede, then the new message it is for", () =>
    Effect.gen(function*() {
      const { m0, m1, w } = yield* readThenWithdrawnThenUnregistered("supersede")
      const back = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(back)), [`supersede ${m0.id}`, `message ${m1.id}`])
    }))

  it.effect("kept, it holds no idle exit; another instance's registration gets none and leaves it for b-1", () =>
    Effect.gen(function*() {
      const { m0, w } = yield* readThenWithdrawnThenUnregistered("cancel")
      // Kept at an `unregister`, not at a close (review revv V2: idle-exit-unregister-kept-controls.test.ts).
      assert.strictEqual(w.router.heldMail(), undefined)
      const other = w.registerB("b-2")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(other)), [])
      w.closeAbandoned(other)
      const back = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(back)), [`cancel ${m0.id}`])
    }))

  it.effect("a short-lived session that ended by unregister: nothing is kept for it", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: RETENTION_MS })
      w.batch(w.b1, [{ type: "unregister" }])
      const once = w.registerB("b-9", [...custodyFeatures, EPHEMERAL_V1], { ephemeral: true })
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(once, [{ type: "received", frames: once.framesWritten }])
      assert.strictEqual(once.custody?.size, 0, "b-9 did not confirm m0: the test sets up nothing")
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(once), [`cancel ${m0.id}`], "b-9 was not written the control")
      assert.ok((once.custody?.size ?? 0) > 0, "the control is not in b-9's custody: the test sets up nothing")
      w.batch(once, [{ type: "unregister" }])
      assert.strictEqual(w.router.heldMail(), undefined)
    }))
})

describe("a control still queued at its reader's unregister, behind a write its socket never took", () => {
  it.effect("its message confirmed: b-1's return gets the cancel, ahead of the mail given back", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: RETENTION_MS })
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.b1, [{ type: "received", frames: w.b1.framesWritten }])
      assert.strictEqual(w.b1.custody?.size, 0, "b-1 did not confirm m0: the test sets up nothing")
      w.stick()
      const mx = message("mx")
      w.batch(w.d, [{ type: "send", to: "b", message: mx }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.ok(w.b1.outbox.length > 0, "the cancel is not in b-1's outbox: the test sets up nothing")
      w.batch(w.b1, [{ type: "unregister" }])
      const back = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(back)), [`cancel ${m0.id}`, `message ${mx.id}`])
    }))

  it.effect("its message given back with it: b-1's return gets the message and one cancel, none kept alone", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: RETENTION_MS })
      w.stick()
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.ok(w.b1.outbox.length > 0, "the cancel is not in b-1's outbox: the test sets up nothing")
      w.batch(w.b1, [{ type: "unregister" }])
      assert.strictEqual(w.router.heldMail()?.controls, 0, "the cancel was kept alone besides its message's copy")
      const back = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(back)), [`message ${m0.id}`, `cancel ${m0.id}`])
    }))
})
