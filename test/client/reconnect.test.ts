/**
 * Reconnect (C-BRK-27/28, P96): after the broker dies the client respawns it
 * and re-registers the same session id with what it had announced; a request
 * in flight settles with `ConnectionLost` instead of hanging; a broker that
 * stops answering is detected by the liveness probe and replaced.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber } from "effect"
import { message, withBroker } from "../support/broker.ts"
import {
  agentDir,
  brokerClientOptions,
  brokerProcesses,
  eventually,
  fakeBroker,
  fakeClientOptions,
  isAlive,
  makeClient,
  readPidFile,
  subscribe
} from "./support.ts"

const A_ID = "aaaaaaaa-1111-4000-8000-00000000000a"
const B_ID = "bbbbbbbb-1111-4000-8000-00000000000b"

const signal = (pid: number, name: NodeJS.Signals) => Effect.sync(() => process.kill(pid, name))

describe("reconnect after the broker is killed", () => {
  it.live("kill -9: the send in flight fails with ConnectionLost; a new broker is spawned; A comes back with its id and name", () =>
    Effect.gen(function*() {
      const dir = yield* agentDir()
      const fast = { reconnectBaseMs: 50, reconnectMaxMs: 500, sendTimeoutMs: 60_000 }
      const a = (yield* makeClient(dir.clientOptions(A_ID, "alpha", fast))).client
      const b = (yield* makeClient(dir.clientOptions(B_ID, "beta", fast))).client
      yield* a.connect
      yield* b.connect
      const bEvents = yield* subscribe(b.presenceEvents, "beta's presence events")
      yield* a.presence({ name: "alpha-renamed", status: "reviewing" })
      yield* bEvents.next((e) => e._tag === "Updated" && e.session.name === "alpha-renamed")
      const first = readPidFile(dir.pidFile)
      assert.isDefined(first)
      if (first === undefined) return

      // Freeze the broker: the send is written but can never be answered. Then kill it.
      yield* signal(first, "SIGSTOP")
      const inFlight = message("are you getting this?")
      const sending = yield* Effect.forkChild(a.send({ to: "beta", message: inFlight }), { startImmediately: true })
      yield* Effect.sleep("200 millis")
      assert.isUndefined(sending.pollUnsafe(), "a stopped broker cannot have answered")
      yield* signal(first, "SIGKILL")
      const exit = yield* Fiber.await(sending).pipe(Effect.timeout("5 seconds"))
      assert.isTrue(Exit.isFailure(exit))
      const error = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
      assert.deepInclude(error, { _tag: "ConnectionLost", operation: "send", messageId: inFlight.id })

      // Both clients reconnect; one of them spawns the new broker.
      yield* eventually("A and B to reconnect", () =>
        Effect.map(Effect.all([a.status, b.status]), ([sa, sb]) =>
          sa.connected && sb.connected && sa.connections === 2 && sb.connections === 2), "20 seconds")
      const second = readPidFile(dir.pidFile)
      assert.isDefined(second)
      assert.notStrictEqual(second, first)
      assert.isFalse(isAlive(first))
      assert.deepStrictEqual(brokerProcesses(dir.agentDir), [second])

      // Same id, announced name and status restored; B can reach A again.
      const listed = yield* b.list
      const alpha = listed.find((s) => s.id === A_ID)
      assert.deepStrictEqual([alpha?.name, alpha?.status], ["alpha-renamed", "reviewing"])
      assert.sameMembers(listed.map((s) => s.id), [A_ID, B_ID])
      assert.strictEqual((yield* a.status).sessionId, A_ID)
      const inbox = yield* subscribe(a.messages, "alpha's messages")
      yield* b.send({ to: "alpha-renamed", message: message("welcome back") })
      assert.strictEqual((yield* inbox.next()).message.content.text, "welcome back")
      // Retrying the lost send with the same id is safe; the new broker delivers it.
      assert.strictEqual((yield* a.send({ to: "beta", message: inFlight })).delivery, "socket_delivered")
    }), { timeout: 60_000 })

  it.live("operations during the outage wait for the reconnect instead of failing", () =>
    Effect.gen(function*() {
      const dir = yield* agentDir()
      const a = (yield* makeClient(dir.clientOptions(A_ID, "alpha", { reconnectBaseMs: 50 }))).client
      yield* a.connect
      const first = readPidFile(dir.pidFile)
      if (first === undefined) return assert.fail("no pid file")
      yield* signal(first, "SIGKILL")
      yield* eventually("A to notice", () => Effect.map(a.status, (s) => !s.connected))
      const sessions = yield* a.list
      assert.deepStrictEqual(sessions.map((s) => [s.id, s.name]), [[A_ID, "alpha"]])
      assert.strictEqual((yield* a.status).connections, 2)
    }), { timeout: 60_000 })
})

describe("liveness probe (P96)", () => {
  it.live("a broker that stops answering is dropped within interval + timeout, and the client reconnects", () =>
    Effect.gen(function*() {
      const fake = yield* fakeBroker({ features: ["exact-send-v1"], hangAfterRegister: true })
      const { client } = yield* makeClient(fakeClientOptions(fake, A_ID, {
        livenessIntervalMs: 200,
        livenessTimeoutMs: 100,
        reconnectBaseMs: 50,
        reconnectMaxMs: 100
      }))
      yield* client.connect
      yield* eventually("a second registration", () => fake.ofType("register").length >= 2, "5 seconds")
      const [first, second] = fake.ofType("register")
      const gap = (second?.at ?? 0) - (first?.at ?? 0)
      // 200 ms until the probe, 100 ms for its answer, 50 ms backoff, then dial and register.
      assert.isAtLeast(gap, 300)
      assert.isBelow(gap, 1500, "the dead connection was not dropped promptly")
      assert.deepStrictEqual([first?.connection, second?.connection], [1, 2])
      assert.strictEqual(second?.frame.sessionId, A_ID)
      yield* eventually("the client to count the new connection", () =>
        Effect.map(client.status, (s) => s.connected && s.connections >= 2))
    }))

  it.live("a broker that answers keeps the connection: probes go out every interval, nothing reconnects", () =>
    Effect.gen(function*() {
      const fake = yield* fakeBroker({ features: ["exact-send-v1"] })
      const { client } = yield* makeClient(fakeClientOptions(fake, A_ID, { livenessIntervalMs: 100, livenessTimeoutMs: 80 }))
      yield* client.connect
      yield* Effect.sleep("650 millis")
      assert.isAtLeast(fake.ofType("list").length, 4)
      assert.strictEqual(fake.connections(), 1)
      assert.strictEqual((yield* client.status).connections, 1)
    }))

  it.live("against a real broker the probe causes no churn: peers see no session_left", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const observer = yield* broker.session({ name: "observer" })
      const { client } = yield* makeClient(brokerClientOptions(broker, A_ID, "alpha", {
        livenessIntervalMs: 150,
        livenessTimeoutMs: 150
      }))
      yield* client.connect
      yield* observer.client.next("session_joined", (f) => f.session.id === A_ID)
      yield* observer.client.expectNothing(700, ["session_left", "session_joined"])
      assert.strictEqual((yield* client.status).connections, 1)
    }))
})
