/**
 * Review ctl2: a sender's cancel or supersede (`message_control`) reaches
 * only the client instance that was given the message it is about.
 *
 * A receipt route names the receiver by session, and once named it by
 * session only: a cancel after another instance took the session over
 * (P16, a new `instanceId`) was written to that instance, which never got
 * the message — its client would take the cancel of an unknown id for a
 * message and answer the sender. Now the route records the instance given
 * the message (`OutboundRecord.receiverInstance`; moved on when the message
 * is handed on to the new connection), and a cancel the new instance cannot
 * act on is answered "cannot be cancelled" (the message was delivered to an
 * instance that is gone) — while the client's own rejoin, or a registration
 * with no session live (its reconnect, which the broker cannot tell from
 * another client), still gets it. A cancel repeated on a message
 * cancelled already is answered as the first was without a second control,
 * and a message whose sender withdrew it never goes to a new instance.
 *
 * On a Router driven by hand (no fibers): writes complete at once (or, for
 * a stuck connection, never), and each connection's frames are recorded.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { MAX_ROUTES } from "../../src/broker/Receipts.ts"
import { closePeer } from "../../src/broker/RouterContext.ts"
import { Reason } from "../../src/protocol/delivery.ts"
import { message } from "../support/broker.ts"
import { baseFeatures, controlWorld as world, custodyFeatures } from "../support/controlWorld.ts"

describe("a cancel after another instance took the receiver's session over", () => {
  it.effect("the old instance confirmed the message: the new one is not sent the cancel, and the sender is told it cannot be cancelled", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures)
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.b1, [{ type: "received", frames: w.b1.framesWritten }])
      assert.strictEqual(w.b1.custody?.size, 0, "b-1 did not confirm m0: the test sets up nothing")
      const b2 = w.registerB("b-2")
      w.closeAbandoned(w.b1)
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(b2), [], "the new instance was sent a cancel of a message it never got")
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", `failed: ${Reason.cannotCancel}`])
    }))

  it.effect("a base old client's write of the message still in progress: the cancel is refused, and the message the close gives back reaches the new instance alone", () =>
    Effect.gen(function*() {
      const w = yield* world(baseFeatures)
      const m0 = message("m0")
      w.stick()
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      const b2 = w.registerB("b-2")
      assert.strictEqual(b2.custodyHolds, 0, "a hold was taken for a base client: the test sets up nothing")
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      // The socket never took the write: the close gives m0 back, to the session's connection now.
      w.closeAbandoned(w.b1)
      assert.deepStrictEqual(w.controlsOf(b2), [], "the new instance was sent a cancel of a message it was not given")
      assert.deepStrictEqual(w.messagesOf(b2), [m0.id])
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", `failed: ${Reason.cannotCancel}`])
    }))

  it.effect("the message handed on to the new instance at the close: a cancel after that reaches it", () =>
    Effect.gen(function*() {
      const w = yield* world(baseFeatures)
      const m0 = message("m0")
      w.stick()
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      const b2 = w.registerB("b-2")
      w.closeAbandoned(w.b1)
      assert.deepStrictEqual(w.messagesOf(b2), [m0.id], "m0 was not given back to b-2: the test sets up nothing")
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(b2), [`cancel ${m0.id}`])
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered"])
    }))

  it.effect("the message handed on to the new instance after newer routes pushed its route out: a cancel after that reaches it", () =>
    Effect.gen(function*() {
      const w = yield* world(baseFeatures)
      const m0 = message("m0")
      w.stick()
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      // MAX_ROUTES newer routes: m0's is pushed out; its replay record, which names b-1, is kept.
      const sink = w.registerOther("sink")
      for (let sent = 0; sent < MAX_ROUTES; sent += 1_024) {
        w.batch(w.d, Array.from({ length: 1_024 }, (_, i) => ({ type: "send", to: "sink", message: message(`m${sent + i + 1}`) })))
      }
      assert.strictEqual(w.messagesOf(sink).length, MAX_ROUTES, "the newer messages were not all delivered: the test sets up nothing")
      const b2 = w.registerB("b-2")
      w.closeAbandoned(w.b1)
      assert.deepStrictEqual(w.messagesOf(b2), [m0.id], "m0 was not given back to b-2: the test sets up nothing")
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(b2), [`cancel ${m0.id}`])
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered"])
    }))

  it.effect("a supersede: the new instance gets the new message, not the supersede of one it never got", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures)
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.b1, [{ type: "received", frames: w.b1.framesWritten }])
      const b2 = w.registerB("b-2")
      w.closeAbandoned(w.b1)
      const m1 = message("m1", { supersedes: m0.id })
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      assert.deepStrictEqual(w.controlsOf(b2), [])
      assert.deepStrictEqual(w.messagesOf(b2), [m1.id])
    }))
})

describe("a cancel or supersede while a takeover's custody hold covers the sender for another message", () => {
  /** d's m0 confirmed by b-1, then m5 left in b-1's custody; b-2 takes b over and holds d's mail behind that custody. */
  const confirmedThenHeld = Effect.gen(function*() {
    const w = yield* world(custodyFeatures)
    const m0 = message("m0")
    w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
    w.batch(w.b1, [{ type: "received", frames: w.b1.framesWritten }])
    assert.strictEqual(w.b1.custody?.size, 0, "b-1 did not confirm m0: the test sets up nothing")
    const m5 = message("m5")
    w.batch(w.d, [{ type: "send", to: "b", message: m5 }])
    assert.strictEqual(w.b1.custody?.size, 1, "m5 is not in b-1's custody: the test sets up nothing")
    const b2 = w.registerB("b-2")
    assert.ok(b2.custodyHolds > 0, "no hold was taken: the test sets up nothing")
    return { w, m0, m5, b2 }
  })

  /** Closes b-1 and lets d's drainer offer what its batches parked behind the hold. */
  const closeOld = (w: {
    readonly b1: Peer
    readonly d: Peer
    readonly closeAbandoned: (peer: Peer) => void
    readonly tryDrain: (peer: Peer) => boolean
  }): void => {
    w.closeAbandoned(w.b1)
    for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
      // each step offers one parked item
    }
  }

  it.effect("a cancel of the message the old instance confirmed: the new one is not sent it, and the sender is told it cannot be cancelled", () =>
    Effect.gen(function*() {
      const { w, m0, m5, b2 } = yield* confirmedThenHeld
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      closeOld(w)
      assert.deepStrictEqual(
        { controls: w.controlsOf(b2), messages: w.messagesOf(b2), answers: w.answersOf(m0.id) },
        { controls: [], messages: [m5.id], answers: ["delivered", `failed: ${Reason.cannotCancel}`] }
      )
    }))

  it.effect("a supersede of the message the old instance confirmed: the new one gets the messages alone", () =>
    Effect.gen(function*() {
      const { w, m0, m5, b2 } = yield* confirmedThenHeld
      const m1 = message("m1", { supersedes: m0.id })
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      closeOld(w)
      assert.deepStrictEqual({ controls: w.controlsOf(b2), messages: w.messagesOf(b2) }, {
        controls: [],
        messages: [m5.id, m1.id]
      })
    }))

  it.effect("a cancel of the message still in the old custody: the new one gets it given back, then the cancel", () =>
    Effect.gen(function*() {
      const { w, m5, b2 } = yield* confirmedThenHeld
      w.batch(w.d, [{ type: "cancel_message", messageId: m5.id }])
      closeOld(w)
      assert.deepStrictEqual(
        { controls: w.controlsOf(b2), messages: w.messagesOf(b2), answers: w.answersOf(m5.id) },
        { controls: [`cancel ${m5.id}`], messages: [m5.id], answers: ["delivered", "delivered"] }
      )
    }))
})

