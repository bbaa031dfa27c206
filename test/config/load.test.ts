/** The Effect wrapper: real files through the FileSystem service, logging, and the startup error. */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FileSystem, Logger } from "effect"
import * as path from "node:path"
import {
  IntercomEnvError,
  loadIntercomSettings,
  readConfigFile,
  readConfigFileSync,
  readIntercomSettings
} from "../../src/config/index.ts"

interface Captured {
  readonly level: string
  readonly text: string
}

/** Runs `effect` with a logger that records every line into `into`. */
const capturingLogs = (into: Array<Captured>) =>
  Logger.layer([
    Logger.make(({ logLevel, message }) => {
      const parts: ReadonlyArray<unknown> = Array.isArray(message) ? message : [message]
      into.push({ level: logLevel, text: parts.map(String).join(" ") })
    })
  ])

/** A scoped temp dir holding `<dir>/intercom/config.json` with `content`, if given. */
const agentDirWith = (content: string | undefined) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const dir = yield* fs.makeTempDirectoryScoped({ prefix: "intercom-config-" })
    yield* fs.makeDirectory(path.join(dir, "intercom"), { recursive: true })
    if (content !== undefined) yield* fs.writeFileString(path.join(dir, "intercom", "config.json"), content)
    return dir
  })

describe("readConfigFile", () => {
  it.effect("maps a missing file to Missing and a directory to Unreadable", () =>
    Effect.gen(function*() {
      const dir = yield* agentDirWith(undefined)
      assert.deepStrictEqual(yield* readConfigFile(path.join(dir, "intercom", "config.json")), { _tag: "Missing" })
      const unreadable = yield* readConfigFile(path.join(dir, "intercom"))
      assert.strictEqual(unreadable._tag, "Unreadable")
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.effect("readConfigFileSync answers as readConfigFile: Missing, Unreadable, Text", () =>
    Effect.gen(function*() {
      const dir = yield* agentDirWith(`{"shortcut": "alt+i"}`)
      assert.deepStrictEqual(readConfigFileSync(path.join(dir, "nope", "config.json")), { _tag: "Missing" })
      assert.strictEqual(readConfigFileSync(path.join(dir, "intercom"))._tag, "Unreadable")
      const file = path.join(dir, "intercom", "config.json")
      assert.deepStrictEqual(readConfigFileSync(file), yield* readConfigFile(file))
    }).pipe(Effect.provide(NodeFileSystem.layer)))
})

describe("readIntercomSettings / loadIntercomSettings", () => {
  it.effect("reads <dir>/intercom/config.json from disk; the dir option beats the environment", () =>
    Effect.gen(function*() {
      const dir = yield* agentDirWith(`{"confirmSend": true, "sendTimeoutMs": 1234}`)
      const { errors, settings } = yield* readIntercomSettings({
        dir,
        env: { ATOMIC_CODING_AGENT_DIR: "/nonexistent" },
        cwd: "/",
        homeDir: "/nonexistent-home"
      })
      assert.deepStrictEqual(errors, [])
      assert.isTrue(settings.confirmSend)
      assert.strictEqual(settings.sendTimeoutMs, 1234)
      assert.strictEqual(settings.configSource, path.join(dir, "intercom", "config.json"))
      assert.strictEqual(settings.paths.socketPath, path.join(dir, "intercom", "broker.sock"))
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.effect("a missing file: defaults, nothing logged", () =>
    Effect.gen(function*() {
      const logs: Array<Captured> = []
      const dir = yield* agentDirWith(undefined)
      const settings = yield* loadIntercomSettings({ env: { PI_CODING_AGENT_DIR: dir }, cwd: "/", homeDir: "/h" }).pipe(
        Effect.provide(capturingLogs(logs))
      )
      assert.isUndefined(settings.configSource)
      assert.isTrue(settings.enabled)
      assert.deepStrictEqual(logs, [])
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.effect("a rejected file is logged as an error, unknown keys as a warning, and defaults apply", () =>
    Effect.gen(function*() {
      const logs: Array<Captured> = []
      const dir = yield* agentDirWith(`{"confirmSend": "yes", "extra": 1}`)
      const settings = yield* loadIntercomSettings({ env: { ATOMIC_CODING_AGENT_DIR: dir }, cwd: "/", homeDir: "/h" })
        .pipe(Effect.provide(capturingLogs(logs)))
      assert.isFalse(settings.confirmSend)
      const file = path.join(dir, "intercom", "config.json")
      assert.deepStrictEqual(logs, [
        { level: "Warn", text: `Intercom config ${file}: ignoring unknown key "extra".` },
        {
          level: "Error",
          text:
            `Ignoring intercom config ${file}; every setting uses its default. "confirmSend" must be a boolean, found "yes".`
        }
      ])
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.effect("an invalid ask timeout fails with IntercomEnvError naming the variable", () =>
    Effect.gen(function*() {
      const dir = yield* agentDirWith(undefined)
      const error = yield* Effect.flip(
        loadIntercomSettings({ dir, env: { PI_INTERCOM_ASK_TIMEOUT_MS: "ten minutes" }, cwd: "/", homeDir: "/h" })
      )
      assert.instanceOf(error, IntercomEnvError)
      assert.strictEqual(error.variable, "PI_INTERCOM_ASK_TIMEOUT_MS")
      assert.include(error.message, "PI_INTERCOM_ASK_TIMEOUT_MS")
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.effect("falls back to ~/.atomic/agent/intercom/config.json for the default agent dir", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const home = yield* fs.makeTempDirectoryScoped({ prefix: "intercom-home-" })
      const atomicConfig = path.join(home, ".atomic", "agent", "intercom", "config.json")
      yield* fs.makeDirectory(path.dirname(atomicConfig), { recursive: true })
      yield* fs.writeFileString(atomicConfig, `{"group": "atomic-users"}`)
      const settings = yield* loadIntercomSettings({ env: {}, cwd: "/", homeDir: home })
      assert.strictEqual(settings.group, "atomic-users")
      assert.strictEqual(settings.configSource, atomicConfig)
      assert.strictEqual(settings.paths.agentDir, path.join(home, ".pi", "agent"))
    }).pipe(Effect.provide(NodeFileSystem.layer)))
})
