/**
 * Which withdrawals make an ask given back unconfirmed past its deadline go
 * silently, and which do not (review revq of merge staleans; helper fixsa):
 * a `cancel_ask` after the deadline is no withdrawal before it (Q1), nor is
 * one made for an earlier ask under the same id (Q1b); `cancel_message` on an
 * open ask is one (Q2); another session's cancels of ids it never sent push
 * nothing out (Q3); and an ask that went silently as answered, whose reply is
 * lost later, owes its asker the `expired` after all (Q4). A durable broker
 * stores a withdrawal only for an ask it knew open (or answered).
 *
 * On a Router driven by hand (controlWorld), its clock moved by the test;
 * the store's case on a memory broker with a memory store.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { assertDelivered } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures, type Seen } from "../support/controlWorld.ts"
import { durableBroker } from "../support/durable.ts"
import { advance, memoryNetwork } from "../support/memory.ts"

const ASK_TIMEOUT_MS = 60_000

/** The receipts `frames` hold, as `status id`. */
const receipts = (frames: ReadonlyArray<Seen>) =>
  frames.flatMap((frame) => frame.type === "message_receipt" ? [`${frame.receipt?.status} ${frame.receipt?.messageId}`] : [])

describe("Q1: a cancel_ask sent after the deadline (IntercomSession's ask does so on every timeout) is not a withdrawal before it", () => {
  it.effect("edge still listed when the cancel comes: the ask expired, so its asker gets the expired receipt", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, { askTimeout: ASK_TIMEOUT_MS }, clock)
      const ask = message("still need this?", { expectsReply: true })
      w.batch(w.d, [{ type: "send", to: "b", message: ask }])
      assert.deepStrictEqual(w.messagesOf(w.b1), [ask.id], "the ask was not written to b-1: the test sets up nothing")
      // d's wait timed out (Ask.ts cancelWait): it cancels the ask after its deadline.
      clock.now += ASK_TIMEOUT_MS + 1
      w.batch(w.d, [{ type: "cancel_ask", messageId: ask.id }])
      w.closeAbandoned(w.b1)
      assert.deepStrictEqual(receipts(w.framesOf(w.d)), [`expired ${ask.id}`])
    }))

  it.effect("edge pruned first (another send), then the cancel: the ask expired, so its asker gets the expired receipt", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, { askTimeout: ASK_TIMEOUT_MS }, clock)
      const ask = message("still need this?", { expectsReply: true })
      w.batch(w.d, [{ type: "send", to: "b", message: ask }])
      assert.deepStrictEqual(w.messagesOf(w.b1), [ask.id], "the ask was not written to b-1: the test sets up nothing")
      clock.now += ASK_TIMEOUT_MS + 1
      // Any send prunes the expired edge; then d's timed-out wait cancels it.
      w.batch(w.d, [{ type: "send", to: "b", message: message("fyi") }])
      w.batch(w.d, [{ type: "cancel_ask", messageId: ask.id }])
      w.closeAbandoned(w.b1)
      assert.deepStrictEqual(receipts(w.framesOf(w.d)), [`expired ${ask.id}`])
    }))
})

describe("Q2: cancel_message on an open ask is forgotten with its replay record (an hour); an ask can last 30 days", () => {
  it.effect("cancelled, then given back past its deadline after the record's hour: its asker, told cancelled, gets no expired receipt", () =>
    Effect.gen(function*() {
      const askTimeout = 2 * 3_600_000
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, { askTimeout }, clock)
      const ask = message("still need this?", { expectsReply: true })
      w.batch(w.d, [{ type: "send", to: "b", message: ask }])
      assert.deepStrictEqual(w.messagesOf(w.b1), [ask.id], "the ask was not written to b-1: the test sets up nothing")
      w.batch(w.d, [{ type: "cancel_message", messageId: ask.id }])
      // The send, then the cancel, both answered `delivered` (a cancel that took: Cancels.cancel answers true).
      assert.deepStrictEqual(w.answersOf(ask.id), ["delivered", "delivered"], "d's cancel did not take: the test sets up nothing")
      clock.now += askTimeout + 1
      // Any send prunes the records past their hour (and the expired edges).
      w.batch(w.d, [{ type: "send", to: "b", message: message("fyi") }])
      w.closeAbandoned(w.b1)
      assert.deepStrictEqual(receipts(w.framesOf(w.d)), [])
    }))

  it.effect("the same with cancel_ask: no expired receipt (the behaviour Q2 compares with)", () =>
    Effect.gen(function*() {
      const askTimeout = 2 * 3_600_000
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, { askTimeout }, clock)
      const ask = message("still need this?", { expectsReply: true })
      w.batch(w.d, [{ type: "send", to: "b", message: ask }])
      w.batch(w.d, [{ type: "cancel_ask", messageId: ask.id }])
      clock.now += askTimeout + 1
      w.batch(w.d, [{ type: "send", to: "b", message: message("fyi") }])
      w.closeAbandoned(w.b1)
      assert.deepStrictEqual(receipts(w.framesOf(w.d)), [])
    }))
})

