/**
 * Review revch CH1 (MEDIUM, of fixcb) (MEDIUM): Asks.restoreAnswered (fixcb, review revcb item 1) keeps a restored reply's answered
 * entry until the stored edge's `dueAt` — a time on the LAST run's clock, not capped as Router.restore caps a restored
 * edge (`min(stored, now + timeout)`). With that clock ten days ahead, a registration past the ask's deadline on this
 * run's clock is still told `ask_answered_elsewhere` (reply-elsewhere-v1), against AnsweredAsks' rule "whose edge's
 * deadline has not passed (an asker waits no longer)". The first two cases (clocks agreeing) are controls and pass.
 * Durable broker (memory disk) on the TestClock; time passes only as modelled: the store's lazy flush, the clock set
 * back across the restart, and the ask's timeout.
 * Fixed: a restored reply's `answers` edge is due no later than its ask's timeout from the restart
 * (AskEdges.boundedAsk, applied in Router.restore before Asks.restoreAnswered and MailDelivery.restore).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { MAX_FLOOR_AHEAD_MS } from "../../src/broker/BrokerStamps.ts"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { RECEIVED_V1, REJOIN_V1, REPLY_ELSEWHERE_V1 } from "../../src/protocol/features.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { assertDelivered } from "../support/assertions.ts"
import { ackFor, message, messageFor } from "../support/broker.ts"
import { durableBroker } from "../support/durable.ts"
import { advance, memoryNetwork } from "../support/memory.ts"

const START = 1_000_000_000
const ASK_TIMEOUT_MS = 60_000

/**
 * Run 1 (clock `ahead`): alice (a-1) asks bob, bob replies, a-1 reads it unconfirmed; crash. Run 2 (clock START): a
 * base client a-2 of alice is written the restored reply (its write is the delivery) and leaves; `wait` passes; a-1
 * registers again. The `ask_answered_elsewhere` frames it is written.
 */
const returnAfterRestart = (ahead: number, wait: number) =>
  Effect.gen(function*() {
    const net = yield* memoryNetwork()
    const disk = makeMemoryMailState()
    yield* TestClock.setTime(START + ahead)
    const broker1 = yield* durableBroker(net, disk, { askTimeout: ASK_TIMEOUT_MS })
    const a1 = yield* net.session({
      sessionId: "alice",
      name: "alice",
      frame: { features: [RECEIVED_V1, REJOIN_V1, REPLY_ELSEWHERE_V1], instanceId: "a-1" }
    })
    const bob = yield* net.session({ sessionId: "bob", name: "bob", frame: { features: [RECEIVED_V1] } })
    const ask = message("well?", { expectsReply: true })
    yield* a1.client.send({ type: "send", to: "bob", message: ask })
    yield* advance(LAZY_FLUSH)
    assertDelivered(yield* ackFor(a1.client, ask.id))
    yield* messageFor(bob.client, ask.id)
    const reply = message("yes", { replyTo: ask.id })
    yield* bob.client.send({ type: "send", to: "alice", message: reply })
    yield* advance(LAZY_FLUSH)
    assertDelivered(yield* ackFor(bob.client, reply.id))
    yield* messageFor(a1.client, reply.id) // read, never confirmed: it stays stored
    yield* advance(LAZY_FLUSH)
    yield* broker1.crash

    yield* TestClock.setTime(START)
    yield* durableBroker(net, disk, { askTimeout: ASK_TIMEOUT_MS })
    const a2 = yield* net.session({ sessionId: "alice", name: "alice", frame: { features: [REJOIN_V1], instanceId: "a-2" } })
    yield* messageFor(a2.client, reply.id) // no received-v1: written is delivered, for good
    yield* a2.client.roundTrip
    yield* a2.client.destroy
    yield* advance(wait)
    const back = yield* net.session({
      sessionId: "alice",
      name: "alice",
      frame: { features: [RECEIVED_V1, REJOIN_V1, REPLY_ELSEWHERE_V1], instanceId: "a-1" }
    })
    yield* back.client.roundTrip
    return back.client.received().flatMap((f) => f.type === "ask_answered_elsewhere" ? [f.messageId] : [])
  })

describe("a restored answered ask is told elsewhere only before its deadline on this run's clock", () => {
  it.effect("control, clocks agreeing, back before the deadline: told", () =>
    Effect.gen(function*() {
      assert.strictEqual((yield* returnAfterRestart(0, 1_000)).length, 1)
    }))

  it.effect("control, clocks agreeing, back past the deadline: not told", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* returnAfterRestart(0, ASK_TIMEOUT_MS + 1_000), [])
    }))

  it.effect("last run's clock ten days ahead, back past the deadline: not told", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* returnAfterRestart(10 * MAX_FLOOR_AHEAD_MS, ASK_TIMEOUT_MS + 1_000), [])
    }))
})
