/**
 * Reconnect (C-BRK-27/28, P96): after the broker dies the client reconnects
 * and re-registers the same session id with what it had announced; a request
 * in flight is sent again once it is back (`ConnectionLost` only after the
 * replay window); an operation
 * during the outage waits for the reconnect; a broker that stops answering is
 * detected by the liveness probe and replaced.
 *
 * The logic runs on the in-memory network under TestClock, so every delay is
 * checked to the millisecond; one test kills a real spawned broker process.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber, Queue, Ref } from "effect"
import { dialUnixSocket, type Dialer } from "../../src/client/Dialer.ts"
import { RECONNECT_DECLINED } from "../../src/client/IntercomClient.ts"
import { encodeFrames } from "../../src/protocol/index.ts"
import { HEALTH_V1 } from "../../src/protocol/features.ts"
import { list, message } from "../support/broker.ts"
import { advance, advanceTo, memoryNetwork, now, settle, step, withMemoryBroker } from "../support/memory.ts"
import { readPidFile } from "../support/process.ts"
import {
  agentDir,
  brokerProcesses,
  makeClient,
  makeMemoryClient,
  memoryClientOptions,
  memoryFakeBroker,
  subscribe
} from "./support.ts"

const A_ID = "aaaaaaaa-1111-4000-8000-00000000000a"
const B_ID = "bbbbbbbb-1111-4000-8000-00000000000b"

/** beta stops reading and a filler fills everything between the broker and beta: sends to beta stay in flight. */
const stallBeta = (world: Effect.Success<ReturnType<typeof memoryNetwork>>) =>
  Effect.gen(function*() {
    const beta = yield* world.session({ sessionId: "beta" })
    yield* beta.client.pause
    const filler = yield* world.session({ sessionId: "filler" })
    yield* filler.client.sendRaw(encodeFrames(Array.from({ length: 8 }, (_, i) =>
      JSON.stringify({ type: "send", to: "beta", message: message(`fill ${i}`) }))))
  })

/** A broker with tiny links and outboxes, alpha connected to it (reconnecting after 500 ms), beta stalled. */
const alphaWithStalledBeta = Effect.gen(function*() {
  const world = yield* memoryNetwork({ linkCapacity: 1 })
  const first = yield* world.startBroker({ idleExit: null, outboxCapacity: 1 })
  const { client: a } = yield* makeMemoryClient(memoryClientOptions(world, A_ID, "alpha", { reconnectBaseMs: 500 }))
  yield* settle(a.connect)
  yield* stallBeta(world)
  return { world, first, a }
})

