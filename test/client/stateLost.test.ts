/**
 * `IntercomClient.stateLost` (`state-epoch-v1`), in memory under TestClock:
 * a reconnect to a broker holding another state than the last connection's
 * (a memory-mode broker restarted) is announced, before the reconnect itself,
 * with what this client had left in the old state — the asks the old broker
 * acknowledged and the mail it acknowledged as queued — and nothing is sent
 * again. A durable broker restarted over the same store keeps its state: no
 * announcement, the same `stateEpoch`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import { randomUUID } from "node:crypto"
import { type BrokerStateLost, describeStateLost, LOST_SENDS_LIMIT, StateEpochs } from "../../src/client/StateEpochs.ts"
import type { IntercomClientService } from "../../src/client/IntercomClient.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { durableBroker } from "../support/durable.ts"
import { advance, type MemoryNetwork, memoryNetwork } from "../support/memory.ts"
import { makeMemoryClient, memoryClientOptions } from "./support.ts"

/** A client of `world`'s broker that reconnects after 100 ms. */
const memoryClient = (world: MemoryNetwork, sessionId: string) =>
  makeMemoryClient(memoryClientOptions(world, sessionId, sessionId, { reconnectBaseMs: 100, reconnectMaxMs: 100 }))

/** Every element of `client`'s `stateLost` and `reconnects`, in the order published (subscribed at once). */
const watch = (client: IntercomClientService) =>
  Effect.gen(function*() {
    const seen: Array<BrokerStateLost | number> = []
    yield* Effect.forkChild(Stream.runForEach(client.stateLost, (lost) => Effect.sync(() => seen.push(lost))), {
      startImmediately: true
    })
    yield* Effect.forkChild(Stream.runForEach(client.reconnects, (n) => Effect.sync(() => seen.push(n))), {
      startImmediately: true
    })
    return seen
  })

const text = (body: string) => ({ id: randomUUID(), timestamp: 0, content: { text: body } })

/** A send, with simulated time to let a durable broker commit before it acknowledges. */
const sent = (client: IntercomClientService, request: Parameters<IntercomClientService["send"]>[0]) =>
  Effect.gen(function*() {
    const sending = yield* Effect.forkChild(client.send(request), { startImmediately: true })
    yield* advance(100)
    return (yield* Fiber.join(sending)).delivery
  })

/** A world where `asker` asked `target` and left mail queued for `away` (connected once, then gone). */
const setup = (startBroker: (world: MemoryNetwork) => Effect.Effect<{ readonly crash: Effect.Effect<void> }>) =>
  Effect.gen(function*() {
    const world = yield* memoryNetwork()
    const broker = yield* startBroker(world)
    const asker = (yield* memoryClient(world, "asker")).client
    const target = (yield* memoryClient(world, "target")).client
    const away = yield* memoryClient(world, "away")
    yield* Effect.all([asker.connect, target.connect, away.client.connect])
    yield* away.close
    const question = { ...text("which port?"), expectsReply: true }
    assert.strictEqual(yield* sent(asker, { to: "target", message: question }), "socket_delivered")
    const note = text("for later")
    assert.strictEqual(yield* sent(asker, { to: "away", message: note }), "queued")
    assert.strictEqual(yield* sent(asker, { to: "target", message: text("plain") }), "socket_delivered")
    const epoch = (yield* asker.status).stateEpoch ?? assert.fail("the broker gave no state epoch")
    const seen = yield* watch(asker)
    return { world, broker, asker, question, note, epoch, seen }
  })

