/**
 * Review revcb item 4: a message a durable broker restored from above its capped stamp floor (a store written under a
 * clock ten days ahead, the broker restarted at START: its stamps start a day past the clock, Router.restoreStamps)
 * was delivered with the lower stamp of now as its `brokerDeliveredAt`, below its `brokerReceivedAt` — against
 * `messageFrameFor`'s JSDoc and the gap IntercomSession reads as the wait in the broker. The frame now carries the
 * receipt when the stamp is lower (RecipientFrames.messageFrameFor). (Was the reviewer's probe test/zz-review-cb-3.test.ts.)
 * On a durable broker (memory disk) on the TestClock; time passes only as modelled: the store's lazy flush
 * (`LAZY_FLUSH`, so the crash keeps the message) and the clock set back across the restart.
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

describe("brokerDeliveredAt of a message restored from above a capped stamp floor", () => {
  it.effect("delivered before the new run's stamps reach its receipt: brokerDeliveredAt is not below brokerReceivedAt", () =>
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