describe("Q3: the 4,096 withdrawals are one pool any session fills, with cancel_ask for ids it never sent", () => {
  it.effect("another session's 4,096 bogus cancel_asks push d's withdrawal out: d, which withdrew its ask, gets no expired receipt", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, { askTimeout: ASK_TIMEOUT_MS }, clock)
      const ask = message("still need this?", { expectsReply: true })
      w.batch(w.d, [{ type: "send", to: "b", message: ask }])
      assert.deepStrictEqual(w.messagesOf(w.b1), [ask.id], "the ask was not written to b-1: the test sets up nothing")
      w.batch(w.d, [{ type: "cancel_ask", messageId: ask.id }])
      const e = w.registerOther("e")
      w.batch(e, Array.from({ length: 4096 }, (_, i) => ({ type: "cancel_ask", messageId: `never-sent-${i}` })))
      clock.now += ASK_TIMEOUT_MS + 1
      w.closeAbandoned(w.b1)
      assert.deepStrictEqual(receipts(w.framesOf(w.d)), [])
    }))
})

describe("Q4: the answered mark is read once, at the give-back; a reply lost after that leaves the asker told nothing", () => {
  it.effect("answered while d was away, the ask given back past its deadline, then the reply cancelled by its sender: d, back, is told the ask expired", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, { askTimeout: ASK_TIMEOUT_MS }, clock)
      const ask = message("still need this?", { expectsReply: true })
      const reply = message("yes", { replyTo: ask.id })
      w.batch(w.d, [{ type: "send", to: "b", message: ask }])
      assert.deepStrictEqual(w.messagesOf(w.b1), [ask.id], "the ask was not written to b-1: the test sets up nothing")
      w.closeAbandoned(w.d)
      // Queued for d, which is away: the ask's copy on b-1 is marked answered.
      w.batch(w.b1, [{ type: "send", to: "d", message: reply }])
      clock.now += ASK_TIMEOUT_MS + 1
      w.closeAbandoned(w.b1)
      // Only now is the reply lost (its sender withdraws it from the mailbox): the ask went unanswered after all.
      const b2 = w.registerB("b-2")
      w.batch(b2, [{ type: "cancel_message", messageId: reply.id }])
      const back = w.registerD()
      assert.deepStrictEqual(w.messagesOf(back), [], "the reply reached d: the test sets up nothing")
      assert.deepStrictEqual(receipts(w.framesOf(back)), [`expired ${ask.id}`])
    }))
})

describe("Q1b: a withdrawal is kept 30 days by message key, and counts for any later ask under that key", () => {
  it.effect("an ask id sent again past the replay window (a new ask) that truly expires: its asker gets the expired receipt", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, { askTimeout: ASK_TIMEOUT_MS }, clock)
      const ask = message("still need this?", { expectsReply: true })
      w.batch(w.d, [{ type: "send", to: "b", message: ask }])
      w.batch(w.d, [{ type: "cancel_ask", messageId: ask.id }])
      w.closeAbandoned(w.b1)
      // Past the replay window (an hour): the same id is a new ask.
      clock.now += 2 * 3_600_000
      const b2 = w.registerB("b-2")
      w.batch(w.d, [{ type: "send", to: "b", message: ask }])
      assert.deepStrictEqual(w.messagesOf(b2), [ask.id], "the new ask was not written to b-2: the test sets up nothing")
      clock.now += ASK_TIMEOUT_MS + 1
      w.closeAbandoned(b2)
      assert.deepStrictEqual(receipts(w.framesOf(w.d)), [`expired ${ask.id}`])
    }))
})

describe("a durable broker stores a withdrawal only for an ask it knows open", () => {
  it.effect("cancel_ask before the deadline stores one; after the deadline, or for an id never sent, none", () =>
    Effect.gen(function*() {
      const netw = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      yield* durableBroker(netw, disk, { askTimeout: ASK_TIMEOUT_MS })
      const alice = yield* netw.session({ sessionId: "alice", name: "alice" })
      const bob = yield* netw.session({ sessionId: "bob", name: "bob", frame: { features: [RECEIVED_V1] } })
      const asked = (text: string) =>
        Effect.gen(function*() {
          const ask = message(text, { expectsReply: true })
          assertDelivered(yield* send(alice.client, "bob", ask))
          yield* messageFor(bob.client, ask.id)
          return ask
        })
      const withdrawnIds = () => [...disk.withdrawals.keys()].map((key) => key.slice(key.indexOf("\u0001") + 1))
      const early = yield* asked("still need this?")
      yield* alice.client.send({ type: "cancel_ask", messageId: early.id })
      yield* settled([alice.client])
      yield* advance(LAZY_FLUSH)
      assert.deepStrictEqual(withdrawnIds(), [early.id], "the withdrawal before the deadline was not stored: the test sets up nothing")
      const late = yield* asked("and this?")
      yield* advance(ASK_TIMEOUT_MS + 1)
      // Its edge is still listed (alice was not granted ask-expiry-v1, and nothing was sent since): past its deadline.
      yield* alice.client.send({ type: "cancel_ask", messageId: late.id })
      yield* alice.client.send({ type: "cancel_ask", messageId: "never-sent" })
      yield* settled([alice.client])
      yield* advance(LAZY_FLUSH)
      assert.deepStrictEqual(withdrawnIds(), [early.id])
    }))
})
