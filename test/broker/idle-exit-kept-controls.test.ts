/**
 * What a memory broker's idle watcher waits for (`Router.heldMail`,
 * Broker.ts): a control given back alone and kept for the client instance
 * it was written to (KeptControls.ts) holds it as the mailbox's mail does —
 * a cancelled copy kept for its readers among that mail — until that
 * instance's return takes it or the mailbox's retention lets it go. It used
 * not to count, so a memory broker could exit and forget it while a
 * cancelled copy, kept for the same reason, held it up.
 *
 * On a Router driven by hand (controlWorld): the watcher's own sleep and
 * exit are tested on simulated time in idle-exit-held-mail.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"

const RETENTION_MS = 3_600_000

/** b-1 confirms m0, d cancels it, the cancel reaches b-1 unconfirmed, and b-1 drops at `clock.now`. */
const controlKeptForB1 = (clock: { now: number }) =>
  Effect.gen(function*() {
    const w = yield* world(custodyFeatures, { mailboxRetention: RETENTION_MS }, clock)
    const m0 = message("m0")
    w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
    w.batch(w.b1, [{ type: "received", frames: w.b1.framesWritten }])
    w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
    assert.deepStrictEqual(w.controlsOf(w.b1), [`cancel ${m0.id}`], "b-1 was not written the control")
    assert.strictEqual(w.router.heldMail(), undefined, "something is held already: the test sets up nothing")
    w.closeAbandoned(w.b1)
    return { w, m0 }
  })

describe("a memory broker's idle exit and the controls kept for an absent client", () => {
  it.effect("a kept control is held until the mailbox's retention after it was kept, then let go", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const { w } = yield* controlKeptForB1(clock)
      const keptAt = clock.now
      assert.deepStrictEqual(w.router.heldMail(), { messages: 0, notices: 0, controls: 1, until: keptAt + RETENTION_MS + 1 })
      clock.now = keptAt + RETENTION_MS
      w.router.prune(clock.now)
      assert.strictEqual(w.router.heldMail()?.controls, 1, "let go before the retention ran out")
      clock.now = keptAt + RETENTION_MS + 1
      w.router.prune(clock.now)
      assert.strictEqual(w.router.heldMail(), undefined)
    }))

  it.effect("b-1's return takes it: nothing is held after", () =>
    Effect.gen(function*() {
      const { m0, w } = yield* controlKeptForB1({ now: 1_000_000 })
      const back = w.registerB("b-1")
      assert.deepStrictEqual(messagesAndControls(w.framesOf(back)), [`cancel ${m0.id}`])
      assert.strictEqual(w.router.heldMail(), undefined)
    }))

  it.effect("another instance's registration leaves it held for b-1", () =>
    Effect.gen(function*() {
      const { w } = yield* controlKeptForB1({ now: 1_000_000 })
      w.closeAbandoned(w.registerB("b-2"))
      assert.strictEqual(w.router.heldMail()?.controls, 1)
    }))
})
