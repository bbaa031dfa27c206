/**
 * Lazy connection (C-TOOL-14): building the client layer touches nothing;
 * the first operation connects, and concurrent first operations share one
 * attempt — one dial, one registration.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Duration, Effect, Exit, Fiber, Logger, Metric } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { runBroker } from "../../src/broker/index.ts"
import type { Dialer } from "../../src/client/Dialer.ts"
import { makeFiberWatch, ownedBy } from "../../src/testing/FiberWatch.ts"
import { brokerPaths, tempDir } from "../support/broker.ts"
import { advance, settle, step, withMemoryBroker } from "../support/memory.ts"
import { agentDir, brokerProcesses, makeClient, makeMemoryClient, memoryClientOptions } from "./support.ts"

/** A dialer into `broker` that counts dials and holds each one back `delay` of simulated time, widening the race window. */
const countingDialer = (broker: { readonly dial: Dialer }, delay: Duration.Input = 0) => {
  const counter = { dials: 0 }
  const dial: Dialer = (address) =>
    Effect.sync(() => counter.dials++).pipe(
      Effect.andThen(Effect.sleep(delay)),
      Effect.andThen(broker.dial(address))
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
  it.live("building the layer starts no fiber, creates no file and spawns nothing, even with auto-spawn on; the first operation does", () =>
    Effect.gen(function*() {
      const dir = yield* agentDir()
      // Every fiber started while the client is built (and every fiber those fork) is counted.
      const watch = makeFiberWatch()
      const { client } = yield* makeClient(dir.clientOptions("lazy-spawn-0001")).pipe(
        ownedBy("client-build"),
        Effect.provideService(Metric.FiberRuntimeMetrics, watch.service)
      )
      assert.strictEqual(watch.started(), 0, "building the client started a fiber: something runs before the first operation")
      assert.isFalse(fs.existsSync(dir.intercomDir), "the intercom dir was created")
      assert.deepStrictEqual(fs.readdirSync(dir.agentDir), [])
      assert.deepStrictEqual(brokerProcesses(dir.agentDir), [])
      const status = yield* client.status
      assert.deepStrictEqual([status.connected, status.connections, status.features], [false, 0, []])
      // The first operation is what connects, spawning the broker.
      assert.deepStrictEqual((yield* client.list).map((s) => s.id), ["lazy-spawn-0001"])
      assert.lengthOf(brokerProcesses(dir.agentDir), 1)
    }))

  it.effect("building the layer does not register: the broker sees nobody until the first operation, however long it waits", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ idleExit: null })
      const observer = yield* broker.session({ name: "observer" })
      const { counter, dial } = countingDialer(broker)
      const { client } = yield* makeMemoryClient(memoryClientOptions(broker, "lazy-reg-0001", "lazy", { dial }))
      yield* advance("1 hour")
      assert.strictEqual(counter.dials, 0)
      yield* observer.client.expectNothing("session_joined")
      assert.strictEqual(yield* broker.broker.sessionCount, 1)
      yield* settle(client.connect)
      assert.strictEqual(counter.dials, 1)
      const joined = yield* observer.client.next("session_joined")
      assert.strictEqual(joined.session.id, "lazy-reg-0001")
      assert.strictEqual(yield* broker.broker.sessionCount, 2)
    }))

  it.effect("ten concurrent first lists share one attempt: one dial, one registration", () => {
    const logs: Array<string> = []
    return Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ idleExit: null })
      const observer = yield* broker.session({ name: "observer" })
      const { counter, dial } = countingDialer(broker, "150 millis")
      const { client } = yield* makeMemoryClient(memoryClientOptions(broker, "lazy-many-0001", "many", { dial }))
      // All ten start, and wait, while the one dial is held back.
      const lists = yield* step(Effect.all(Array.from({ length: 10 }, () => client.list), { concurrency: "unbounded" }))
      assert.isUndefined(lists.pollUnsafe())
      yield* advance("150 millis")
      const results = lists.pollUnsafe()
      if (results === undefined || Exit.isFailure(results)) return assert.fail(`the lists did not all succeed: ${String(results)}`)
      assert.strictEqual(counter.dials, 1, "dials")
      for (const sessions of results.value) {
        assert.sameMembers(sessions.map((s) => s.id), [observer.id, "lazy-many-0001"])
      }
      // The broker saw exactly one registration of that id: no re-registration (takeover) followed it.
      const mentions = logs.filter((line) => line.includes("lazy-many-0001"))
      assert.strictEqual(mentions.length, 1, mentions.join("\n"))
      assert.include(mentions[0], "joined")
      yield* observer.client.next("session_joined", (f) => f.session.id === "lazy-many-0001")
      yield* observer.client.expectNothing("session_joined")
      const status = yield* client.status
      assert.deepStrictEqual([status.connected, status.connections], [true, 1])
    }).pipe(Effect.provide(capturingLogs(logs)))
  })

  it.effect("interrupting the first caller does not cancel the shared attempt", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ idleExit: null })
      const { counter, dial } = countingDialer(broker, "200 millis")
      const { client } = yield* makeMemoryClient(memoryClientOptions(broker, "lazy-intr-0001", undefined, { dial }))
      const first = yield* step(client.list)
      const second = yield* step(client.list)
      yield* settle(Fiber.interrupt(first))
      yield* advance("200 millis")
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
      assert.include(error.message, `Intercom not connected: no broker is listening on ${socketPath}`)
      assert.strictEqual((yield* client.status).lastError, error._tag === "IntercomNotConnected" ? error.reason : "")
      yield* runBroker({ intercomDir, socketPath, idleExit: null })
      const sessions = yield* client.list
      assert.deepStrictEqual(sessions.map((s) => s.id), ["lazy-retry-0001"])
      assert.isTrue(fs.existsSync(path.join(intercomDir, "broker.pid")))
    }))
})
