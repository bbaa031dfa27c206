/**
 * The broker's stamps never go backwards (review revbm BM1): a client reads a
 * control stamped before a message's `brokerReceivedAt` as about an earlier
 * message under the same (sender, id), so a control the broker makes after its
 * wall clock stepped back (an NTP step, a VM resumed) must still be stamped no
 * earlier than the message it is about — within a run (a hand-driven Router
 * whose clock the test moves back) and across a durable broker's restart on a
 * host whose clock is behind (memory brokers over a memory store, TestClock).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { BrokerStamps } from "../../src/broker/BrokerStamps.ts"
import { assertDelivered } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { message, messageFor, send } from "../support/broker.ts"
import type { Seen } from "../support/controlWorld.ts"
import { advance } from "../support/memory.ts"
import { restartWorld } from "../support/restartWorld.ts"
import { steppedWorld } from "../support/steppedClock.ts"

const START = 1_000_000
/** How far the wall clock steps back. */
const STEP = 5_000

/** The `brokerReceivedAt` of the message `id` among `frames` (dies when it is not there). */
const receivedAt = (frames: ReadonlyArray<Seen>, id: string): number => {
  const stamp = frames.find((frame) => frame.type === "message" && frame.message?.id === id)?.message?.brokerReceivedAt
  if (stamp === undefined) throw new Error(`no message ${id} with a brokerReceivedAt`)
  return stamp
}

/** The `timestamp` of the `action` control about `id` among `frames` (dies when it is not there). */
const controlStamp = (frames: ReadonlyArray<Seen>, action: string, id: string): number => {
  const stamp = frames.find((frame) =>
    frame.type === "message_control" && frame.control?.action === action && frame.control.messageId === id
  )?.control?.timestamp
  if (stamp === undefined) throw new Error(`no ${action} control about ${id} with a timestamp`)
  return stamp
}

describe("BrokerStamps", () => {
  it("gives the clock's reading, or the last stamp while the clock reads earlier", () => {
    const clock = { now: START }
    const stamps = new BrokerStamps(() => clock.now)
    assert.strictEqual(stamps.next(), START)
    clock.now = START - STEP
    assert.strictEqual(stamps.next(), START, "a stamp went back with the clock")
    clock.now = START + 1
    assert.strictEqual(stamps.next(), START + 1, "a stamp did not follow the clock forward again")
    assert.strictEqual(stamps.at(START - STEP), START + 1, "a stamp for a reading taken earlier went back")
  })

  it("a floor holds the stamps up until the clock passes it", () => {
    const clock = { now: START }
    const stamps = new BrokerStamps(() => clock.now)
    stamps.floor(START + STEP)
    assert.strictEqual(stamps.next(), START + STEP, "a stamp was below the floor")
    clock.now = START + STEP + 1
    assert.strictEqual(stamps.next(), START + STEP + 1)
  })
})

describe("a control made after the broker's clock stepped back is not stamped before its message", () => {
  it.effect("a cancel: its timestamp is not below the cancelled message's brokerReceivedAt", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* steppedWorld(START, START - STEP)
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      const frames = w.framesOf(w.b1)
      assert.strictEqual(receivedAt(frames, m0.id), START, "setup: m0 stamped before the step")
      assert.isAtLeast(controlStamp(frames, "cancel", m0.id), receivedAt(frames, m0.id))
    }))

  it.effect("a supersede: its timestamp and the new message's brokerReceivedAt are not below the old one's", () =>
    Effect.gen(function*() {
      const { w, m0 } = yield* steppedWorld(START, START - STEP)
      const m1 = { ...message("m1"), supersedes: m0.id }
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      const frames = w.framesOf(w.b1)
      assert.isAtLeast(controlStamp(frames, "supersede", m0.id), receivedAt(frames, m0.id))
      assert.isAtLeast(receivedAt(frames, m1.id), receivedAt(frames, m0.id))
    }))
})

describe("a durable broker restarted on a host whose clock is behind", () => {
  it.effect("a cancel of a message the last run stored is not stamped before its brokerReceivedAt", () =>
    Effect.gen(function*() {
      const { disk, run } = yield* restartWorld()
      yield* TestClock.setTime(START)
      const first = yield* run
      yield* first.bob.client.send({ type: "unregister" })
      yield* first.alice.client.next("session_left", (frame) => frame.sessionId === "bob")
      const m0 = message("for bob, away")
      assertDelivered(yield* send(first.alice.client, "bob", m0), "queued")
      yield* advance(1_000) // committed
      assert.strictEqual(disk.mail.size, 1, "m0 was not stored: the test sets up nothing")
      yield* first.broker.crash

      yield* TestClock.setTime(START - STEP)
      const { alice: back, bob } = yield* run
      const received = (yield* messageFor(bob.client, m0.id)).message.brokerReceivedAt ?? 0
      assert.isAtLeast(received, START, "setup: m0 keeps the last run's stamp")
      yield* back.client.send({ type: "cancel_message", messageId: m0.id })
      yield* settled([back.client, bob.client])
      const control = yield* bob.client.next("message_control", (frame) => frame.control.messageId === m0.id, "1 second")
      assert.isAtLeast(control.control.timestamp ?? 0, received)
    }))
})