describe("IntercomClient: the broker's state epoch (state-epoch-v1)", () => {
  it.effect("a memory-mode broker's restart is announced before the reconnect, with the lost ask and queued mail", () =>
    Effect.gen(function*() {
      const { asker, broker, epoch, note, question, seen, world } = yield* setup((world) => world.startBroker({ idleExit: null }))
      yield* broker.crash
      yield* world.startBroker({ idleExit: null })
      yield* advance(1_000)
      assert.strictEqual((yield* asker.status).connections, 2)
      const newEpoch = (yield* asker.status).stateEpoch ?? assert.fail("the new broker gave no state epoch")
      assert.notStrictEqual(newEpoch, epoch)
      assert.deepStrictEqual(seen, [
        {
          _tag: "BrokerStateLost",
          previousEpoch: epoch,
          stateEpoch: newEpoch,
          connections: 2,
          asks: [{ messageId: question.id, to: "target", delivery: "socket_delivered" }],
          queued: [{ messageId: note.id, to: "away", delivery: "queued" }]
        },
        2
      ])
      const lost = seen[0]
      if (typeof lost === "number" || lost === undefined) return assert.fail("no state loss announced")
      const said = describeStateLost(lost)
      assert.include(said, "The broker restarted without its saved state")
      assert.include(said, `${question.id} to target`)
      assert.include(said, `${note.id} to away`)
      assert.include(said, "Nothing was sent again")
    }))

  it.effect("a durable broker's restart over the same store keeps the epoch: only the reconnect is announced", () =>
    Effect.gen(function*() {
      const disk = makeMemoryMailState()
      const { asker, broker, epoch, seen, world } = yield* setup((world) => durableBroker(world, disk, { idleExit: null }))
      yield* broker.crash
      yield* durableBroker(world, disk, { idleExit: null })
      yield* advance(1_000)
      assert.strictEqual((yield* asker.status).connections, 2)
      assert.strictEqual((yield* asker.status).stateEpoch, epoch)
      assert.deepStrictEqual(seen, [2])
    }))

  it.effect("a second restart lists only what the state of the connection before held", () =>
    Effect.gen(function*() {
      const { asker, broker, question, seen, world } = yield* setup((world) => world.startBroker({ idleExit: null }))
      yield* broker.crash
      const second = yield* world.startBroker({ idleExit: null })
      yield* advance(1_000)
      const again = { ...text("and now?"), expectsReply: true }
      yield* advance(2_000) // the target is back too
      assert.strictEqual(yield* sent(asker, { to: "target", message: again }), "socket_delivered")
      yield* second.crash
      yield* world.startBroker({ idleExit: null })
      yield* advance(1_000)
      const losses = seen.filter((item): item is BrokerStateLost => typeof item !== "number")
      assert.deepStrictEqual(losses.map((lost) => lost.asks.map((ask) => ask.messageId)), [[question.id], [again.id]])
      assert.deepStrictEqual(losses[1]?.queued, [])
    }))

  it.effect("an ask answered, or given up, before the restart is not listed as one that can no longer be answered", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const broker = yield* world.startBroker({ idleExit: null })
      const asker = (yield* memoryClient(world, "asker")).client
      const target = (yield* memoryClient(world, "target")).client
      yield* Effect.all([asker.connect, target.connect])
      const answered = { ...text("which port?"), expectsReply: true }
      const givenUp = { ...text("which host?"), expectsReply: true }
      const open = { ...text("which user?"), expectsReply: true }
      for (const question of [answered, givenUp, open]) {
        assert.strictEqual(yield* sent(asker, { to: "target", message: question }), "socket_delivered")
      }
      const reply = { ...text("8080"), replyTo: answered.id }
      assert.strictEqual(yield* sent(target, { to: "asker", message: reply }), "socket_delivered")
      yield* asker.cancelAsk(givenUp.id)
      const seen = yield* watch(asker)
      yield* broker.crash
      yield* world.startBroker({ idleExit: null })
      yield* advance(1_000)
      const lost = seen[0]
      if (typeof lost === "number" || lost === undefined) return assert.fail("no state loss announced")
      assert.deepStrictEqual(lost.asks, [{ messageId: open.id, to: "target", delivery: "socket_delivered" }])
      assert.notInclude(describeStateLost(lost), answered.id)
      assert.notInclude(describeStateLost(lost), givenUp.id)
    }))
})

describe("StateEpochs", () => {
  const ask = (i: number) => ({ to: "t", message: { id: `q${i}`, timestamp: 0, content: { text: "?" }, expectsReply: true } })
  const ack = { messageId: "", delivery: "socket_delivered" as const }

  it("keeps the newest LOST_SENDS_LIMIT asks of an epoch, and nothing from a broker that gives no epoch", () => {
    const epochs = new StateEpochs()
    assert.isUndefined(epochs.adopt("e1", 1))
    for (let i = 0; i < LOST_SENDS_LIMIT + 5; i++) epochs.acknowledged("e1", ask(i), ack)
    epochs.acknowledged(undefined, ask(-1), ack)
    const lost = epochs.adopt("e2", 2)
    assert.strictEqual(lost?.asks.length, LOST_SENDS_LIMIT)
    assert.strictEqual(lost?.asks[0]?.messageId, "q5")
    assert.isUndefined(epochs.adopt("e2", 3), "the same epoch again is no loss")
  })

  it("a reply forgets its ask, queued or not; giving an ask up forgets it as an ask only", () => {
    const epochs = new StateEpochs()
    epochs.adopt("e1", 1)
    for (let i = 0; i < 4; i++) epochs.acknowledged("e1", ask(i), { messageId: "", delivery: "queued" })
    epochs.answered("q0")
    epochs.askEnded("q1")
    epochs.answered("not-an-ask")
    const lost = epochs.adopt("e2", 2)
    assert.deepStrictEqual(lost?.asks.map((entry) => entry.messageId), ["q2", "q3"])
    assert.deepStrictEqual(lost?.queued.map((entry) => entry.messageId), ["q1", "q2", "q3"])
  })

  it("a broker without the extension in between says nothing, and compares nothing after it", () => {
    const epochs = new StateEpochs()
    epochs.adopt("e1", 1)
    assert.isUndefined(epochs.adopt(undefined, 2))
    assert.isUndefined(epochs.adopt("e2", 3))
  })
})
