/**
 * A take-back with `ifReleased` (`reclaim-released-v1`) never starts a
 * broker: a new one never saw the id given up and would refuse it, and a
 * taken-over client asking every 5 s would start one each time the last
 * exited idle. The client's broker Command only records that it ran (it
 * starts no broker); the broker is an in-memory one behind the client's
 * dialer, and the socket `ensureBroker` probes is a real one, answering
 * health only while "a broker runs". TestClock for the take-back's interval.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import { RECLAIM_INTERVAL_MS } from "../../src/client/IntercomClient.ts"
import { PROTOCOL_NAME, PROTOCOL_VERSION } from "../../src/protocol/constants.ts"
import { encodeFrame } from "../../src/protocol/framing.ts"
import { advance, memoryNetwork } from "../support/memory.ts"
import { agentDir, makeMemoryClient, memoryClientOptions } from "./support.ts"

const TWIN = "aaaaaaaa-2222-4000-8000-00000000000e"
const timings = { reconnectBaseMs: 500, reconnectMaxMs: 1_000, connectTimeoutMs: 2_000 }

/** A Unix socket answering `health` as a broker does, closed (its file gone) with the Scope or `close`. */
const healthAnswerer = (socketPath: string) =>
  Effect.acquireRelease(
    Effect.callback<net.Server>((resume) => {
      const server = net.createServer((socket) => {
        socket.on("data", (bytes: Buffer) => {
          const requestId = /"requestId":"([^"]+)"/.exec(bytes.toString("utf8"))?.[1]
          socket.end(encodeFrame(JSON.stringify({ type: "health_ok", requestId, protocol: PROTOCOL_NAME, version: PROTOCOL_VERSION })))
        })
        socket.on("error", () => undefined)
      })
      server.listen(socketPath, () => resume(Effect.succeed(server)))
    }),
    (server) => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
  )

describe("taking the id back with ifReleased", () => {
  it.effect("starts no broker when none answers: the take-back only dials", () =>
    Effect.gen(function*() {
      const dir = yield* agentDir()
      fs.mkdirSync(dir.intercomDir, { recursive: true })
      const marker = path.join(dir.agentDir, "launched")
      const world = yield* memoryNetwork()
      yield* world.startBroker({ idleExit: null })
      let dials = 0
      const dial = () => Effect.suspend(() => (dials++, world.dial(world.address)))
      // Listening once the listen callback has run (healthAnswerer's acquire resumes there).
      const listening = yield* Deferred.make<void>()
      const health = yield* Effect.forkChild(Effect.scoped(healthAnswerer(dir.socketPath).pipe(
        Effect.andThen(Deferred.succeed(listening, undefined)),
        Effect.andThen(Effect.never)
      )))
      yield* Deferred.await(listening)
      const { client: first } = yield* makeMemoryClient({
        ...memoryClientOptions({ address: world.address, dial }, TWIN, "twin", timings),
        agentDir: dir.agentDir,
        intercomDir: dir.intercomDir,
        socketPath: dir.socketPath,
        launch: { _tag: "Command", command: process.execPath, args: ["-e", `require("fs").writeFileSync(${JSON.stringify(marker)}, "ran")`] }
      })
      // Through ensureBroker, which finds the "broker" answering health: real I/O, so joined, not stepped.
      yield* first.connect
      assert.strictEqual(dials, 1)
      // The broker "exits": nothing answers on the socket any more.
      yield* Fiber.interrupt(health)
      assert.isFalse(fs.existsSync(dir.socketPath), "the socket file is gone")
      // Taken over by this (live) process, which holds the id on.
      const taker = yield* makeMemoryClient(memoryClientOptions(world, TWIN, "twin", {
        ...timings,
        registration: { cwd: "/tmp/project", model: "m", pid: process.pid, startedAt: 0, lastActivity: 0, name: "twin" }
      }))
      yield* taker.client.connect
      yield* advance("100 millis")
      assert.deepInclude(yield* first.status, { connected: false, takenOver: { sessionId: TWIN, pid: process.pid } })
      // The take-back: an ifReleased register, refused (the taker holds the id), with no broker started.
      // Its in-memory dial happens within the advance; one that went through ensureBroker first would
      // still be probing the socket (real I/O) or starting the command, and would not have dialled yet.
      yield* advance(`${RECLAIM_INTERVAL_MS} millis`)
      assert.strictEqual(dials, 2, "the take-back dialled the broker, without starting one first")
      assert.isFalse(fs.existsSync(marker), "the take-back ran the broker command")
      assert.deepInclude(yield* first.status, { connected: false, connections: 1 })
    }))
})
