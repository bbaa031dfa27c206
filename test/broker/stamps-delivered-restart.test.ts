/**
 * A durable broker restarted on a host whose clock is behind stamps no lower than its last run did (review revbq
 * bq1): a message the last run DELIVERED is not in the restored mail, yet its replay record is restored and a cancel
 * after the restart is routed to its receiver (Receipts.recordedRoute); its control's stamp must not be below the
 * `brokerReceivedAt` the receiver's client holds. The floor comes from the highest stamp the last run stored with its
 * commits (docs/store.md), not only from the restored mail. (Was the reviewer's probe
 * test/zz-review-revbq-delivered.test.ts.)
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { assertDelivered } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { advance } from "../support/memory.ts"
import { restartWorld } from "../support/restartWorld.ts"

const START = 1_000_000
const STEP = 5_000
const DAY = 24 * 60 * 60 * 1000

describe("stamps across a durable restart (revbq bq1): a durable restart on an earlier clock, message delivered in the last run", () => {
  it.effect("a cancel of a message the last run delivered is not stamped before its brokerReceivedAt", () =>
    Effect.gen(function*() {
      const { disk, run } = yield* restartWorld()
      yield* TestClock.setTime(START)
      const first = yield* run
      const m0 = message("for bob, live")
      assertDelivered(yield* send(first.alice.client, "bob", m0))
      const received = (yield* messageFor(first.bob.client, m0.id)).message.brokerReceivedAt ?? 0
      assert.isAtLeast(received, START, "setup: m0 stamped by the first run's clock")
      yield* advance(1_000) // committed
      assert.strictEqual(disk.mail.size, 0, "setup: m0 left the store (delivered)")
      yield* first.broker.crash

      yield* TestClock.setTime(START - STEP)
      const { alice: back, bob } = yield* run
      yield* back.client.send({ type: "cancel_message", messageId: m0.id })
      yield* settled([back.client, bob.client])
      const control = yield* bob.client.next("message_control", (frame) => frame.control.messageId === m0.id, "1 second")
      assert.isAtLeast(control.control.timestamp ?? 0, received)
    }))

  it.effect("a store's far-future highest stamp holds the stamps at most a day past the clock, and is stored over", () =>
    Effect.gen(function*() {
      const { disk, run } = yield* restartWorld()
      disk.stampHigh = START + 10 * DAY // written by a broker whose clock read ten days ahead
      yield* TestClock.setTime(START)
      const { alice, bob } = yield* run
      const m0 = message("for bob")
      assertDelivered(yield* send(alice.client, "bob", m0))
      const received = (yield* messageFor(bob.client, m0.id)).message.brokerReceivedAt
      assert.strictEqual(received, START + DAY, "the stamps did not start at the cap")
      yield* advance(1_000) // committed
      assert.strictEqual(disk.stampHigh, START + DAY, "the capped highest stamp was not stored over the far one")
    }))
})
