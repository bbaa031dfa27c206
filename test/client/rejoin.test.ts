/**
 * After a broker restart, a send to a session that has not registered again
 * yet is retried for a grace period rather than failed as "not found" — the
 * state is transient. An ask no connection lost, refused "target
 * disconnected" in that grace, is not retried: the refusal answers its only
 * write (afterLoss.ts `retriedInGrace`). In memory under TestClock: the broker crashes and a new
 * one starts; the sender reconnects fast, its target slowly.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Scope, Stream } from "effect"
import { makeMemory, makeMemoryMailState } from "../../src/store/MailStore.ts"
import { randomUUID } from "node:crypto"
import { sessionRegistration } from "../../src/session/IntercomSession.ts"
import { gatedStore } from "../support/durable.ts"
import { advance, type MemoryNetwork, memoryNetwork, step } from "../support/memory.ts"
import { makeMemoryClient } from "./support.ts"

/**
 * An `IntercomClient` of `world` as session `sessionId`, reconnecting every
 * `reconnectMs`; closed on simulated time at the end (a client's orderly close
 * may wait on the clock).
 */
const memoryClient = (world: MemoryNetwork, sessionId: string, reconnectMs: number) =>
  makeMemoryClient({
    agentDir: "/mem",
    intercomDir: "/mem/intercom",
    socketPath: world.address,
    sessionId,
    registration: sessionRegistration({ sessionId, identity: { name: sessionId, cwd: "/w", model: "m" }, pid: 1, startedAt: 0 }),
    launch: false,
    dial: world.dial,
    reconnectBaseMs: reconnectMs,
    reconnectMaxMs: reconnectMs
  })

