/**
 * An ask restored above a capped floor, withdrawn, is known withdrawn (AskWithdrawals.withdrawNow). A store written under a clock
 * ten days ahead of the restarted broker's has its stamps' floor capped a day past the new clock (Router.restore,
 * MAX_FLOOR_AHEAD_MS), so a `cancel_ask` of an ask restored from it is stamped below the ask's own receipt
 * (`openedAt`): "withdrawn within [receipt, deadline)" (`withdrawnWithin`) then read it as never withdrawn, and the
 * copy its recipient gives back past its due time got its asker a false `expired`. So did a `cancel_ask` of such an
 * ask after its reply had closed its edge (AskWithdrawals.withdrawAnswered): that reply lost, its edge opened again
 * (Asks.answerLost) and a second reply was taken. The withdrawal is now stamped no lower than the ask's receipt (kept
 * with the answered ask, AnsweredAsks.openedAtOf). The same with the clocks agreeing alongside. On a durable broker
 * (memory disk) on the TestClock; time passes only as modelled: the store's lazy flush (`LAZY_FLUSH`: so the crash
 * keeps the ask, and a `received-v1` sender's acknowledgement goes out with it), the clock set back across the
 * restart, the ask's timeout and the mailbox's retention.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { MAX_FLOOR_AHEAD_MS } from "../../src/broker/BrokerStamps.ts"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { assertDelivered } from "../support/assertions.ts"
import { ackFor, message, messageFor, send } from "../support/broker.ts"
import type { Message } from "../../src/protocol/index.ts"
import type { WireClient } from "../support/wire.ts"
import { durableBroker } from "../support/durable.ts"
import { advance, memoryNetwork } from "../support/memory.ts"

const START = 1_000_000_000
const ASK_TIMEOUT_MS = 60_000

/**
 * Alice asks bob (a `received-v1` client that never confirms) on a run whose clock is `ahead` of the next's; the
 * broker crashes. On the next run bob is given the restored ask again, alice withdraws it, and bob leaves past its
 * due time. What alice was told of it, and the broker's answer to her sending it again (a replay).
 */
const withdrawnAfterRestart = (ahead: number) =>
  Effect.gen(function*() {
    const net = yield* memoryNetwork()
    const disk = makeMemoryMailState()
    const run = Effect.gen(function*() {
      const broker = yield* durableBroker(net, disk, { askTimeout: ASK_TIMEOUT_MS })
      const alice = yield* net.session({ sessionId: "alice", name: "alice" })
      const bob = yield* net.session({ sessionId: "bob", name: "bob", frame: { features: [RECEIVED_V1] } })
      return { broker, alice, bob }
    })
    yield* TestClock.setTime(START + ahead)
    const first = yield* run
    const ask = message("still need this?", { expectsReply: true })
    assertDelivered(yield* send(first.alice.client, "bob", ask))
    yield* messageFor(first.bob.client, ask.id) // read, never confirmed: it stays stored
    yield* advance(LAZY_FLUSH) // its edge stored
    yield* first.broker.crash

    yield* TestClock.setTime(START)
    const second = yield* run
    yield* messageFor(second.bob.client, ask.id) // the restored copy, read again, never confirmed
    yield* second.alice.client.send({ type: "cancel_ask", messageId: ask.id })
    yield* second.alice.client.roundTrip
    yield* advance(ASK_TIMEOUT_MS + 1)
    yield* second.bob.client.destroy
    yield* second.alice.client.next("session_left", (frame) => frame.sessionId === "bob")
    yield* second.alice.client.roundTrip
    const told = second.alice.client.received().flatMap((frame) =>
      frame.type === "message_receipt" && frame.receipt.messageId === ask.id ? [frame.receipt.status] : []
    )
    const retry = yield* send(second.alice.client, "bob", ask)
    return { told, retry: retry.type }
  })

/** A send from a `received-v1` client, whose acknowledgement goes out with the store's lazy flush: its answer. */
const sendFlushed = (client: WireClient, to: string, msg: Message) =>
  Effect.gen(function*() {
    yield* client.send({ type: "send", to, message: msg })
    yield* advance(LAZY_FLUSH)
    return yield* ackFor(client, msg.id)
  })

/**
 * As `withdrawnAfterRestart`, but on the next run bob answers the restored ask; alice (`received-v1`) reads the reply
 * without confirming it, withdraws the ask, and leaves; the reply, back in the mailbox, outlives the mailbox's
 * retention (a second) and is lost. The asks left open, and the broker's answer to bob's second reply.
 */
const answeredWithdrawnAfterRestart = (ahead: number) =>
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
    yield* advance(LAZY_FLUSH)
    yield* first.broker.crash

    yield* TestClock.setTime(START)
    const second = yield* run
    yield* messageFor(second.bob.client, ask.id)
    const reply = message("yes", { replyTo: ask.id })
    assertDelivered(yield* sendFlushed(second.bob.client, "alice", reply))
    yield* messageFor(second.alice.client, reply.id) // read, never confirmed
    yield* second.alice.client.send({ type: "cancel_ask", messageId: ask.id })
    yield* second.alice.client.roundTrip
    yield* second.alice.client.destroy
    yield* second.bob.client.next("session_left", (frame) => frame.sessionId === "alice")
    yield* advance("2 seconds")
    yield* net.session({ sessionId: "someone-else" }) // a registration prunes the mailbox: the reply is lost
    yield* second.bob.client.next("message_receipt", (f) => f.receipt.messageId === reply.id && f.receipt.status === "expired")
    const asks = (yield* second.broker.core.stats).asks
    const again = yield* sendFlushed(second.bob.client, "alice", message("yes, again", { replyTo: ask.id }))
    return { asks, again: again.type }
  })

describe("an ask restored above a capped floor, withdrawn, its copy given back past its due time", () => {
  it.effect("the clocks agreeing: its asker gets no expired receipt, a retry still hears delivered", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* withdrawnAfterRestart(0), { told: [], retry: "delivered" })
    }))

  it.effect("the last run's clock ten days ahead (the floor capped a day past this one): no expired receipt, a retry still hears delivered", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* withdrawnAfterRestart(10 * MAX_FLOOR_AHEAD_MS), { told: [], retry: "delivered" })
    }))

  it.effect("answered, then withdrawn, its reply lost: the clocks agreeing, the ask is not opened again", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* answeredWithdrawnAfterRestart(0), { asks: 0, again: "delivery_failed" })
    }))

  it.effect("answered, then withdrawn, its reply lost: the last run's clock ten days ahead, the ask is not opened again", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* answeredWithdrawnAfterRestart(10 * MAX_FLOOR_AHEAD_MS), { asks: 0, again: "delivery_failed" })
    }))
})
