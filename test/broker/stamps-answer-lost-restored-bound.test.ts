/**
 * Review revch CH4 (MEDIUM, older than fixcb) (MEDIUM, pre-existing; fixcb's helper noted it unverified): a reply restored after a durable
 * restart carries the edge it closed with the `dueAt` stored on the LAST run's clock; lost in the new run it reopens
 * its ask (Asks.answerLost: `{ ...edge }`) with that dueAt uncapped — Router.restore caps a restored edge to
 * `now + (deadline - openedAt)` (review revbz bz1), answerLost does not. With that clock ten days ahead the reopened
 * ask stays open ten days: past its timeout from the restart a second reply is still delivered. The scenario is
 * fixcb's test/broker/stamps-answered-restart-withdrawn.test.ts without the cancel_ask, plus the ask's timeout.
 * Durable broker (memory disk) on the TestClock; time passes only as modelled: the store's lazy flush, the clock set
 * back across the restart, the mailbox's retention (1 s), and the ask's timeout.
 * Fixed: a restored reply's `answers` edge is due no later than its ask's timeout from the restart
 * (AskEdges.boundedAsk, applied in Router.restore before Asks.restoreAnswered and MailDelivery.restore).
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
 * confirming it; the broker crashes. On the next run alice reads the restored reply again (unconfirmed) and
 * leaves; the reply outlives the mailbox's retention and is lost. The asks left open before the next
 * send's sweep, and the broker's answer to bob's second reply, past the ask's timeout.
 */
const answeredBeforeRestartLostAfter = (ahead: number) =>
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
    yield* second.alice.client.destroy
    yield* second.bob.client.next("session_left", (frame) => frame.sessionId === "alice")
    yield* advance("2 seconds")
    yield* net.session({ sessionId: "someone-else" }) // a registration prunes the mailbox: the reply is lost
    yield* second.bob.client.next("message_receipt", (f) => f.receipt.messageId === reply.id && f.receipt.status === "expired")
    yield* advance(ASK_TIMEOUT_MS + 1_000) // past the ask's timeout from its receipt, and from the restart
    const asks = (yield* second.broker.core.stats).asks
    const again = yield* sendFlushed(second.bob.client, "alice", message("yes, again", { replyTo: ask.id }))
    return { asks, again: again.type }
  })

describe("an ask answered before a durable restart, its restored reply lost, past its timeout", () => {
  it.effect("control, clocks agreeing: the reopened ask has expired, a second reply is refused", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual((yield* answeredBeforeRestartLostAfter(0)).again, "delivery_failed")
    }))

  it.effect("the last run's clock ten days ahead: the reopened ask has expired too, a second reply is refused", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual((yield* answeredBeforeRestartLostAfter(10 * MAX_FLOOR_AHEAD_MS)).again, "delivery_failed")
    }))
})
