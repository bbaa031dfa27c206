/**
 * An ask restored above a capped floor, withdrawn, is known withdrawn (Asks.withdrawNow). A store written under a clock
 * ten days ahead of the restarted broker's has its stamps' floor capped a day past the new clock (Router.restore,
 * MAX_FLOOR_AHEAD_MS), so a `cancel_ask` of an ask restored from it is stamped below the ask's own receipt
 * (`openedAt`): "withdrawn within [receipt, deadline)" (`withdrawnWithin`) then read it as never withdrawn, and the
 * copy its recipient gives back past its due time got its asker a false `expired`. The withdrawal is now stamped no
 * lower than the ask's receipt. The same with the clocks agreeing alongside. On a durable broker (memory disk) on the
 * TestClock; time passes only as modelled: the store's lazy flush (`LAZY_FLUSH`, so the crash keeps the ask), the
 * clock set back across the restart, and the ask's timeout.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { MAX_FLOOR_AHEAD_MS } from "../../src/broker/BrokerStamps.ts"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { assertDelivered } from "../support/assertions.ts"
import { message, messageFor, send } from "../support/broker.ts"
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

describe("an ask restored above a capped floor, withdrawn, its copy given back past its due time", () => {
  it.effect("the clocks agreeing: its asker gets no expired receipt, a retry still hears delivered", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* withdrawnAfterRestart(0), { told: [], retry: "delivered" })
    }))

  it.effect("the last run's clock ten days ahead (the floor capped a day past this one): no expired receipt, a retry still hears delivered", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* withdrawnAfterRestart(10 * MAX_FLOOR_AHEAD_MS), { told: [], retry: "delivered" })
    }))
})
