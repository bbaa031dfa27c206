/**
 * Review revrc P4 and helper ctl3: the broker remembers the client instances
 * that held each session id since it started (their `instanceId` and
 * `Session.instance`, in ClientInstances, noted as each stops holding the
 * id), so a registration of a departed id by one of those clients — its
 * reconnect, or its register after its own `unregister`, in any group, after
 * others used the id meanwhile (review revc L1, L2) — continues that
 * instance, and one by another client is a new instance.
 *
 * Before, any registration with no session live under its id was "an
 * unknown instance", taken for any earlier one: a cancel of a message the
 * departed holder had confirmed reading was written to a new client that
 * never got it, and its sender was answered `delivered`. So was a cancel of
 * an ask withdrawn unanswered whose copy came back at the holder's close
 * (ctl3's case), while the same client's return must still get it (review
 * D3: it may show the ask).
 *
 * On a Router driven by hand (control-instance.test.ts's world): writes
 * complete at once, and each connection's frames are recorded.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Reason } from "../../src/protocol/delivery.ts"
import { EPHEMERAL_V1, GROUPS_V1, RECEIVED_V1, TAKEOVER_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures } from "../support/controlWorld.ts"

const cannotCancel = `failed: ${Reason.cannotCancel}`

/** A world in which b-1 was sent m0 by d and confirmed reading it. */
const confirmed = Effect.gen(function*() {
  const w = yield* world(custodyFeatures)
  const m0 = message("m0")
  w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
  w.batch(w.b1, [{ type: "received", frames: w.b1.framesWritten }])
  assert.strictEqual(w.b1.custody?.size, 0, "b-1 did not confirm m0: the test sets up nothing")
  return { w, m0 }
})

describe("another client registers the id of a session that left", () => {
  it.effect("after its holder unregistered: the new client is not sent the cancel of a message the holder confirmed, and the sender is told it cannot be cancelled", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* confirmed
      w.batch(w.b1, [{ type: "unregister" }])
      const b2 = w.registerB("b-2")
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(b2), [], "the new client was sent a cancel of a message it never got")
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", cannotCancel])
    }))

  it.effect("after its holder's connection closed: the new client is not sent the cancel, and the sender is told it cannot be cancelled", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* confirmed
      w.closeAbandoned(w.b1)
      const b2 = w.registerB("b-2")
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(b2), [], "the new client was sent a cancel of a message it never got")
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", cannotCancel])
    }))

  it.effect("with no instanceId at all (rejoin-v1 not asked for): it is another client, not sent the cancel", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* confirmed
      w.closeAbandoned(w.b1)
      const b2 = w.registerB("b-2", [RECEIVED_V1, TAKEOVER_V1])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(b2), [])
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", cannotCancel])
    }))

  it.effect("a supersede of the message the holder confirmed: the new client gets the new message without the supersede", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* confirmed
      w.batch(w.b1, [{ type: "unregister" }])
      const b2 = w.registerB("b-2")
      const m1 = message("m1", { supersedes: m0.id })
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      assert.deepStrictEqual(w.messagesOf(b2), [m1.id])
      assert.deepStrictEqual(w.controlsOf(b2), [], "the new client was sent a supersede of a message it never got")
    }))
})

describe("the same client registers its id again after it left", () => {
  it.effect("after its own unregister, on a new connection: the cancel goes to it, answered delivered", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* confirmed
      w.batch(w.b1, [{ type: "unregister" }])
      const again = w.registerB("b-1")
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(again), [`cancel ${m0.id}`])
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered"])
    }))
})

describe("an ask withdrawn unanswered, its unconfirmed copy given back by the holder's close (ctl3)", () => {
  /** d's ask m0 in b-1's custody, withdrawn by d; b-1's connection closes, and the stale copy is dropped. */
  const withdrawnThenClosed = Effect.gen(function*() {
    const w = yield* world(custodyFeatures)
    const m0 = message("still need this?", { expectsReply: true })
    w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
    assert.strictEqual(w.b1.custody?.size, 1, "the ask is not in b-1's custody: the test sets up nothing")
    w.batch(w.d, [{ type: "cancel_ask", messageId: m0.id }])
    w.closeAbandoned(w.b1)
    return { w, m0 }
  })

  it.effect("another client then registers the id: it is not sent a cancel of the ask it never got, and the sender is told it cannot be cancelled", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* withdrawnThenClosed
      const b2 = w.registerB("b-2")
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.messagesOf(b2), [], "the new client was given the withdrawn ask")
      assert.deepStrictEqual(w.controlsOf(b2), [], "the new client was sent a cancel of an ask it never got")
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", cannotCancel])
    }))

  it.effect("the same client reconnects: the cancel reaches it, which may still show the ask (review D3)", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* withdrawnThenClosed
      const again = w.registerB("b-1")
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(again), [`cancel ${m0.id}`], "answered delivered, but the client that may show the ask was not told")
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered"])
    }))
})

