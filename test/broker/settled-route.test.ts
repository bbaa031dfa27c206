/**
 * Review revd D1 and D1b (helper fixsup): the fate of a message its sender
 * cancelled or superseded is kept on its route too
 * (`OutboundRecord.withdrawal`), since the route can outlive the replay
 * record: the records' bounds push a flooding sender's oldest out (even
 * inside the 2-minute window), and a record ages from the send while a
 * route ages from the delivery — mail that waited in the mailbox keeps its
 * route long after its record is gone. Read from the record alone, a cancel
 * or supersede of such a message went along the route again: a second
 * control to the receiver, and `delivered` to the sender; and a message
 * withdrawn on its way, given back by a closing connection, was queued
 * again (MailDelivery.withdrawnOnTheWay).
 *
 * The fate belongs to the message, not its id (review revf R1): an id used
 * again after its record was pushed out, its route kept, is handed the same
 * record object (`claim`), and the earlier message's cancel stayed on it — the
 * new message read as cancelled (its cancel answered with no control, its
 * supersede refused, and given back by a closing connection, dropped).
 * `DeliveryRecords.keep` clears it for a new send.
 *
 * On a Router driven by hand; each connection's frames are recorded as
 * written.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { Reason } from "../../src/protocol/delivery.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { baseFeatures, controlWorld, recordedSessions } from "../support/controlWorld.ts"
import { handRouter } from "../support/handRouter.ts"

const MINUTE = 60_000

/** A hand-driven Router with broker options `options` and a clock the test moves; `connect` registers a session. */
const hand = (options: { readonly replayRecords?: number }) =>
  Effect.gen(function*() {
    const clock = { now: 1_000_000 }
    const hand = yield* handRouter(options, () => clock.now)
    const { batch } = hand
    const recorded = recordedSessions(hand)
    const connect = (id: number, sessionId: string, features: ReadonlyArray<string> = []): Peer =>
      recorded.connect(id, sessionId, features, `${sessionId}-${id}`)
    const framesOf = recorded.framesOf
    return {
      clock,
      batch,
      connect,
      controlsOf: (peer: Peer) =>
        framesOf(peer).flatMap((f) => f.type === "message_control" ? [`${f.control?.action} ${f.control?.messageId}`] : []),
      messagesOf: (peer: Peer) => framesOf(peer).flatMap((f) => f.type === "message" ? [f.message?.id] : []),
      /** `from`'s bare answers about `id` (to its sends and cancels), in order. */
      answersOf: (from: Peer, id: string) =>
        framesOf(from).flatMap((f) =>
          (f.type === "delivered" || f.type === "delivery_failed") && f.messageId === id
            ? [f.type === "delivered" ? "delivered" : `failed: ${f.reason}`]
            : []
        )
    }
  })

/** `b` (received-v1) and `d` on a Router keeping at most 3 replay records; `flood` pushes d's oldest out. */
const evicting = Effect.gen(function*() {
  const w = yield* hand({ replayRecords: 3 })
  const b = w.connect(1, "b", [RECEIVED_V1])
  const d = w.connect(2, "d")
  return {
    ...w,
    b,
    d,
    /** d sends b `n` plain messages, so d's oldest replay records go (d holds the most). */
    flood: (n: number) => {
      for (let i = 0; i < n; i++) w.batch(d, [{ type: "send", to: "b", message: message(`filler ${i}`) }])
    }
  }
})

describe("a settled message whose replay record the bounds pushed out, its route kept", () => {
  it.effect("superseded: a cancel of it sends the receiver no cancel and is answered cannot be cancelled", () =>
    Effect.gen(function*() {
      const w = yield* evicting
      const m0 = message("m0")
      const m1 = message("m1", { supersedes: m0.id })
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      assert.deepStrictEqual(w.controlsOf(w.b), [`supersede ${m0.id}`])
      w.flood(4)
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(w.b), [`supersede ${m0.id}`], "a cancel went to the receiver after its supersede")
      assert.deepStrictEqual(w.answersOf(w.d, m0.id), ["delivered", `failed: ${Reason.cannotCancel}`])
    }))

  it.effect("superseded: a second supersede of it is refused naming the first, and the receiver is sent nothing", () =>
    Effect.gen(function*() {
      const w = yield* evicting
      const m0 = message("m0")
      const m1 = message("m1", { supersedes: m0.id })
      const m2 = message("m2", { supersedes: m0.id })
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      w.flood(4)
      w.batch(w.d, [{ type: "send", to: "b", message: m2 }])
      assert.deepStrictEqual(w.controlsOf(w.b), [`supersede ${m0.id}`], "a second supersede of one message reached the receiver")
      assert.notInclude(w.messagesOf(w.b), m2.id)
      assert.deepStrictEqual(w.answersOf(w.d, m2.id), [`failed: ${Reason.supersedeSuperseded(Reason.superseded(m1.id))}`])
    }))

  it.effect("cancelled: a cancel again sends the receiver no second cancel and is answered delivered", () =>
    Effect.gen(function*() {
      const w = yield* evicting
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(w.b), [`cancel ${m0.id}`])
      w.flood(4)
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(w.b), [`cancel ${m0.id}`], "the receiver was sent the cancel twice")
      assert.deepStrictEqual(w.answersOf(w.d, m0.id), ["delivered", "delivered", "delivered"])
    }))
})

