/**
 * How long a received ask stays pending when it was read late (C-RPL-6 with
 * `ask-timeout-v1`): the broker's edge closes at `brokerReceivedAt +
 * askTimeoutMs` on the broker's clock, so the session takes the mailbox wait
 * the broker stamped (`brokerDeliveredAt - brokerReceivedAt`, one clock) off
 * the ask's timeout from its own receive — never comparing the broker's
 * clock with its own (review revaf AF1).
 *
 * - Over a fake client on the TestClock: the stamped wait bounds `pending`,
 *   `reply` and the published `pendingAsks`; with only `brokerReceivedAt`
 *   (a stamp in this process's future or past) or none, the receive plus the
 *   timeout counts (review revag AG2).
 * - On the tracker: a broker clock behind or ahead of the session's changes
 *   nothing, only the stamped wait counts.
 * - On the in-memory broker: time in the broker's output (the recipient
 *   reading six seconds late) is not stamped, so the ask stays pending that
 *   much past the broker's deadline, until its receive plus its timeout.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Deferred, Effect, Queue } from "effect"
import { TestClock } from "effect/testing"
import type { InboundMessage } from "../../src/client/events.ts"
import type { Message } from "../../src/protocol/frames.ts"
import { HEALTH_V1 } from "../../src/protocol/features.ts"
import { AskNoLongerOpen } from "../../src/session/errors.ts"
import { makeReplyTracker } from "../../src/session/ReplyTracker.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { memoryWorld, type MemoryWorld } from "../support/memoryWorld.ts"
import { B, inboundMessage, settle, withPeers } from "./support.ts"

const TIMEOUT = 10_000

/**
 * B's ask `q1`, its asker waiting TIMEOUT, stamped by the broker when it received it and when it handed it
 * over (`brokerReceivedAt`, `brokerDeliveredAt`: none when undefined).
 */
const askFromB = (brokerReceivedAt: number | undefined, brokerDeliveredAt?: number): InboundMessage => ({
  ...inboundMessage(B, "q1", "which path?", {
    expectsReply: true,
    ...(brokerReceivedAt === undefined ? {} : { brokerReceivedAt }),
    ...(brokerDeliveredAt === undefined ? {} : { brokerDeliveredAt })
  }),
  askTimeoutMs: TIMEOUT
})

/** The ids `pending` lists now. */
const pendingIds = (session: { readonly pending: Effect.Effect<{ readonly asks: ReadonlyArray<{ readonly message: { readonly id: string } }> }, unknown> }) =>
  Effect.map(Effect.orDie(session.pending), ({ asks }) => asks.map((context) => context.message.id))