describe("a send while its target rejoins a restarted broker", () => {
  const setup = Effect.gen(function*() {
    const world = yield* memoryNetwork()
    let broker = yield* world.startBroker({ idleExit: null })
    const sender = (yield* memoryClient(world, "sender", 100)).client
    const target = (yield* memoryClient(world, "target", 5_000)).client
    yield* Effect.all([sender.connect, target.connect])
    yield* broker.crash
    broker = yield* world.startBroker({ idleExit: null })
    // The sender is back after its first backoff; the target not yet.
    yield* advance(1_000)
    assert.strictEqual((yield* sender.status).connections, 2)
    assert.isFalse((yield* target.status).connected)
    return { broker, sender, target, world }
  })

  it.effect("announces the reconnect once the new connection is live (`reconnects`), with the rejoin grace", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const broker = yield* world.startBroker({ idleExit: null })
      const client = (yield* memoryClient(world, "sender", 100)).client
      yield* client.connect
      const announced = yield* Effect.forkChild(client.reconnects.pipe(Stream.take(1), Stream.runCollect), {
        startImmediately: true
      })
      yield* broker.crash
      yield* world.startBroker({ idleExit: null })
      yield* advance(1_000)
      assert.isDefined(announced.pollUnsafe(), "the reconnect was announced")
      assert.deepStrictEqual(yield* Fiber.join(announced), [2])
      assert.isTrue((yield* client.status).connected)
      assert.strictEqual(client.rejoinGraceMs, 10_000)
    }))

  it.effect("waits for the target to register again, then delivers", () =>
    Effect.gen(function*() {
      const { sender, target } = yield* setup
      const sending = yield* Effect.forkChild(
        sender.send({ to: "target", message: { id: randomUUID(), timestamp: 0, content: { text: "still there?" } } })
      )
      yield* advance(8_000)
      assert.isTrue((yield* target.status).connected)
      const delivery = yield* Fiber.join(sending)
      assert.strictEqual(delivery.delivery, "socket_delivered")
    }))

  it.effect("fails as not found once the grace has passed", () =>
    Effect.gen(function*() {
      const { sender } = yield* setup
      const sending = yield* Effect.forkChild(
        sender.send({ to: "nobody-ever", message: { id: randomUUID(), timestamp: 0, content: { text: "?" } } })
      )
      yield* advance(8_000)
      assert.isUndefined(sending.pollUnsafe(), "gave up before the grace ended")
      // The grace is 10 s from the reconnect, which was about 1 s before the send.
      yield* advance(2_000)
      const error = yield* Effect.flip(Fiber.join(sending))
      assert.strictEqual(error._tag, "TargetNotFound")
    }))
  it.effect("retries a not-found send on the clock, backing off to 4 a second, and stops when the grace ends", () =>
    Effect.gen(function*() {
      const { broker, sender } = yield* setup
      const refusals = Effect.map(broker.core.metrics, (metrics) => metrics.routed.refusedByCode["E_TARGET_NOT_FOUND"] ?? 0)
      const sending = yield* Effect.forkChild(
        sender.send({ to: "nobody-ever", message: { id: randomUUID(), timestamp: 0, content: { text: "?" } } }),
        { startImmediately: true }
      )
      // Tried once, then after 25, 50, 100, 200 and 250 ms (the first second: 7 tries), then every 250 ms.
      yield* advance(0)
      assert.strictEqual(yield* refusals, 1, "no retry before the clock moves")
      yield* advance(1_000)
      assert.strictEqual(yield* refusals, 7)
      yield* advance(2_000)
      assert.strictEqual(yield* refusals, 15)
      // The grace is 10 s from the reconnect, about 1 s before the send: once it is over the failure stands.
      yield* advance(7_000)
      const error = yield* Effect.flip(Fiber.join(sending))
      assert.strictEqual(error._tag, "TargetNotFound")
      const tries = yield* refusals
      yield* advance(5_000)
      assert.strictEqual(yield* refusals, tries, "no retry after the grace")
    }))

  it.effect("an ask never lost on the way, refused 'target disconnected' inside the grace, fails at once with it: written once", () =>
    Effect.gen(function*() {
      const { broker, sender, world } = yield* setup
      // "gone" registers with the new broker and leaves: it knows that id only as gone, and refuses an ask to it.
      const gone = yield* world.session({ sessionId: "gone" })
      yield* step(gone.client.destroy)
      const refusals = Effect.map(broker.core.metrics, (metrics) => metrics.routed.refusedByCode["E_TARGET_DISCONNECTED"] ?? 0)
      // The ask's only write answers it: no connection lost it, so the refusal says what became of it (afterLoss.ts
      // retries it through the grace only after a loss).
      const asking = yield* step(
        sender.send({ to: "gone", message: { id: randomUUID(), timestamp: 0, expectsReply: true, content: { text: "?" } } })
      )
      assert.isDefined(asking.pollUnsafe(), "the refused ask still waited, inside the rejoin grace")
      const error = yield* Effect.flip(Fiber.join(asking))
      assert.strictEqual(error._tag, "TargetDisconnected")
      yield* advance(2_000)
      assert.strictEqual(yield* refusals, 1, "the ask was written again in the grace")
    }))

  it.effect("a reply whose ask the restarted broker has not seen again is retried until the asker asks again", () =>
    Effect.gen(function*() {
      const { sender, target } = yield* setup
      // The ask was delivered before the crash but never stored: the restarted broker knows no such ask.
      const askId = randomUUID()
      const replying = yield* Effect.forkChild(
        sender.send({ to: "target", message: { id: randomUUID(), timestamp: 0, replyTo: askId, content: { text: "main" } } })
      )
      yield* advance(6_000)
      assert.isTrue((yield* target.status).connected)
      assert.isUndefined(replying.pollUnsafe(), "the reply waits while its ask is unknown")
      // The asker, back, sends its unacknowledged ask again (same id): the edge is open once more.
      const asked = yield* target.send({
        to: "sender",
        message: { id: askId, timestamp: 0, expectsReply: true, content: { text: "which branch?" } }
      })
      assert.strictEqual(asked.delivery, "socket_delivered")
      yield* advance(1_000)
      const delivery = yield* Fiber.join(replying)
      assert.strictEqual(delivery.delivery, "socket_delivered")
    }))

  it.effect("a reply to an ask nobody sends again fails as such once the grace has passed", () =>
    Effect.gen(function*() {
      const { sender } = yield* setup
      const replying = yield* Effect.forkChild(
        sender.send({ to: "target", message: { id: randomUUID(), timestamp: 0, replyTo: "never-asked", content: { text: "?" } } })
      )
      yield* advance(8_000)
      assert.isUndefined(replying.pollUnsafe(), "gave up before the grace ended")
      yield* advance(2_000)
      const error = yield* Effect.flip(Fiber.join(replying))
      assert.strictEqual(error._tag, "ReplyTargetMismatch")
    }))
})

describe("a send lost with its connection whose target never comes back", () => {
  it.effect("fails as ConnectionLost (outcome unknown), not as not found: the first attempt may have been delivered", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      // A durable broker whose commits wait: the delivery goes, the ack cannot. An ask: its acknowledgement
      // waits for the commit that stores its edge (a plain message's would come with the target's receipt).
      const { store, open } = yield* gatedStore(disk)
      const broker = yield* world.startBroker({ idleExit: null, store })
      const sender = (yield* memoryClient(world, "sender", 100)).client
      const target = yield* memoryClient(world, "target", 100)
      yield* Effect.all([sender.connect, target.client.connect])
      const received = yield* target.client.messages.pipe(Stream.take(1), Stream.runCollect, Effect.forkChild)
      const sending = yield* Effect.forkChild(
        sender.send({
          to: "target",
          message: { id: randomUUID(), timestamp: 0, expectsReply: true, content: { text: "delivered, then forgotten" } }
        })
      )
      assert.strictEqual((yield* Fiber.join(received)).length, 1, "the target got it before the commit")
      // The target's process ends; the broker is killed before its commit, then comes back without it.
      yield* Scope.close(target.scope, Exit.void)
      disk.down = true
      yield* open
      yield* broker.crash
      yield* world.startBroker({ idleExit: null, store: makeMemory(disk) })
      yield* advance(12_000)
      const error = yield* Effect.flip(Fiber.join(sending))
      assert.strictEqual(error._tag, "ConnectionLost")
    }))
})