describe("a cancel reaches the instance given the message on its next connection", () => {
  it.effect("its own rejoin (the same instanceId): the cancel goes to the new connection", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures)
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.b1, [{ type: "received", frames: w.b1.framesWritten }])
      const again = w.registerB("b-1")
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(again), [`cancel ${m0.id}`])
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered"])
    }))

  it.effect("its reconnect after its connection closed (no session live: not told from the instance given the message): the cancel goes to it", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures)
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.b1, [{ type: "received", frames: w.b1.framesWritten }])
      w.closeAbandoned(w.b1)
      const again = w.registerB("b-1")
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(again), [`cancel ${m0.id}`])
    }))
})

describe("a cancel repeated on a message cancelled already", () => {
  it.effect("is answered delivered again, and the receiver is sent the control once", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures)
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(w.b1), [`cancel ${m0.id}`])
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered", "delivered"])
    }))
})

describe("a message withdrawn on its way, given back after a takeover by another instance", () => {
  it.effect("cancelled while in the old custody (the cancel written there too): neither reaches the new instance", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures)
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      const b2 = w.registerB("b-2")
      w.closeAbandoned(w.b1)
      assert.deepStrictEqual(w.messagesOf(b2), [], "the new instance was given a message its sender withdrew")
      assert.deepStrictEqual(w.controlsOf(b2), [])
    }))

  it.effect("superseded while in the old custody: the new instance gets only the message that replaced it", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures)
      const m0 = message("m0")
      const m1 = message("m1", { supersedes: m0.id })
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      const b2 = w.registerB("b-2")
      w.closeAbandoned(w.b1)
      assert.deepStrictEqual(w.messagesOf(b2), [m1.id])
      assert.deepStrictEqual(w.controlsOf(b2), [])
    }))
})