describe("reconnect after the broker dies (in memory)", () => {
  it.effect("a send in flight when the broker dies is sent again with the same id after the reconnect: one outcome, delivered once", () =>
    Effect.gen(function*() {
      const { world, first, a } = yield* alphaWithStalledBeta

      const inFlight = message("are you getting this?")
      const sending = yield* step(a.send({ to: "beta", message: inFlight }))
      assert.isUndefined(sending.pollUnsafe(), "test setup: the send was answered; it is not in flight")
      yield* first.crash
      assert.isUndefined(sending.pollUnsafe(), "the lost send failed instead of waiting to be sent again")

      // A new broker: alpha comes back after its backoff and sends the lost message again, same id.
      yield* world.startBroker({ idleExit: null })
      const betaBack = yield* world.session({ sessionId: "beta" })
      yield* advance("500 millis")
      assert.deepInclude(yield* a.status, { connected: true, connections: 2 })
      assert.strictEqual((yield* Fiber.join(sending)).delivery, "socket_delivered")
      assert.strictEqual((yield* betaBack.client.next("message")).message.id, inFlight.id)
      // Asking again is safe: the broker answers from its record, and beta gets nothing more.
      assert.strictEqual((yield* settle(a.send({ to: "beta", message: inFlight }))).delivery, "socket_delivered")
      yield* betaBack.client.roundTrip
      yield* betaBack.client.expectNothing("message")
    }))

  it.effect("sends in flight when the broker dies are sent again in the order they were first sent, and reach the receiver in it", () =>
    Effect.gen(function*() {
      const { world, first, a } = yield* alphaWithStalledBeta

      // Six sends, none awaited: some wait for their answer, some for room to be written.
      const sent = Array.from({ length: 6 }, (_, i) => message(`in order ${i}`))
      const sending: Array<Fiber.Fiber<unknown, unknown>> = []
      for (const m of sent) sending.push(yield* step(a.send({ to: "beta", message: m })))
      assert.isTrue(sending.every((fiber) => fiber.pollUnsafe() === undefined), "test setup: a send was answered")
      yield* first.crash

      yield* world.startBroker({ idleExit: null })
      const betaBack = yield* world.session({ sessionId: "beta" })
      yield* advance("500 millis")
      for (const fiber of sending) yield* Fiber.join(fiber)
      const received: Array<string> = []
      for (let i = 0; i < sent.length; i++) received.push((yield* betaBack.client.next("message")).message.id)
      assert.deepStrictEqual(received, sent.map((m) => m.id))
      yield* betaBack.client.roundTrip
      yield* betaBack.client.expectNothing("message")
    }))

  it.effect("a send whose broker never comes back fails with ConnectionLost once the replay window (2 minutes) is over", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork({ linkCapacity: 1 })
      const first = yield* world.startBroker({ idleExit: null, outboxCapacity: 1 })
      const { client: a } = yield* makeMemoryClient(
        memoryClientOptions(world, A_ID, "alpha", { reconnectBaseMs: 500, reconnectMaxMs: 5_000, connectTimeoutMs: 10_000 })
      )
      yield* settle(a.connect)
      yield* stallBeta(world)
      const inFlight = message("anyone?")
      const sending = yield* step(a.send({ to: "beta", message: inFlight }))
      yield* first.crash
      yield* advance("119 seconds")
      assert.isUndefined(sending.pollUnsafe(), "gave up inside the replay window")
      yield* advance("12 seconds")
      const exit = yield* Fiber.await(sending)
      const error = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
      assert.deepInclude(error, { _tag: "ConnectionLost", operation: "send", messageId: inFlight.id })
    }))

  it.effect("an operation during the outage waits for the reconnect instead of failing", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const first = yield* world.startBroker({ idleExit: null })
      const timings = { reconnectBaseMs: 500, reconnectMaxMs: 1_000, connectTimeoutMs: 10_000 }
      const { client: a } = yield* makeMemoryClient(memoryClientOptions(world, A_ID, "alpha", timings))
      yield* settle(a.connect)
      yield* first.crash
      assert.isFalse((yield* a.status).connected, "the client did not notice the broker's death")

      const listing = yield* step(a.list)
      yield* advance("5 seconds") // no broker at all: the reconnect keeps failing, the list keeps waiting
      assert.isUndefined(listing.pollUnsafe(), "the list gave up during the outage")
      yield* world.startBroker({ idleExit: null })
      yield* advance("2 seconds") // the next retry is at most reconnectMaxMs (+20% jitter) away
      const sessions = yield* Fiber.join(listing)
      assert.deepStrictEqual(sessions.map((s) => [s.id, s.name]), [[A_ID, "alpha"]])
      assert.strictEqual((yield* a.status).connections, 2)
    }))

  it.effect("C-BRK-28: the health a client published (health-v1) is sent again to the broker it reconnects to", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const first = yield* world.startBroker({ idleExit: null })
      const { client: a } = yield* makeMemoryClient(memoryClientOptions(world, A_ID, "alpha", { reconnectBaseMs: 500 }))
      yield* settle(a.connect)
      yield* settle(a.presence({ status: "thinking", acceptsAsks: false, pendingAsks: 2, lastIntercomActivity: 7 }))
      yield* first.crash
      yield* world.startBroker({ idleExit: null })
      const observer = yield* world.session({ sessionId: "observer", frame: { features: [HEALTH_V1] } })
      yield* advance("500 millis")
      assert.deepInclude(yield* a.status, { connected: true, connections: 2 })
      yield* settle(a.list) // a round trip on alpha: its re-sent presence was handled before
      const alpha = (yield* list(observer.client)).find((session) => session.id === A_ID)
      assert.deepInclude(alpha, { status: "thinking", acceptsAsks: false, pendingAsks: 2, lastIntercomActivity: 7 })
    }))
})

