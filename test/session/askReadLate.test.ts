/**
 * How long a received ask stays pending when it was read late (C-RPL-6 with
 * `ask-timeout-v1`): its asker's wait counts from `message.brokerReceivedAt`,
 * the broker's edge closes at that stamp plus `askTimeoutMs`, and the session
 * keeps the ask pending and answerable until then — not for a whole
 * `askTimeoutMs` from its own receive, which an ask that waited in the
 * mailbox or behind slow writes would outlive the edge by.
 *
 * - Over a fake client on the TestClock: the stamp's deadline bounds
 *   `pending`, `reply` and the published `pendingAsks`; a stamp in this
 *   process's future (another process's clock) never extends the ask past
 *   its receive plus its timeout; without a stamp the receive
 *   counts.
 * - On the in-memory broker: an ask whose frame the recipient reads six
 *   seconds late leaves `pending` exactly when the broker starts refusing a
 *   reply to it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Deferred, Effect, Queue } from "effect"
import { TestClock } from "effect/testing"
import type { InboundMessage } from "../../src/client/events.ts"
import { HEALTH_V1 } from "../../src/protocol/features.ts"
import { NoReplyContext } from "../../src/session/errors.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { memoryWorld, type MemoryWorld } from "../support/memoryWorld.ts"
import { B, inboundMessage, settle, withPeers } from "./support.ts"

const TIMEOUT = 10_000

/** B's ask `q1`, stamped by the broker at `brokerReceivedAt` (none when undefined), its asker waiting TIMEOUT. */
const askFromB = (brokerReceivedAt: number | undefined): InboundMessage => ({
  ...inboundMessage(B, "q1", "which path?", {
    expectsReply: true,
    ...(brokerReceivedAt === undefined ? {} : { brokerReceivedAt })
  }),
  askTimeoutMs: TIMEOUT
})

/** The ids `pending` lists now. */
const pendingIds = (session: { readonly pending: Effect.Effect<{ readonly asks: ReadonlyArray<{ readonly message: { readonly id: string } }> }, unknown> }) =>
  Effect.map(Effect.orDie(session.pending), ({ asks }) => asks.map((context) => context.message.id))

describe("an ask read late is pending until its broker deadline", () => {
  it.effect("received 6 s after the broker stamped it: pending and answerable until stamp + askTimeoutMs, then neither", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      yield* session.connect
      yield* TestClock.adjust(6_000)
      yield* client.push(askFromB(0))
      yield* settle
      assert.deepStrictEqual(yield* pendingIds(session), ["q1"])
      yield* TestClock.adjust(TIMEOUT - 6_000 - 1)
      assert.deepStrictEqual(yield* pendingIds(session), ["q1"], "pending the last millisecond before the deadline")
      yield* TestClock.adjust(1)
      // The broker's edge closed now (it refuses a reply from `brokerReceivedAt + askTimeoutMs` on).
      assert.deepStrictEqual(yield* pendingIds(session), [])
      assert.strictEqual(yield* session.pendingCount, 0)
      const refused = yield* Effect.flip(session.reply({ message: "too late", replyTo: "q1" }))
      assert.instanceOf(refused, NoReplyContext)
      assert.deepStrictEqual(client.sends, [], "nothing was written for a reply the broker would refuse")
    }))

  it.effect("the published pendingAsks falls to 0 at the broker deadline, not a whole timeout after the receive", () =>
    Effect.gen(function*() {
      const unit = yield* withPeers()
      unit.client.features = [...unit.client.features, HEALTH_V1]
      yield* unit.session.connect
      yield* settle
      yield* TestClock.adjust(6_000)
      yield* unit.client.push(askFromB(0))
      yield* settle
      assert.deepInclude(unit.client.presences().at(-1), { pendingAsks: 1 })
      yield* TestClock.adjust(TIMEOUT - 6_000)
      yield* settle
      assert.deepInclude(unit.client.presences().at(-1), { pendingAsks: 0 })
    }))

  it.effect("a stamp in this process's future never keeps the ask past its receive plus askTimeoutMs", () =>
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

  it.effect("without askTimeoutMs the session's own ask timeout counts from the stamp too", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers({ askTimeoutMs: TIMEOUT })
      yield* session.connect
      yield* TestClock.adjust(6_000)
      yield* client.push(inboundMessage(B, "q1", "which path?", { expectsReply: true, brokerReceivedAt: 0 }))
      yield* settle
      yield* TestClock.adjust(TIMEOUT - 6_000 - 1)
      assert.deepStrictEqual(yield* pendingIds(session), ["q1"])
      yield* TestClock.adjust(1)
      assert.deepStrictEqual(yield* pendingIds(session), [])
    }))
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
  it.effect("leaves pending exactly when the broker starts refusing a reply to it", () =>
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
      yield* TestClock.adjust(TIMEOUT - 6_000 - 1)
      assert.deepStrictEqual(yield* pendingIds(answerer.session), [inbound.message.id])
      yield* TestClock.adjust(1)
      assert.deepStrictEqual(yield* pendingIds(answerer.session), [], "pending after the broker closed the ask")
      // The broker agrees: a reply written anyway is refused.
      const late = yield* Effect.flip(
        answerer.client.send({ to: "asker", message: { id: "late-1", timestamp: 0, content: { text: "late" }, replyTo: inbound.message.id } })
      )
      assert.include(late.message, "does not match a pending ask")
    }))
})