describe("an ask withdrawn unanswered, its copy given back, then the client's own rejoin", () => {
  it.effect("a cancel of it reaches the same instance's new connection, which may still show it", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures)
      const m0 = message("still need this?", { expectsReply: true })
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      assert.strictEqual(w.b1.custody?.size, 1, "the ask is not in b-1's custody: the test sets up nothing")
      // b-1's client read the question (it may show it) and has not confirmed it yet; d withdraws the ask.
      w.batch(w.d, [{ type: "cancel_ask", messageId: m0.id }])
      // b-1's own rejoin (the same instanceId) gives the stale copy back, dropped as an ask that is over.
      const again = w.registerB("b-1")
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(again), [`cancel ${m0.id}`], "answered delivered, but the instance that may show the ask was not told")
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered"])
    }))
})

describe("a cancel or supersede of a message still in the old custody, which the old client confirms as it closes", () => {
  /** d's m0 written to b-1, unconfirmed; b-2 takes b over, so d's mail waits on a custody hold behind b-1's close. */
  const heldBehindCustody = Effect.gen(function*() {
    const w = yield* world(custodyFeatures)
    const m0 = message("m0")
    w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
    assert.strictEqual(w.b1.custody?.size, 1, "m0 is not in b-1's custody: the test sets up nothing")
    const b2 = w.registerB("b-2")
    assert.ok(b2.custodyHolds > 0, "no hold was taken: the test sets up nothing")
    return { w, m0, b2 }
  })

  /** b-1's client confirms all it read as its connection closes (PeerReader.confirmWhileClosing), then the close. */
  const confirmAndClose = (w: {
    readonly b1: Peer
    readonly d: Peer
    readonly closeAbandoned: (peer: Peer) => void
    readonly tryDrain: (peer: Peer) => boolean
  }): void => {
    w.b1.reader.frames([JSON.stringify({ type: "received", frames: w.b1.framesWritten })])
    assert.strictEqual(w.b1.custody?.size, 0, "b-1 did not confirm m0: the test sets up nothing")
    w.closeAbandoned(w.b1)
    for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
      // each step offers one parked item
    }
  }

  // Review revb D1: the cancel was answered `delivered` at once and its control parked behind the hold; the
  // late confirm left the close nothing to give back, yet that control then reached b-2.
  it.effect("a cancel: the new instance is not sent the cancel of a message it never got, and the sender is told it cannot be cancelled", () =>
    Effect.gen(function*() {
      const { w, m0, b2 } = yield* heldBehindCustody
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered"], "the cancel was answered before the old close")
      confirmAndClose(w)
      assert.deepStrictEqual(
        { controls: w.controlsOf(b2), messages: w.messagesOf(b2), answers: w.answersOf(m0.id) },
        { controls: [], messages: [], answers: ["delivered", `failed: ${Reason.cannotCancel}`] }
      )
    }))

  // Review revb D1 (supersede): its control parked behind the hold and reached b-2 ahead of m1, though b-2
  // never got m0.
  it.effect("a supersede: the new instance gets the new message alone", () =>
    Effect.gen(function*() {
      const { w, m0, b2 } = yield* heldBehindCustody
      const m1 = message("m1", { supersedes: m0.id })
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      confirmAndClose(w)
      assert.deepStrictEqual({ controls: w.controlsOf(b2), messages: w.messagesOf(b2) }, { controls: [], messages: [m1.id] })
    }))

  it.effect("a supersede, the old client confirming nothing: the old close gives the superseded message to no new instance", () =>
    Effect.gen(function*() {
      const { w, m0, b2 } = yield* heldBehindCustody
      const m1 = message("m1", { supersedes: m0.id })
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      w.closeAbandoned(w.b1)
      for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
        // each step offers one parked item
      }
      assert.deepStrictEqual({ controls: w.controlsOf(b2), messages: w.messagesOf(b2) }, { controls: [], messages: [m1.id] })
    }))

  it.effect("a cancel whose sender reconnected before the old close: carried out then, the new connection not answered", () =>
    Effect.gen(function*() {
      const { w, m0, b2 } = yield* heldBehindCustody
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      w.closeAbandoned(w.d)
      const d2 = w.registerD()
      w.closeAbandoned(w.b1)
      const answers = w.framesOf(d2).filter((frame) => frame.messageId === m0.id)
      assert.deepStrictEqual(
        { controls: w.controlsOf(b2), messages: w.messagesOf(b2), answers },
        { controls: [`cancel ${m0.id}`], messages: [m0.id], answers: [] }
      )
    }))

  it.effect("a cancel, the session away at the old close: the message given back to the mailbox is cancelled there", () =>
    Effect.gen(function*() {
      const { w, m0, b2 } = yield* heldBehindCustody
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      w.closeAbandoned(b2)
      w.closeAbandoned(w.b1)
      const b3 = w.registerB("b-3")
      for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
        // each step offers one parked item
      }
      assert.deepStrictEqual(
        { controls: w.controlsOf(b3), messages: w.messagesOf(b3), answers: w.answersOf(m0.id) },
        { controls: [], messages: [], answers: ["delivered", "delivered"] }
      )
    }))
})

describe("a cancel while the message waits in the old connection's untaken write, its close begun", () => {
  it.effect("the cancel reaches the new instance right behind the message the close gives back", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures)
      const m0 = message("m0")
      w.stick()
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      const b2 = w.registerB("b-2")
      assert.ok(b2.custodyHolds > 0, "no hold was taken: the test sets up nothing")
      // `finish`: the close begun, the write abandoned (its untaken rest kept on b-1), the destroy still running.
      closePeer(w.b1, "destroy")
      w.router.abandonWrites(w.b1)
      assert.ok(w.b1.untakenRest !== undefined, "m0 is not in b-1's untaken rest: the test sets up nothing")
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      w.closeAbandoned(w.b1)
      for (let n = 0; n < 10 && w.tryDrain(w.d); n++) {
        // each step offers one parked item
      }
      assert.deepStrictEqual(
        { controls: w.controlsOf(b2), messages: w.messagesOf(b2), answers: w.answersOf(m0.id) },
        { controls: [`cancel ${m0.id}`], messages: [m0.id], answers: ["delivered", "delivered"] }
      )
    }))
})