describe("shouldReconnect: the owner's say before each reconnect attempt (in memory)", () => {
  it.effect("asked before each attempt; once it says no, nothing more is dialled, even with a broker back, and the client stays off", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const first = yield* world.startBroker({ idleExit: null })
      const allowed = yield* Ref.make(true)
      const asked = yield* Ref.make(0)
      const dials = yield* Ref.make(0)
      const { client: a } = yield* makeMemoryClient(memoryClientOptions(world, A_ID, "alpha", {
        reconnectBaseMs: 500,
        reconnectMaxMs: 1_000,
        dial: (address) => Effect.andThen(Ref.update(dials, (n) => n + 1), world.dial(address)),
        shouldReconnect: Effect.andThen(Ref.update(asked, (n) => n + 1), Ref.get(allowed))
      }))
      yield* settle(a.connect)
      assert.deepStrictEqual([yield* Ref.get(asked), yield* Ref.get(dials)], [0, 1], "not asked for the first connection")

      yield* first.crash
      yield* advance("500 millis") // the first reconnect attempt: asked, allowed, dialled (no broker there)
      assert.deepStrictEqual([yield* Ref.get(asked), yield* Ref.get(dials)], [1, 2])

      // The owner's session is gone: the next attempt is declined before it dials.
      yield* Ref.set(allowed, false)
      yield* world.startBroker({ idleExit: null })
      yield* advance("60 seconds")
      assert.deepStrictEqual([yield* Ref.get(asked), yield* Ref.get(dials)], [2, 2], "dialled after the owner said no")
      assert.deepInclude(yield* a.status, { connected: false, connections: 1, lastError: RECONNECT_DECLINED })
      const error = yield* Effect.flip(settle(a.list))
      assert.deepInclude(error, { _tag: "IntercomNotConnected", reason: RECONNECT_DECLINED })
      assert.strictEqual(yield* Ref.get(dials), 2, "an operation does not start the client again")
    }))
})

describe("liveness probe (P96, in memory)", () => {
  const interval = 10_000
  const timeout = 2_000
  const backoff = 500
  const timings = { livenessIntervalMs: interval, livenessTimeoutMs: timeout, reconnectBaseMs: backoff }

  it.effect("a broker that stops answering is dropped exactly interval + timeout after connecting; the client reconnects after its backoff", () =>
    Effect.gen(function*() {
      const fake = yield* memoryFakeBroker({ features: ["exact-send-v1"], hangAfterRegister: true })
      const { client } = yield* makeMemoryClient(memoryClientOptions(fake, A_ID, "alpha", timings))
      yield* settle(client.connect)
      const connectedAt = yield* now

      yield* advanceTo(connectedAt + interval + timeout - 1)
      assert.deepInclude(yield* client.status, { connected: true, connections: 1 }, "dropped before the probe timed out")
      yield* advanceTo(connectedAt + interval + timeout)
      assert.deepInclude(yield* client.status, { connected: false, lastError: "liveness probe timed out" })

      yield* advanceTo(connectedAt + interval + timeout + backoff - 1)
      assert.strictEqual(fake.connections(), 1, "reconnected before the backoff")
      yield* advanceTo(connectedAt + interval + timeout + backoff)
      assert.strictEqual(fake.connections(), 2)
      const registers = fake.ofType("register")
      assert.deepStrictEqual(registers.map((r) => [r.connection, r.frame.sessionId]), [[1, A_ID], [2, A_ID]])
      // `rejoin-v1`: the same client instance, so the same `instanceId` (a broker tells its own rejoin by it).
      assert.isString(registers[0]?.frame.instanceId)
      assert.strictEqual(registers[1]?.frame.instanceId, registers[0]?.frame.instanceId)
      assert.deepInclude(yield* client.status, { connected: true, connections: 2 })
    }))

  it.effect("a broker that answers keeps the connection: one probe every interval, no reconnect, for hours", () =>
    Effect.gen(function*() {
      const fake = yield* memoryFakeBroker({ features: ["exact-send-v1"] })
      const { client } = yield* makeMemoryClient(memoryClientOptions(fake, A_ID, "alpha", timings))
      yield* settle(client.connect)
      const connectedAt = yield* now
      yield* advanceTo(connectedAt + 10 * 3_600_000 - 1)
      assert.strictEqual(fake.ofType("list").length, 10 * 360 - 1)
      yield* advanceTo(connectedAt + 10 * 3_600_000)
      assert.strictEqual(fake.ofType("list").length, 10 * 360)
      assert.strictEqual(fake.connections(), 1)
      assert.deepInclude(yield* client.status, { connected: true, connections: 1 })
    }))

  it.effect("the probe asks a broker that pages for one session (limit 1), and a base broker for its list as it is", () =>
    Effect.gen(function*() {
      const paging = yield* memoryFakeBroker({ features: ["exact-send-v1", "list-page-v1"] })
      const { client } = yield* makeMemoryClient(memoryClientOptions(paging, A_ID, "alpha", timings))
      yield* settle(client.connect)
      const connectedAt = yield* now
      yield* advanceTo(connectedAt + 3 * interval)
      const probes = paging.ofType("list")
      assert.strictEqual(probes.length, 3)
      assert.deepStrictEqual(probes.map((probe) => probe.frame.limit), [1, 1, 1])
      assert.deepInclude(yield* client.status, { connected: true, connections: 1 })

      const base = yield* memoryFakeBroker({ features: ["exact-send-v1"] })
      const other = (yield* makeMemoryClient(memoryClientOptions(base, A_ID, "alpha", timings))).client
      yield* settle(other.connect)
      const baseConnectedAt = yield* now
      yield* advanceTo(baseConnectedAt + interval)
      assert.deepStrictEqual(base.ofType("list").map((probe) => "limit" in probe.frame), [false])
    }))

  it.effect("against the real broker core the probe causes no churn: peers see no session_left", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ idleExit: null })
      const observer = yield* broker.session({ name: "observer" })
      const { client } = yield* makeMemoryClient(memoryClientOptions(broker, A_ID, "alpha", timings))
      yield* settle(client.connect)
      yield* observer.client.next("session_joined", (f) => f.session.id === A_ID)
      yield* advance("1 hour")
      yield* observer.client.expectNothing(["session_left", "session_joined"])
      assert.deepInclude(yield* client.status, { connected: true, connections: 1 })
    }))
})