describe("a client that leaves no instance of its own between the holder and another client (review revc L1)", () => {
  /** b-1 confirmed m0 and unregistered; a middle client registered `b` with `features` and `extra`, and unregistered. */
  const middleLeft = (instanceId: string | undefined, features: ReadonlyArray<string>, extra: Readonly<Record<string, unknown>> = {}) =>
    Effect.gen(function*() {
      const { w, m0 } = yield* confirmed
      w.batch(w.b1, [{ type: "unregister" }])
      const middle = w.registerB(instanceId, features, extra)
      assert.strictEqual(middle.session?.id, "b", "the middle client did not register: the test sets up nothing")
      w.batch(middle, [{ type: "unregister" }])
      return { w, m0 }
    })

  it.effect("a middle client without an instanceId: a third client is not sent the cancel of the holder's message, and the sender is told it cannot be cancelled", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* middleLeft(undefined, [RECEIVED_V1, TAKEOVER_V1])
      const b3 = w.registerB("b-3")
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(b3), [], "the third client was sent a cancel of a message it never got")
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", cannotCancel])
    }))

  it.effect("a short-lived middle client: a third client is not sent the cancel of the holder's message, and the sender is told it cannot be cancelled", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* middleLeft("b-2", [...custodyFeatures, EPHEMERAL_V1], { ephemeral: true })
      const b3 = w.registerB("b-3")
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(b3), [], "the third client was sent a cancel of a message it never got")
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", cannotCancel])
    }))

  it.effect("the holder itself comes back after a middle client without an instanceId: the cancel goes to it, answered delivered", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* middleLeft(undefined, [RECEIVED_V1, TAKEOVER_V1])
      const again = w.registerB("b-1")
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(again), [`cancel ${m0.id}`])
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered"])
    }))
})

describe("the holder's return to its group after another client used the id in another group (review revc L2)", () => {
  it.effect("the cancel of a message the holder confirmed goes to it, answered delivered", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* confirmed
      w.batch(w.b1, [{ type: "unregister" }])
      const elsewhere = w.registerB("b-2", [...custodyFeatures, GROUPS_V1], { group: "g2" })
      assert.strictEqual(elsewhere.session?.group, "g2", "b-2 did not register in g2: the test sets up nothing")
      w.batch(elsewhere, [{ type: "unregister" }])
      const again = w.registerB("b-1", [...custodyFeatures, GROUPS_V1])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(again), [`cancel ${m0.id}`], "the holder's own return was not sent the cancel")
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered"])
    }))
})

describe("the holder's return after another client took the id over from it and left (its holder noted at the takeover)", () => {
  it.effect("in its group: the cancel of a message the holder confirmed goes to it, answered delivered", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* confirmed
      const taker = w.registerB("b-2")
      assert.strictEqual(w.b1.session, undefined, "b-2 did not take b over: the test sets up nothing")
      w.batch(taker, [{ type: "unregister" }])
      const again = w.registerB("b-1")
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(again), [`cancel ${m0.id}`], "the holder's own return was not sent the cancel")
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered"])
    }))

  it.effect("from another group: the cancel of a message the holder confirmed goes to it, answered delivered", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* confirmed
      const taker = w.registerB("b-2", [...custodyFeatures, GROUPS_V1], { group: "g2" })
      assert.strictEqual(taker.session?.group, "g2", "b-2 did not register in g2: the test sets up nothing")
      // The holder's connection ends (Groups.ts ends it): its session leaves after its taker took the id.
      w.closeAbandoned(w.b1)
      assert.strictEqual(w.b1.session, undefined, "b-1's session did not leave: the test sets up nothing")
      w.batch(taker, [{ type: "unregister" }])
      const again = w.registerB("b-1", [...custodyFeatures, GROUPS_V1])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(again), [`cancel ${m0.id}`], "the holder's own return was not sent the cancel")
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered"])
    }))
})

describe("the holder takes its id back from another client that registered it while the holder was away (review revg G2)", () => {
  it.effect("in its group: the cancel of m0, which the holder confirmed, reaches it, answered delivered", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* confirmed
      w.closeAbandoned(w.b1)
      const b2 = w.registerB("b-2")
      assert.strictEqual(b2.session?.id, "b", "b-2 did not register b: the test sets up nothing")
      const again = w.registerB("b-1")
      assert.strictEqual(b2.session, undefined, "b-1 did not take b over: the test sets up nothing")
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(again), [`cancel ${m0.id}`], "the holder's own return was not sent the cancel")
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered"])
    }))

  it.effect("from another group: the cancel of m0 reaches the holder back in its group, answered delivered", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* confirmed
      const taker = w.registerB("b-2", [...custodyFeatures, GROUPS_V1], { group: "g2" })
      assert.strictEqual(taker.session?.group, "g2", "b-2 did not register in g2: the test sets up nothing")
      w.closeAbandoned(w.b1)
      const again = w.registerB("b-1", [...custodyFeatures, GROUPS_V1])
      assert.strictEqual(again.session?.id, "b", "b-1 did not register b: the test sets up nothing")
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(again), [`cancel ${m0.id}`], "the holder's own return was not sent the cancel")
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered"])
    }))

  it.effect("a taker that never held the id is a new instance: the cancel of m0 is not written to it", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* confirmed
      w.closeAbandoned(w.b1)
      w.registerB("b-2")
      const b3 = w.registerB("b-3")
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(b3), [], "a client that never held m0 was sent its cancel")
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", cannotCancel])
    }))
})
