/**
 * Review revcb, probe 3 (LOW, docs): `messageFrameFor`'s JSDoc (src/broker/Asks.ts) still says a frame's
 * `deliveredAt` is "never below" the mail's `brokerReceivedAt`, "so the gap is the wait in the broker". The stampq
 * merge documented in docs/protocol.md that a message a durable broker restored from above its capped stamp floor is
 * delivered with a lower stamp than its receipt, but left that sentence. Here: a store written under a clock ten days
 * ahead, the broker restarted at START; the restored copy's frame has brokerDeliveredAt < brokerReceivedAt. On a
 * durable broker (memory disk) on the TestClock; time passes only as modelled: the store's lazy flush (`LAZY_FLUSH`,
 * so the crash keeps the message) and the clock set back across the restart.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { MAX_FLOOR_AHEAD_MS } from "../src/broker/BrokerStamps.ts"
import { LAZY_FLUSH } from "../src/broker/StoreWriter.ts"
import { RECEIVED_V1 } from "../src/protocol/features.ts"
import { makeMemoryMailState } from "../src/store/MailStore.ts"
import { assertDelivered } from "./support/assertions.ts"
import { message, messageFor, send } from "./support/broker.ts"
import { durableBroker } from "./support/durable.ts"
import { advance, memoryNetwork } from "./support/memory.ts"

const START = 1_000_000_000

describe("revcb probe 3: a frame's brokerDeliveredAt against messageFrameFor's JSDoc", () => {
  it.effect("a copy restored from above a capped floor: brokerDeliveredAt is not below brokerReceivedAt", () =>
    Effect.gen(function*() {
      const net = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const run = Effect.gen(function*() {
        const broker = yield* durableBroker(net, disk)
        const alice = yield* net.session({ sessionId: "alice", name: "alice" })
        const bob = yield* net.session({ sessionId: "bob", name: "bob", frame: { features: [RECEIVED_V1] } })
        return { broker, alice, bob }
      })
      yield* TestClock.setTime(START + 10 * MAX_FLOOR_AHEAD_MS)
      const first = yield* run
      const m = message("kept")
      assertDelivered(yield* send(first.alice.client, "bob", m))
      yield* messageFor(first.bob.client, m.id) // read, never confirmed: it stays stored
      yield* advance(LAZY_FLUSH)
      yield* first.broker.crash

      yield* TestClock.setTime(START)
      const second = yield* run
      const restored = yield* messageFor(second.bob.client, m.id)
      const received = restored.message.brokerReceivedAt
      const delivered = restored.message.brokerDeliveredAt
      assert.isNumber(received, "setup: brokerReceivedAt")
      assert.isNumber(delivered, "setup: brokerDeliveredAt")
      assert.isAtLeast(delivered ?? Number.NaN, received ?? Number.NaN, "brokerDeliveredAt below brokerReceivedAt")
    }))
})