describe("an ask read late is pending until its broker deadline", () => {
  it.effect("6 s in the broker's mailbox: pending and answerable until receive + askTimeoutMs - 6 s, then neither", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      yield* session.connect
      yield* TestClock.adjust(6_000)
      yield* client.push(askFromB(0, 6_000))
      yield* settle
      assert.deepStrictEqual(yield* pendingIds(session), ["q1"])
      yield* TestClock.adjust(TIMEOUT - 6_000 - 1)
      assert.deepStrictEqual(yield* pendingIds(session), ["q1"], "pending the last millisecond before the deadline")
      yield* TestClock.adjust(1)
      // The broker's edge closed now (it refuses a reply from `brokerReceivedAt + askTimeoutMs` on).
      assert.deepStrictEqual(yield* pendingIds(session), [])
      assert.strictEqual(yield* session.pendingCount, 0)
      const refused = yield* Effect.flip(session.reply({ message: "too late", replyTo: "q1" }))
      assert.instanceOf(refused, AskNoLongerOpen)
      assert.deepStrictEqual(client.sends, [], "nothing was written for a reply the broker would refuse")
    }))

  it.effect("the published pendingAsks falls to 0 at the broker deadline (6 s in the mailbox), not a whole timeout after the receive", () =>
    Effect.gen(function*() {
      const unit = yield* withPeers()
      unit.client.features = [...unit.client.features, HEALTH_V1]
      yield* unit.session.connect
      yield* settle
      yield* TestClock.adjust(6_000)
      yield* unit.client.push(askFromB(0, 6_000))
      yield* settle
      assert.deepInclude(unit.client.presences().at(-1), { pendingAsks: 1 })
      yield* TestClock.adjust(TIMEOUT - 6_000)
      yield* settle
      assert.deepInclude(unit.client.presences().at(-1), { pendingAsks: 0 })
    }))

  it.effect("with only brokerReceivedAt, a stamp in this process's future never keeps the ask past its receive plus askTimeoutMs", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      yield* session.connect
      yield* TestClock.adjust(1_000)
      // The broker's clock runs 5 s ahead of this one.
      yield* client.push(askFromB(6_000))
      yield* settle
      yield* TestClock.adjust(TIMEOUT)
      assert.deepStrictEqual(yield* pendingIds(session), ["q1"], "pending for its whole timeout from the receive")
      yield* TestClock.adjust(1)
      assert.deepStrictEqual(yield* pendingIds(session), [], "not until the stamp's later deadline")
    }))

  it.effect("with only brokerReceivedAt, a stamp 5 min behind this process's clock does not end the ask before its receive plus askTimeoutMs", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      yield* session.connect
      yield* TestClock.adjust(300_000)
      // The broker's clock runs 5 min behind this one (review revag AG2): the lone stamp is not compared with it.
      yield* client.push(askFromB(0))
      yield* settle
      assert.deepStrictEqual(yield* pendingIds(session), ["q1"], "pending on receipt")
      yield* TestClock.adjust(TIMEOUT)
      assert.deepStrictEqual(yield* pendingIds(session), ["q1"], "pending for its whole timeout from the receive")
      yield* TestClock.adjust(1)
      assert.deepStrictEqual(yield* pendingIds(session), [])
    }))

  it.effect("without brokerReceivedAt (a broker that sets none) the receive starts the ask's timeout", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      yield* session.connect
      yield* TestClock.adjust(6_000)
      yield* client.push(askFromB(undefined))
      yield* settle
      yield* TestClock.adjust(TIMEOUT)
      assert.deepStrictEqual(yield* pendingIds(session), ["q1"])
      yield* TestClock.adjust(1)
      assert.deepStrictEqual(yield* pendingIds(session), [])
    }))

  it.effect("without askTimeoutMs the stamped mailbox wait comes off the session's own ask timeout too", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers({ askTimeoutMs: TIMEOUT })
      yield* session.connect
      yield* TestClock.adjust(6_000)
      yield* client.push(inboundMessage(B, "q1", "which path?", { expectsReply: true, brokerReceivedAt: 0, brokerDeliveredAt: 6_000 }))
      yield* settle
      yield* TestClock.adjust(TIMEOUT - 6_000 - 1)
      assert.deepStrictEqual(yield* pendingIds(session), ["q1"])
      yield* TestClock.adjust(1)
      assert.deepStrictEqual(yield* pendingIds(session), [])
    }))
})

describe("an ask's deadline never mixes the broker's clock with the session's", () => {
  const from = { id: "sess-a", cwd: "/", model: "m", pid: 1, startedAt: 0, lastActivity: 0 }
  /** A tracker holding ask `ask-1` the broker stamped `received`, `delivered` (its clock), received at `receivedAt` (ours). */
  const trackerWith = (received: number, delivered: number, receivedAt: number) => {
    const tracker = makeReplyTracker(TIMEOUT)
    const message: Message = {
      id: "ask-1",
      timestamp: 0,
      expectsReply: true,
      content: { text: "q" },
      brokerReceivedAt: received,
      brokerDeliveredAt: delivered
    }
    tracker.record({ from, message, receivedAt, askTimeoutMs: TIMEOUT })
    return tracker
  }
  const ids = (tracker: ReturnType<typeof makeReplyTracker>, now: number) => tracker.pending(now).map((context) => context.message.id)

  it("a broker clock 5 min behind, no mailbox wait: pending for the whole timeout from the receive", () => {
    const receivedAt = 1_300_000
    const tracker = trackerWith(1_000_000, 1_000_000, receivedAt)
    assert.deepStrictEqual(ids(tracker, receivedAt), ["ask-1"])
    assert.deepStrictEqual(ids(tracker, receivedAt + TIMEOUT - 1), ["ask-1"])
    assert.strictEqual(tracker.nextExpiry(receivedAt), receivedAt + TIMEOUT)
    assert.deepStrictEqual(ids(tracker, receivedAt + TIMEOUT), [])
  })

  it("a broker clock 5 min ahead, 6 s in the mailbox: the wait comes off the receive plus the timeout", () => {
    const receivedAt = 1_000_000
    const tracker = trackerWith(1_300_000, 1_306_000, receivedAt)
    assert.strictEqual(tracker.nextExpiry(receivedAt), receivedAt + TIMEOUT - 6_000)
    assert.deepStrictEqual(ids(tracker, receivedAt + TIMEOUT - 6_001), ["ask-1"])
    assert.deepStrictEqual(ids(tracker, receivedAt + TIMEOUT - 6_000), [])
  })

  it("a mailbox wait of the whole timeout or more: not pending at its receive", () => {
    const tracker = trackerWith(0, TIMEOUT + 5_000, 500)
    assert.deepStrictEqual(ids(tracker, 500), [])
  })

  it("a delivery stamp before the receipt stamp (the broker's clock stepped back): counted as no wait", () => {
    const tracker = trackerWith(50_000, 20_000, 100)
    assert.strictEqual(tracker.nextExpiry(100), 100 + TIMEOUT)
  })
})

