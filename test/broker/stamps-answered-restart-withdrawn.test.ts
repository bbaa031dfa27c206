/**
 * Review revcb item 1: an ask answered before a durable restart and withdrawn after it was not remembered withdrawn.
 * Which reply answered an ask (AnsweredAsks) lives in memory only, so after the restart `cancel_ask` found neither the
 * ask's edge (the reply closed it) nor an answered entry, and recorded nothing; the reply, restored and then lost (its
 * reader leaves, the mailbox's retention passes), opened the ask again (Asks.answerLost) and the replier's second
 * reply was taken. The restored reply carries the edge it closed (`answers`): the ask is now known answered again at
 * startup (Asks.restoreAnswered, from Router.restore), so the withdrawal is remembered (`withdrawAnswered`). Both with
 * the clocks agreeing and with the last run's clock ten days ahead (the stamp floor capped: the withdrawal is stamped
 * no lower than the ask's receipt, docs/store.md). (Was the reviewer's probe test/zz-review-cb-1.test.ts.)
 * The same world not withdrawn: review revch CH4 (the last describe).
 * On a durable broker (memory disk) on the TestClock; time passes only as modelled: the store's lazy flush
 * (`LAZY_FLUSH`), the clock set back across the restart, the mailbox's retention (1 s), and, not withdrawn, the
 * ask's timeout.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { MAX_FLOOR_AHEAD_MS } from "../../src/broker/BrokerStamps.ts"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import type { Message } from "../../src/protocol/index.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { assertDelivered } from "../support/assertions.ts"
import { ackFor, message, messageFor } from "../support/broker.ts"
import { durableBroker } from "../support/durable.ts"
import { advance, memoryNetwork } from "../support/memory.ts"
import type { WireClient } from "../support/wire.ts"

const START = 1_000_000_000
const ASK_TIMEOUT_MS = 60_000

/** A send from a `received-v1` client, whose acknowledgement goes out with the store's lazy flush: its answer. */
const sendFlushed = (client: WireClient, to: string, msg: Message) =>
  Effect.gen(function*() {
    yield* client.send({ type: "send", to, message: msg })
    yield* advance(LAZY_FLUSH)
    return yield* ackFor(client, msg.id)
  })

/**
 * Alice asks bob and bob answers on a run whose clock is `ahead` of the next's; alice reads the reply without
 * confirming it; the broker crashes. On the next run alice reads the restored reply again (unconfirmed), withdraws
 * the ask and leaves; the reply outlives the mailbox's retention and is lost. The asks left open, and the broker's
 * answer to bob's second reply.
 */
const answeredBeforeRestartWithdrawnAfter = (ahead: number, options: { readonly withdraw: boolean } = { withdraw: true }) =>
  Effect.gen(function*() {
    const net = yield* memoryNetwork()
    const disk = makeMemoryMailState()
    const run = Effect.gen(function*() {
      const broker = yield* durableBroker(net, disk, { askTimeout: ASK_TIMEOUT_MS, mailboxRetention: "1 second" })
      const alice = yield* net.session({ sessionId: "alice", name: "alice", frame: { features: [RECEIVED_V1] } })
      const bob = yield* net.session({ sessionId: "bob", name: "bob", frame: { features: [RECEIVED_V1] } })
      return { broker, alice, bob }
    })
    yield* TestClock.setTime(START + ahead)
    const first = yield* run
    const ask = message("still need this?", { expectsReply: true })
    assertDelivered(yield* sendFlushed(first.alice.client, "bob", ask))
    yield* messageFor(first.bob.client, ask.id)
    const reply = message("yes", { replyTo: ask.id })
    assertDelivered(yield* sendFlushed(first.bob.client, "alice", reply))
    yield* messageFor(first.alice.client, reply.id) // read, never confirmed: it stays stored
    yield* advance(LAZY_FLUSH)
    yield* first.broker.crash

    yield* TestClock.setTime(START)
    const second = yield* run
    yield* messageFor(second.alice.client, reply.id) // the restored reply, read again, never confirmed
    if (options.withdraw) {
      yield* second.alice.client.send({ type: "cancel_ask", messageId: ask.id })
      yield* second.alice.client.roundTrip
    }
    yield* second.alice.client.destroy
    yield* second.bob.client.next("session_left", (frame) => frame.sessionId === "alice")
    yield* advance("2 seconds")
    yield* net.session({ sessionId: "someone-else" }) // a registration prunes the mailbox: the reply is lost
    yield* second.bob.client.next("message_receipt", (f) => f.receipt.messageId === reply.id && f.receipt.status === "expired")
    // Not withdrawn, the lost reply reopens the ask: past its timeout from its receipt, and from the restart.
    if (!options.withdraw) yield* advance(ASK_TIMEOUT_MS + 1_000)
    const asks = (yield* second.broker.core.stats).asks
    const again = yield* sendFlushed(second.bob.client, "alice", message("yes, again", { replyTo: ask.id }))
    return { asks, again: again.type }
  })

describe("an ask answered before a durable restart, withdrawn after it, its restored reply lost", () => {
  it.effect("the clocks agreeing: the ask is not opened again, a second reply is refused", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* answeredBeforeRestartWithdrawnAfter(0), { asks: 0, again: "delivery_failed" })
    }))

  it.effect("the last run's clock ten days ahead: the ask is not opened again, a second reply is refused", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* answeredBeforeRestartWithdrawnAfter(10 * MAX_FLOOR_AHEAD_MS), { asks: 0, again: "delivery_failed" })
    }))
})

// Review revch CH4 (MEDIUM, older than fixcb): `answerLost` reopened the restored reply's edge until its stored due
// time on the last run's clock, so with that clock ten days ahead a second reply after the ask's timeout was delivered.
// Fixed: a restored reply's `answers` edge is due no later than its ask's timeout from the restart
// (AskEdges.boundedAsk, in Router.restore).
describe("an ask answered before a durable restart, NOT withdrawn, its restored reply lost, past its timeout (review revch CH4)", () => {
  it.effect("control, clocks agreeing: the reopened ask has expired, a second reply is refused", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual((yield* answeredBeforeRestartWithdrawnAfter(0, { withdraw: false })).again, "delivery_failed")
    }))

  it.effect("the last run's clock ten days ahead: the reopened ask has expired too, a second reply is refused", () =>
    Effect.gen(function*() {
      const { again } = yield* answeredBeforeRestartWithdrawnAfter(10 * MAX_FLOOR_AHEAD_MS, { withdraw: false })
      assert.deepStrictEqual(again, "delivery_failed")
    }))
})