describe("reconnect after a real broker process is killed", () => {
  /** The Unix-socket dialer, announcing every connection it makes. */
  const announcingDialer = Effect.map(Queue.unbounded<void>(), (dialled) => {
    const dial: Dialer = (path) => Effect.tap(dialUnixSocket(path), () => Queue.offer(dialled, undefined))
    return { dial, dialled: Queue.take(dialled) }
  })

  it.live("kill -9: a new broker is spawned; A comes back with its id, name and status, and B reaches it", () =>
    Effect.gen(function*() {
      const dir = yield* agentDir()
      const fast = { reconnectBaseMs: 50, reconnectMaxMs: 500 }
      const dialA = yield* announcingDialer
      const dialB = yield* announcingDialer
      const a = (yield* makeClient(dir.clientOptions(A_ID, "alpha", { ...fast, dial: dialA.dial }))).client
      const b = (yield* makeClient(dir.clientOptions(B_ID, "beta", { ...fast, dial: dialB.dial }))).client
      yield* a.connect
      yield* b.connect
      yield* dialA.dialled
      yield* dialB.dialled
      const bEvents = yield* subscribe(b.presenceEvents, "beta's presence events")
      yield* a.presence({ name: "alpha-renamed", status: "reviewing" })
      yield* bEvents.next((e) => e._tag === "Updated" && e.session.name === "alpha-renamed")
      const first = readPidFile(dir.pidFile)
      if (first === undefined) return assert.fail("no pid file")

      yield* Effect.sync(() => process.kill(first, "SIGKILL"))
      // Each client noticed and dialled again (one of them spawned the new broker first).
      yield* dialA.dialled
      yield* dialB.dialled
      const listed = yield* b.list // waits for b's registration to complete
      yield* a.list
      assert.deepInclude(yield* a.status, { connected: true, connections: 2, sessionId: A_ID })
      assert.deepInclude(yield* b.status, { connected: true, connections: 2 })
      const second = readPidFile(dir.pidFile)
      assert.isDefined(second)
      assert.notStrictEqual(second, first)
      assert.deepStrictEqual(brokerProcesses(dir.agentDir), [second], "exactly the new broker runs")

      // Same id, announced name and status restored; B can reach A again.
      const alpha = (yield* b.list).find((s) => s.id === A_ID)
      assert.deepStrictEqual([alpha?.name, alpha?.status], ["alpha-renamed", "reviewing"])
      assert.includeMembers(listed.map((s) => s.id), [B_ID])
      const inbox = yield* subscribe(a.messages, "alpha's messages")
      yield* b.send({ to: "alpha-renamed", message: message("welcome back") })
      assert.strictEqual((yield* inbox.next()).message.content.text, "welcome back")
    }), { timeout: 60_000 })
})
