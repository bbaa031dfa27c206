/**
 * The broker's live view (`observe-v1`) over real Unix sockets, read with
 * `ObserveClient`: what a snapshot shows after scripted traffic, what a
 * watch streams, and that an observer is not a session while base clients
 * and sessions see nothing of it. Barriers: a send's acknowledgement on the
 * sending connection, then a new `observe` (the Router is synchronous).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Fiber, Stream } from "effect"
import { MAX_OBSERVERS } from "../../src/broker/Registration.ts"
import { OBSERVE_V1 } from "../../src/protocol/features.ts"
import { ObserveClient } from "../../src/observe/ObserveClient.ts"
import { type BrokerSnapshot, type ObserveEvent } from "../../src/observe/Snapshot.ts"
import { assertDelivered } from "../support/assertions.ts"
import { settled, writeThenRoundTrip } from "../support/barrier.ts"
import { list, message, send, withBroker } from "../support/broker.ts"

const observerRegister = { type: "register", session: { cwd: "/tmp", model: "m", pid: 1, startedAt: 0, lastActivity: 0 } }

describe("observe-v1", () => {
  it.live("a snapshot shows sessions with their counts, routed messages, the open ask and a refusal with its code", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const a = yield* broker.session({ sessionId: "a", name: "alice", status: "busy" })
      const b = yield* broker.session({ sessionId: "b", name: "bob" })
      assertDelivered(yield* send(a.client, "b", message("hello", { id: "m1" })))
      assertDelivered(yield* send(b.client, "a", message("question?", { id: "q1", expectsReply: true })))
      const refused = yield* send(a.client, "nobody", message("lost", { id: "m2" }))
      assert.strictEqual(refused.type, "delivery_failed")

      const snapshot = yield* ObserveClient.snapshot({ socketPath: broker.socketPath })
      assert.strictEqual(snapshot.sessionCount, 2)
      const alice = snapshot.sessions.find((row) => row.id === "a")
      const bob = snapshot.sessions.find((row) => row.id === "b")
      assert.deepInclude(alice, { name: "alice", status: "busy", group: "default", messagesOut: 1, messagesIn: 1, pendingAsks: 1, waitingAsks: 0 })
      assert.deepInclude(bob, { name: "bob", messagesOut: 1, messagesIn: 1, pendingAsks: 0, waitingAsks: 1 })
      assert.deepStrictEqual(
        snapshot.traffic.map((entry) => [entry.from.name, entry.to.name, entry.kind, entry.messageId, entry.outcome]),
        [["alice", "bob", "message", "m1", "delivered"], ["bob", "alice", "ask", "q1", "delivered"]]
      )
      assert.strictEqual(snapshot.askCount, 1)
      assert.deepInclude(snapshot.asks[0], { messageId: "q1", from: { id: "b", name: "bob" }, to: { id: "a", name: "alice" } })
      assert.isNumber(snapshot.asks[0]!.askedAt)
      assert.deepInclude(snapshot.refusals[0], { to: "nobody", messageId: "m2", code: "E_TARGET_NOT_FOUND", from: { id: "a", name: "alice" } })
      assert.deepInclude(snapshot.totals, { delivered: 2, queued: 0, staged: 0, refused: 1, asks: 1, replies: 0 })
    }))

  it.live("a reply is traffic of kind reply naming the ask; mail for a session that left is queued", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const a = yield* broker.session({ sessionId: "a", name: "alice" })
      const b = yield* broker.session({ sessionId: "b", name: "bob" })
      assertDelivered(yield* send(b.client, "a", message("q", { id: "q1", expectsReply: true })))
      assertDelivered(yield* send(a.client, "b", message("answer", { id: "r1", replyTo: "q1" })))
      yield* writeThenRoundTrip(b.client, [{ type: "unregister" }])
      yield* send(a.client, "bob", message("later", { id: "m3" }))
      const snapshot = yield* ObserveClient.snapshot({ socketPath: broker.socketPath })
      assert.deepStrictEqual(
        snapshot.traffic.map((entry) => [entry.kind, entry.messageId, entry.replyTo, entry.outcome]),
        [["ask", "q1", undefined, "delivered"], ["reply", "r1", "q1", "delivered"], ["message", "m3", undefined, "queued"]]
      )
      assert.strictEqual(snapshot.askCount, 0)
      assert.strictEqual(snapshot.queues.mailbox, 1)
      assert.strictEqual(snapshot.sessionCount, 1)
    }))

  it.live("a watch streams the snapshot, then each routed message as a traffic event and the state every tick", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const a = yield* broker.session({ sessionId: "a", name: "alice" })
      const b = yield* broker.session({ sessionId: "b", name: "bob" })
      const started = yield* Deferred.make<BrokerSnapshot>()
      const watching = yield* ObserveClient.watch({ socketPath: broker.socketPath, intervalMs: 100 }).pipe(
        Stream.tap((element) => "type" in element ? Effect.void : Deferred.succeed(started, element)),
        Stream.filter((element): element is ObserveEvent => "type" in element),
        // A tick's frame carries the traffic first, then the state that counts it.
        Stream.takeUntil((event) => event.type === "state" && event.state.totals.delivered === 1),
        Stream.runCollect,
        Effect.forkChild
      )
      const first = yield* Deferred.await(started)
      assert.deepStrictEqual(first.traffic, [])
      assertDelivered(yield* send(a.client, "b", message("hi", { id: "w1" })))
      const events = yield* Fiber.join(watching).pipe(Effect.timeout(Duration.seconds(20)))
      const traffic = events.filter((event) => event.type === "traffic").flatMap((event) => event.entries)
      assert.deepStrictEqual(traffic.map((entry) => [entry.from.id, entry.to.id, entry.messageId]), [["a", "b", "w1"]])
      const last = events.at(-1)
      assert.isTrue(last?.type === "state" && last.state.sessionCount === 2)
      yield* b.client.roundTrip
    }))

  it.live("a session that registers again under the same id starts its rate from 0, never negative", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const a = yield* broker.session({ sessionId: "a", name: "alice" })
      const b = yield* broker.session({ sessionId: "b", name: "bob" })
      const counted = yield* Deferred.make<void>()
      const rowOfA = (event: ObserveEvent) =>
        event.type === "state" ? event.state.sessions.find((row) => row.id === "a") : undefined
      // One frame a second: time enough to leave and come back between two frames.
      const watching = yield* ObserveClient.watch({ socketPath: broker.socketPath, intervalMs: 1_000 }).pipe(
        Stream.filter((element): element is ObserveEvent => "type" in element),
        Stream.tap((event) => rowOfA(event)?.messagesOut === 5 ? Deferred.succeed(counted, undefined) : Effect.void),
        Stream.takeUntil((event) => rowOfA(event)?.messagesOut === 2),
        Stream.runCollect,
        Effect.forkChild
      )
      for (let i = 0; i < 5; i++) assertDelivered(yield* send(a.client, "b", message(`m${i}`, { id: `m${i}` })))
      // The watch's sample now holds alice's 5.
      yield* Deferred.await(counted)
      yield* writeThenRoundTrip(a.client, [{ type: "unregister" }])
      const again = yield* broker.session({ sessionId: "a", name: "alice" })
      for (let i = 0; i < 2; i++) assertDelivered(yield* send(again.client, "b", message(`n${i}`, { id: `n${i}` })))
      const events = yield* Fiber.join(watching).pipe(Effect.timeout(Duration.seconds(20)))
      const last = rowOfA(events.at(-1)!)
      assert.strictEqual(last?.messagesOut, 2)
      assert.isAbove(last!.ratePerSec, 0)
      yield* b.client.roundTrip
    }))

  it.live("an observer is not a session: no session_joined, not listed, no effect on the session count", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const a = yield* broker.session({ sessionId: "a", name: "alice" })
      const observer = yield* broker.connect("observer")
      yield* observer.send({ ...observerRegister, sessionId: "watcher", features: [OBSERVE_V1], observer: true })
      const registered = yield* observer.next("registered")
      assert.include(registered.features ?? [], OBSERVE_V1)
      yield* settled([observer], [a.client])
      yield* a.client.expectNothing("session_joined")
      assert.deepStrictEqual((yield* list(a.client)).map((session) => session.id), ["a"])
      const snapshot = yield* ObserveClient.snapshot({ socketPath: broker.socketPath })
      assert.strictEqual(snapshot.sessionCount, 1)
    }))

  it.live("a base client is unaffected: observer is ignored without the feature, and it is a session", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const watcher = yield* broker.session({ sessionId: "a" })
      const base = yield* broker.session({ sessionId: "base", frame: { observer: true } })
      assert.deepStrictEqual(base.registered.features, ["exact-send-v1"])
      yield* watcher.client.next("session_joined")
      assert.deepStrictEqual((yield* list(watcher.client)).map((session) => session.id).sort(), ["a", "base"])
      assertDelivered(yield* send(base.client, "a", message("plain", { id: "p1" })))
      yield* watcher.client.next("message")
      yield* base.client.roundTrip
      assert.isFalse(base.client.received().some((frame) => frame.type.startsWith("observe")))
    }))

  it.live("a session granted observe-v1 cannot observe: its observe frame closes the connection (groups stay a boundary)", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const session = yield* broker.session({ sessionId: "s", frame: { features: [OBSERVE_V1] } })
      yield* session.client.send({ type: "observe", requestId: "r1" })
      yield* session.client.waitClosed()
    }))

  it.live("an observer sending anything but observe or health is dropped", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const observer = yield* broker.connect("observer")
      yield* observer.send({ ...observerRegister, features: [OBSERVE_V1], observer: true })
      yield* observer.next("registered")
      yield* observer.send({ type: "send", to: "x", message: message("no") })
      yield* observer.waitClosed()
    }))

  it.live("a snapshot that would pass 1 MiB is cut to fit: fewer rows, the counts still whole", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      // Every text field at its limit in 3-byte characters: 300 such rows are more than a frame holds.
      const wide = (i: number) => `${String(i).padStart(4, "0")}${"界".repeat(252)}`
      yield* Effect.forEach(Array.from({ length: 320 }, (_, i) => i), (i) =>
        broker.session({
          sessionId: wide(i),
          name: wide(i),
          status: wide(i),
          scopeId: "界".repeat(256),
          frame: { features: ["groups-v1"], group: wide(i) }
        }), { concurrency: 16, discard: true })
      const snapshot = yield* ObserveClient.snapshot({ socketPath: broker.socketPath })
      assert.strictEqual(snapshot.sessionCount, 320)
      assert.isAbove(snapshot.sessions.length, 0)
      assert.isBelow(snapshot.sessions.length, 300)
    }), 120_000)

  it.live("at most 64 observers: the 65th is refused with a reason that says what to do", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      for (let i = 0; i < MAX_OBSERVERS; i++) {
        const observer = yield* broker.connect(`observer-${i}`)
        yield* observer.send({ ...observerRegister, features: [OBSERVE_V1], observer: true })
        yield* observer.next("registered")
      }
      const error = yield* Effect.flip(ObserveClient.snapshot({ socketPath: broker.socketPath }))
      assert.strictEqual(error.reason, "Refused")
      assert.include(error.message, "64 observers connected")
    }))

  it.live("no broker: snapshot fails with NotRunning and says how to start one", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(ObserveClient.snapshot({ socketPath: "/tmp/no-such-intercom-broker.sock" }))
      assert.strictEqual(error.reason, "NotRunning")
      assert.include(error.message, "intercom broker")
    }))
})
