/**
 * One socket-path rule for the broker and its clients (P90): with an agent
 * dir too long for `<dir>/intercom/broker.sock`, a client that takes its
 * socket path from config (`loadIntercomSettings`) dials the short fallback
 * the CLI's broker listens on — whether the CLI started the broker or the
 * client spawned it. Needs `npm run build` (npm test does it).
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { currentUid, loadIntercomSettings } from "../../src/config/index.ts"
import { readPidFile, stopPid } from "../support/process.ts"
import { makeClient, registrationOf } from "../client/support.ts"
import { cleanEnv, mode, startBroker, tempDir } from "./support.ts"

/** A temp root with a private runtime dir, and an agent dir under it too long for a Unix socket path. */
const longDir = Effect.gen(function*() {
  const root = yield* tempDir()
  const runtimeDir = path.join(root, "run")
  fs.mkdirSync(runtimeDir, { mode: 0o700 })
  const agentDir = path.join(root, "a".repeat(60), "b".repeat(60))
  return { root, runtimeDir, agentDir }
})

describe("a long agent dir", () => {
  it.live("a client with its paths from config reaches the broker the CLI started for the same dir", () =>
    Effect.gen(function*() {
      const { agentDir, root, runtimeDir } = yield* longDir
      const env = { ...cleanEnv(root), XDG_RUNTIME_DIR: runtimeDir }
      const broker = yield* startBroker(["--dir", agentDir], env)

      const { paths } = yield* loadIntercomSettings({ dir: agentDir, env, cwd: root, homeDir: root }).pipe(
        Effect.provide(NodeFileSystem.layer)
      )
      assert.strictEqual(paths.socketFallbackDir, path.join(runtimeDir, `intercom-${currentUid()}`))
      // The "Listening on" line follows the "started" line startBroker waited for: wait for it too.
      const listening = yield* broker.waitStdout(/^Listening on (\S+) \(short fallback/m)
      assert.strictEqual(listening[1], paths.socketPath)

      const { client } = yield* makeClient({
        agentDir,
        intercomDir: paths.intercomDir,
        socketPath: paths.socketPath,
        sessionId: "long-dir-0000-0001",
        registration: registrationOf("far-away"),
        launch: false
      })
      assert.deepStrictEqual((yield* client.list).map((s) => s.name), ["far-away"])
      yield* broker.waitStderr(/far-away/)
    }))

  it.live("a client that spawns the broker for a long dir finds it on the short socket", () =>
    Effect.gen(function*() {
      const { agentDir, runtimeDir } = yield* longDir
      // The spawned broker inherits this process's environment, as a real client's would.
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          const before = process.env["XDG_RUNTIME_DIR"]
          process.env["XDG_RUNTIME_DIR"] = runtimeDir
          return before
        }),
        (before) =>
          Effect.sync(() => {
            if (before === undefined) delete process.env["XDG_RUNTIME_DIR"]
            else process.env["XDG_RUNTIME_DIR"] = before
          })
      )
      const { paths } = yield* loadIntercomSettings({ dir: agentDir }).pipe(Effect.provide(NodeFileSystem.layer))
      assert.isDefined(paths.socketFallbackDir)
      // Stop the spawned broker when the test ends (registered before the client, so it runs after it).
      yield* Effect.addFinalizer(() => {
        const pid = readPidFile(paths.pidFile)
        return pid === undefined ? Effect.void : stopPid(pid)
      })

      const { client } = yield* makeClient({
        agentDir,
        intercomDir: paths.intercomDir,
        socketPath: paths.socketPath,
        sessionId: "long-dir-0000-0002",
        registration: registrationOf("spawner"),
        launch: { _tag: "Default" }
      })
      assert.deepStrictEqual((yield* client.list).map((s) => s.name), ["spawner"])
      assert.isDefined(readPidFile(paths.pidFile))
      assert.isTrue(fs.statSync(paths.socketPath).isSocket())
      assert.strictEqual(mode(path.dirname(paths.socketPath)), 0o700)
    }))
})