describe("a message that waited in the mailbox, delivered, then superseded", () => {
  it.effect("a cancel of it after its record aged out (its route not) sends the receiver no cancel", () =>
    Effect.gen(function*() {
      const w = yield* hand({})
      const d = w.connect(1, "d")
      const first = w.connect(2, "b")
      w.batch(first, [{ type: "unregister" }])
      const m0 = message("m0")
      w.batch(d, [{ type: "send", to: "b", message: m0 }])
      w.clock.now += 50 * MINUTE
      const b = w.connect(3, "b")
      const m1 = message("m1", { supersedes: m0.id })
      w.batch(d, [{ type: "send", to: "b", message: m1 }])
      assert.deepStrictEqual(
        { messages: w.messagesOf(b), controls: w.controlsOf(b) },
        { messages: [m0.id, m1.id], controls: [`supersede ${m0.id}`] },
        "m0 was not flushed, then superseded: the test sets up nothing"
      )
      // An hour from the send, m0's record is gone; its route, from the flush, is not.
      w.clock.now += 15 * MINUTE
      w.batch(d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(b), [`supersede ${m0.id}`], "the receiver was sent a cancel after the supersede")
      assert.deepStrictEqual(w.answersOf(d, m0.id).slice(-1), [`failed: ${Reason.cannotCancel}`])
    }))
})

describe("a message cancelled on its way, its record pushed out, then given back by the closing connection", () => {
  it.effect("is not queued again: the receiver's next registration is not given it", () =>
    Effect.gen(function*() {
      const w = yield* controlWorld(baseFeatures, { replayRecords: 3 })
      const m0 = message("m0")
      // b-1's socket takes no write from now on: m0, and all after it, are given back at its close.
      w.stick()
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered"], "m0 was not cancelled: the test sets up nothing")
      for (let i = 0; i < 4; i++) w.batch(w.d, [{ type: "send", to: "b", message: message(`filler ${i}`) }])
      w.closeAbandoned(w.b1)
      const b2 = w.registerB("b-1")
      assert.strictEqual(w.messagesOf(b2).length, 4, "the fillers were not given back: the test sets up nothing")
      assert.notInclude(w.messagesOf(b2), m0.id, "the cancelled m0 was queued again and delivered")
    }))

  it.effect("given back to the mailbox and cancelled there, its record pushed out: a cancel again sends the receiver's return no cancel", () =>
    Effect.gen(function*() {
      const w = yield* controlWorld(baseFeatures, { replayRecords: 3 })
      const m0 = message("m0")
      w.stick()
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      // b away: m0 goes back to the mailbox, its route to b-1 kept; the cancel takes it from there.
      w.closeAbandoned(w.b1)
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      for (let i = 0; i < 4; i++) w.batch(w.d, [{ type: "send", to: "b", message: message(`filler ${i}`) }])
      const b2 = w.registerB("b-1")
      assert.strictEqual(w.messagesOf(b2).length, 4, "the fillers were not flushed: the test sets up nothing")
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(b2), [], "the receiver was sent a cancel of a message the mailbox dropped")
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", "delivered", "delivered"])
    }))
})

describe("an id used again after its cancelled message's replay record was pushed out", () => {
  it.effect("a cancel of the new message reaches its receiver", () =>
    Effect.gen(function*() {
      const w = yield* evicting
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(w.b), [`cancel ${m0.id}`])
      w.flood(4)
      // The same id, another text: no record is kept, so it is a new message (not E_MESSAGE_ID_REUSE).
      const again = { ...message("m0 again"), id: m0.id }
      w.batch(w.d, [{ type: "send", to: "b", message: again }])
      assert.deepStrictEqual(w.messagesOf(w.b).filter((id) => id === m0.id).length, 2, "the new message was not delivered: the test sets up nothing")
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(w.b), [`cancel ${m0.id}`, `cancel ${m0.id}`], "the new message's cancel was answered without reaching its receiver")
    }))

  it.effect("the new message can be superseded", () =>
    Effect.gen(function*() {
      const w = yield* evicting
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      w.flood(4)
      const again = { ...message("m0 again"), id: m0.id }
      w.batch(w.d, [{ type: "send", to: "b", message: again }])
      const m1 = message("m1", { supersedes: m0.id })
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      assert.deepStrictEqual(w.answersOf(w.d, m1.id), ["delivered"])
    }))

  it.effect("the new message, given back by the receiver's closing connection, is queued again, not dropped", () =>
    Effect.gen(function*() {
      const w = yield* controlWorld(baseFeatures, { replayRecords: 3 })
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      for (let i = 0; i < 4; i++) w.batch(w.d, [{ type: "send", to: "b", message: message(`filler ${i}`) }])
      // b-1's socket takes no write from now on: the new message is given back at its close.
      w.stick()
      const again = { ...message("m0 again"), id: m0.id }
      w.batch(w.d, [{ type: "send", to: "b", message: again }])
      assert.deepStrictEqual(w.answersOf(m0.id).slice(-1), ["delivered"], "the new message was not accepted: the test sets up nothing")
      w.closeAbandoned(w.b1)
      const b2 = w.registerB("b-1")
      assert.include(w.messagesOf(b2), m0.id, "the new message was dropped as if cancelled on its way: lost")
    }))
})