/** A dialer of `world` whose connections hand on what they read only while the gate is open (`hold`, `release`). */
const gatedDial = (world: MemoryWorld) => {
  let gate: Deferred.Deferred<void> | undefined
  return {
    dial: (_socketPath: string) =>
      Effect.map(world.dial, (connection): Connection => ({
        ...connection,
        read: Effect.flatMap(connection.read, (frames) => {
          const held = gate
          return held === undefined ? Effect.succeed(frames) : Effect.as(Deferred.await(held), frames)
        })
      })),
    hold: Effect.sync(() => {
      gate = Deferred.makeUnsafe<void>()
    }),
    release: Effect.suspend(() => {
      const held = gate
      gate = undefined
      return held === undefined ? Effect.void : Deferred.succeed(held, undefined)
    })
  }
}

describe("an ask read late, on the in-memory broker", () => {
  it.effect("held in the broker's output (unstamped) it stays pending past the broker's deadline, until its receive plus the timeout", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const asker = yield* world.session("asker")
      const gate = gatedDial(world)
      const answerer = yield* world.session("answerer", { client: { dial: gate.dial } })
      // The answerer's reads back up: the ask is written to it at once and read six seconds on.
      yield* gate.hold
      const sentAt = yield* Clock.currentTimeMillis
      // The broker's acknowledgement is the barrier: it received the ask, and wrote it to the answerer, by then.
      const asked = yield* asker.client.send({
        to: "answerer",
        message: { id: "ask-1", timestamp: sentAt, content: { text: "well?" }, expectsReply: true },
        askTimeoutMs: TIMEOUT
      }).pipe(Effect.orDie)
      assert.strictEqual(asked.delivery, "socket_delivered")
      yield* TestClock.adjust(6_000)
      yield* gate.release
      const inbound = yield* Queue.take(answerer.inbound)
      assert.strictEqual(inbound.message.brokerReceivedAt, sentAt, "the broker received the ask when it was sent")
      assert.deepStrictEqual(yield* pendingIds(answerer.session), [inbound.message.id])
      assert.strictEqual(inbound.message.brokerDeliveredAt, sentAt, "written at once: no mailbox wait was stamped")
      yield* TestClock.adjust(TIMEOUT - 6_000)
      // The broker's edge closed now (sentAt + TIMEOUT): a reply written is refused …
      const late = yield* Effect.flip(
        answerer.client.send({ to: "asker", message: { id: "late-1", timestamp: 0, content: { text: "late" }, replyTo: inbound.message.id } })
      )
      assert.include(late.message, "does not match a pending ask")
      // … but the session cannot see the six seconds in the broker's output: the ask shows until its receive + TIMEOUT.
      assert.deepStrictEqual(yield* pendingIds(answerer.session), [inbound.message.id])
      yield* TestClock.adjust(6_000 - 1)
      assert.deepStrictEqual(yield* pendingIds(answerer.session), [inbound.message.id])
      yield* TestClock.adjust(1)
      assert.deepStrictEqual(yield* pendingIds(answerer.session), [], "pending a whole timeout after its receive")
    }))
})
