/**
 * Lazy connection (C-TOOL-14): building the client layer touches nothing;
 * the first operation connects, and concurrent first operations share one
 * attempt — one dial, one registration.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Logger } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { dialUnixSocket, type Dialer } from "../../src/client/ClientConnection.ts"
import { runBroker } from "../../src/broker/index.ts"
import { brokerPaths, tempDir, withBroker } from "../support/broker.ts"
import { agentDir, brokerClientOptions, brokerProcesses, makeClient } from "./support.ts"

/** A dialer that counts dials and holds each one back `delayMs`, widening the race window. */
const countingDialer = (delayMs: number) => {
  const counter = { dials: 0 }
  const dial: Dialer = (socketPath) =>
    Effect.sync(() => counter.dials++).pipe(
      Effect.andThen(Effect.sleep(delayMs)),
      Effect.andThen(dialUnixSocket(socketPath))
    )
  return { counter, dial }
}

/** Records the broker's log lines (its fibers inherit the test's logger). */
const capturingLogs = (into: Array<string>) =>
  Logger.layer([
    Logger.make(({ message }) => {
      const parts: ReadonlyArray<unknown> = Array.isArray(message) ? message : [message]
      into.push(parts.map(String).join(" "))
    })
  ])

describe("lazy connection", () => {
  it.live("building the layer spawns nothing and creates no file, even with auto-spawn on", () =>
    Effect.gen(function*() {
      const dir = yield* agentDir()
      const { client } = yield* makeClient(dir.clientOptions("lazy-spawn-0001"))
      yield* Effect.sleep("300 millis")
      assert.isFalse(fs.existsSync(dir.intercomDir), "the intercom dir was created")
      assert.deepStrictEqual(fs.readdirSync(dir.agentDir), [])
      assert.deepStrictEqual(brokerProcesses(dir.agentDir), [])
      const status = yield* client.status
      assert.deepStrictEqual([status.connected, status.connections, status.features], [false, 0, []])
    }))

  it.live("building the layer does not register: the broker sees nobody until the first operation", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const observer = yield* broker.session({ name: "observer" })
      const { client } = yield* makeClient(brokerClientOptions(broker, "lazy-reg-0001", "lazy"))
      yield* observer.client.expectNothing(300, "session_joined")
      assert.strictEqual(yield* broker.handle.sessionCount, 1)
      yield* client.connect
      const joined = yield* observer.client.next("session_joined")
      assert.strictEqual(joined.session.id, "lazy-reg-0001")
      assert.strictEqual(yield* broker.handle.sessionCount, 2)
    }))

  it.live("ten concurrent first lists share one attempt: one dial, one registration", () => {
    const logs: Array<string> = []
    return Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const observer = yield* broker.session({ name: "observer" })
      const { counter, dial } = countingDialer(150)
      const { client } = yield* makeClient(brokerClientOptions(broker, "lazy-many-0001", "many", { dial }))
      const lists = yield* Effect.all(Array.from({ length: 10 }, () => client.list), { concurrency: "unbounded" })
      assert.strictEqual(counter.dials, 1, "dials")
      for (const sessions of lists) {
        assert.sameMembers(sessions.map((s) => s.id), [observer.id, "lazy-many-0001"])
      }
      // The broker saw exactly one registration of that id: no re-registration (takeover) followed it.
      const mentions = logs.filter((line) => line.includes("lazy-many-0001"))
      assert.strictEqual(mentions.length, 1, mentions.join("\n"))
      assert.include(mentions[0], "joined")
      yield* observer.client.next("session_joined", (f) => f.session.id === "lazy-many-0001")
      yield* observer.client.expectNothing(200, "session_joined")
      const status = yield* client.status
      assert.deepStrictEqual([status.connected, status.connections], [true, 1])
    }).pipe(Effect.provide(capturingLogs(logs)))
  })

  it.live("interrupting the first caller does not cancel the shared attempt", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const { counter, dial } = countingDialer(200)
      const { client } = yield* makeClient(brokerClientOptions(broker, "lazy-intr-0001", undefined, { dial }))
      const first = yield* Effect.forkChild(client.list, { startImmediately: true })
      const second = yield* Effect.forkChild(client.list, { startImmediately: true })
      yield* Effect.sleep("50 millis")
      yield* Fiber.interrupt(first)
      const sessions = yield* Fiber.join(second)
      assert.deepStrictEqual(sessions.map((s) => s.id), ["lazy-intr-0001"])
      assert.strictEqual(counter.dials, 1)
      assert.isTrue(Exit.hasInterrupts(yield* Fiber.await(first)))
    }))

  it.live("a failed first attempt is not cached: the next operation tries again", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const { intercomDir, socketPath } = brokerPaths(root)
      const { client } = yield* makeClient({
        agentDir: root,
        intercomDir,
        socketPath,
        sessionId: "lazy-retry-0001",
        registration: { cwd: "/tmp", model: "m", pid: process.pid, startedAt: 0, lastActivity: 0 },
        launch: false
      })
      const error = yield* Effect.flip(client.list)
      assert.strictEqual(error._tag, "IntercomNotConnected")
      assert.include(error.message, `No broker is listening on ${socketPath}`)
      assert.strictEqual((yield* client.status).lastError, error._tag === "IntercomNotConnected" ? error.reason : "")
      yield* runBroker({ intercomDir, socketPath, idleExit: null })
      const sessions = yield* client.list
      assert.deepStrictEqual(sessions.map((s) => s.id), ["lazy-retry-0001"])
      assert.isTrue(fs.existsSync(path.join(intercomDir, "broker.pid")))
    }))
})
