/**
 * An ask answered while the copy of it that later comes back was NOT in the
 * replier's current connection's custody (helper replyclose): on the old
 * connection of a takeover by another client instance, which still holds it
 * unconfirmed while the new one answers; or back in the mailbox when the
 * reply is accepted (a `replace`-staged reply that fell due after its sender
 * left). The reply ends those copies as answered: the one on the old
 * connection, given back past the deadline, goes silently; the one in the
 * mailbox goes at once, silently. Should the reply be lost later, the asker
 * is still owed its `expired`.
 *
 * On a Router driven by hand (controlWorld, handRouter), its clock moved by the test.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { closePeer } from "../../src/broker/RouterContext.ts"
import { DELIVERY_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, recordedSessions, type Seen } from "../support/controlWorld.ts"
import { handRouter } from "../support/handRouter.ts"

const ASK_TIMEOUT_MS = 60_000
const WINDOW_MS = 1_000
const replace = (threadId: string) => ({ delivery: "queue", queueMode: "replace", threadId })

/** The receipts `frames` hold, as `status id`. */
const receipts = (frames: ReadonlyArray<Seen>) =>
  frames.flatMap((frame) => frame.type === "message_receipt" ? [`${frame.receipt?.status} ${frame.receipt?.messageId}`] : [])

describe("an ask answered from the session's new connection while a takeover's old one still holds it unconfirmed", () => {
  it.effect("given back past its deadline at the old close: its asker gets no expired receipt and a retry still hears delivered", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, { askTimeout: ASK_TIMEOUT_MS }, clock)
      const ask = message("still need this?", { expectsReply: true })
      const reply = message("yes", { replyTo: ask.id })
      w.batch(w.d, [{ type: "send", to: "b", message: ask }])
      assert.deepStrictEqual(w.messagesOf(w.b1), [ask.id], "the ask was not written to b-1: the test sets up nothing")
      // Another client instance takes b over; b-1's close (the test's) has not come yet.
      const b2 = w.registerB("b-2")
      assert.deepStrictEqual(w.messagesOf(b2), [], "the ask reached b-2 before the old close: the test sets up nothing")
      w.batch(b2, [{ type: "send", to: "d", message: reply }])
      assert.include(w.messagesOf(w.d), reply.id, "the reply did not reach d: the test sets up nothing")
      clock.now += ASK_TIMEOUT_MS + 1
      w.closeAbandoned(w.b1)
      assert.deepStrictEqual(w.messagesOf(b2), [], "the answered ask was asked again on b-2")
      assert.deepStrictEqual(receipts(w.framesOf(w.d)), [])
      w.batch(w.d, [{ type: "send", to: "b", message: ask }])
      assert.deepStrictEqual(w.answersOf(ask.id), ["delivered", "delivered"])
    }))

  it.effect("the same, but the reply is lost after the old close (its sender cancels it while d is away): d, back, is told the ask expired", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, { askTimeout: ASK_TIMEOUT_MS }, clock)
      const ask = message("still need this?", { expectsReply: true })
      const reply = message("yes", { replyTo: ask.id })
      w.batch(w.d, [{ type: "send", to: "b", message: ask }])
      assert.deepStrictEqual(w.messagesOf(w.b1), [ask.id], "the ask was not written to b-1: the test sets up nothing")
      const b2 = w.registerB("b-2")
      w.closeAbandoned(w.d)
      // Queued for d, which is away.
      w.batch(b2, [{ type: "send", to: "d", message: reply }])
      clock.now += ASK_TIMEOUT_MS + 1
      w.closeAbandoned(w.b1)
      w.batch(b2, [{ type: "cancel_message", messageId: reply.id }])
      const back = w.registerD()
      assert.deepStrictEqual(w.messagesOf(back), [], "the reply reached d: the test sets up nothing")
      assert.deepStrictEqual(receipts(w.framesOf(back)), [`expired ${ask.id}`])
    }))
})

/**
 * d asks b; b-1 (`received-v1`, `delivery-v1`) is written the ask and never confirms it, and answers it with a
 * `replace`-staged reply. d's outbox is full (capacity 1: a message that fell due outside any batch, not yet
 * written), so when b-1's connection drops the reply, handed over as its sender leaves, waits due; the ask goes
 * back to the mailbox with its edge still open. Then d's writer takes its outbox, and the reply goes: it is
 * accepted while the ask's copy is in the mailbox.
 */
const answeredWhileQueued = Effect.gen(function*() {
  const clock = { now: 1_000_000 }
  const hand = yield* handRouter(
    { askTimeout: ASK_TIMEOUT_MS, replaceWindow: WINDOW_MS, outboxCapacity: 1 },
    () => clock.now
  )
  const { batch, close, router } = hand
  const { connect, framesOf } = recordedSessions(hand)
  const messagesOf = (peer: Peer) => framesOf(peer).flatMap((frame) => frame.type === "message" ? [frame.message?.id ?? "?"] : [])
  const b1 = connect(1, "b", [...custodyFeatures, DELIVERY_V1], "b-1")
  const d = connect(2, "d", [], "d-1")
  const ask = message("still need this?", { expectsReply: true })
  const reply = message("yes", { replyTo: ask.id })
  const status = message("busy")
  batch(d, [{ type: "send", to: "b", message: ask }])
  assert.deepStrictEqual(messagesOf(b1), [ask.id], "the ask was not written to b-1: the test sets up nothing")
  batch(b1, [{ type: "send", to: "d", message: status, ...replace("status") }])
  clock.now += 1
  batch(b1, [{ type: "send", to: "d", message: reply, ...replace("answer") }])
  clock.now += WINDOW_MS - 1
  // The first falls due outside any batch: queued in d's outbox, not written (no output fiber runs here).
  router.staging.flushDue(clock.now)
  assert.strictEqual(d.outbox.length, 1, "d's outbox is not full: the test sets up nothing")
  closeAbandoned(b1)
  assert.strictEqual(router.stats().mailbox, 1, "the ask did not go back to the mailbox: the test sets up nothing")
  assert.strictEqual(router.staging.waiting, 1, "the reply is not due: the test sets up nothing")
  // d's writer takes its outbox: room for the due reply, which goes now.
  assert.deepStrictEqual(messagesOf(d), [status.id, reply.id], "the reply did not reach d: the test sets up nothing")
  return { ask, b1, batch, clock, close, connect, d, framesOf, messagesOf, reply, router }

  function closeAbandoned(peer: Peer): void {
    closePeer(peer, "destroy")
    router.abandonWrites(peer)
    close(peer)
  }
})

describe("an ask answered while its copy waits in the mailbox (a staged reply that fell due after its sender left)", () => {
  it.effect("the copy goes from the mailbox at once, silently", () =>
    Effect.gen(function*() {
      const { d, framesOf, router } = yield* answeredWhileQueued
      assert.strictEqual(router.stats().mailbox, 0)
      assert.deepStrictEqual(receipts(framesOf(d)), [])
    }))

  it.effect("b back past the deadline: its asker gets no expired receipt, and b is not asked it", () =>
    Effect.gen(function*() {
      const { clock, connect, d, framesOf, messagesOf } = yield* answeredWhileQueued
      clock.now += ASK_TIMEOUT_MS
      const back = connect(3, "b", custodyFeatures, "b-1")
      assert.deepStrictEqual(messagesOf(back), [])
      assert.deepStrictEqual(receipts(framesOf(d)), [])
    }))
})
