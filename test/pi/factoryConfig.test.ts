/**
 * The extension factory reads `toolVisibility` and `shortcut` by the runtime
 * settings' rules: the same config file candidates (the Atomic fallback,
 * C-CFG-1) and the same strict validation (a rejected file means defaults,
 * C-CFG-2). Each case builds a temp home and asks both readers.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterEach, assert, describe, it } from "vitest"
import { readIntercomSettings } from "../../src/config/index.ts"
import { factoryConfig } from "../../src/pi/factoryConfig.ts"

const homes: Array<string> = []
afterEach(() => {
  for (const home of homes.splice(0)) fs.rmSync(home, { recursive: true, force: true })
})

/** A temp home dir with `<home>/<relative>` holding `content` for each entry. */
const homeWith = (files: Readonly<Record<string, string>>): string => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "intercom-factory-"))
  homes.push(home)
  for (const [relative, content] of Object.entries(files)) {
    const file = path.join(home, relative)
    fs.mkdirSync(path.dirname(file), { recursive: true })
    fs.writeFileSync(file, content)
  }
  return home
}

const PI_CONFIG = ".pi/agent/intercom/config.json"
const ATOMIC_CONFIG = ".atomic/agent/intercom/config.json"

/** Both readers on the same home, cwd and environment. */
const readBoth = async (home: string, env: Readonly<Record<string, string>> = {}) => {
  const factory = factoryConfig(env, { homeDir: home, cwd: home })
  const resolution = await Effect.runPromise(
    readIntercomSettings({ env, homeDir: home, cwd: home }).pipe(Effect.provide(NodeFileSystem.layer))
  )
  return { factory, resolution }
}

describe("pi extension factory config", () => {
  it("reads the Atomic fallback config file, as the settings do, when ~/.pi has none (C-CFG-1)", async () => {
    const home = homeWith({
      [ATOMIC_CONFIG]: JSON.stringify({ toolVisibility: "after-first-use", shortcut: "Alt+Shift+I", confirmSend: true })
    })
    const { factory, resolution } = await readBoth(home)
    assert.strictEqual(resolution.settings.configSource, path.join(home, ATOMIC_CONFIG))
    assert.isTrue(resolution.settings.confirmSend)
    assert.strictEqual(resolution.settings.toolVisibility, "after-first-use")
    assert.strictEqual(factory.toolVisibility, resolution.settings.toolVisibility)
    assert.strictEqual(factory.shortcut, "alt+shift+i")
  })

  it("a file rejected for a wrong-typed key gives the factory the defaults too (C-CFG-2)", async () => {
    const home = homeWith({
      [PI_CONFIG]: JSON.stringify({ toolVisibility: "after-first-use", shortcut: "alt+i", confirmSend: "yes" })
    })
    // Named by the environment (absolute), so any reader finds this very file.
    const { factory, resolution } = await readBoth(home, { PI_CODING_AGENT_DIR: path.join(home, ".pi", "agent") })
    assert.strictEqual(resolution.settings.configSource, path.join(home, PI_CONFIG))
    assert.deepStrictEqual(resolution.errors.map((error) => error._tag), ["IntercomConfigFileError"])
    assert.strictEqual(resolution.settings.toolVisibility, "always")
    assert.isUndefined(resolution.settings.shortcut)
    assert.deepStrictEqual(factory, { toolVisibility: "always", shortcut: undefined })
  })

  it("an invalid ~/.pi file is not skipped for the Atomic one, by either reader", async () => {
    const home = homeWith({
      [PI_CONFIG]: "{ not json",
      [ATOMIC_CONFIG]: JSON.stringify({ toolVisibility: "after-first-use" })
    })
    const { factory, resolution } = await readBoth(home)
    assert.strictEqual(resolution.settings.toolVisibility, "always")
    assert.strictEqual(factory.toolVisibility, "always")
  })

  it("an agent dir from the environment: its file only, no fallback, by either reader", async () => {
    const home = homeWith({
      ["agent/intercom/config.json"]: JSON.stringify({ toolVisibility: "after-first-use", shortcut: "ctrl+k" }),
      [ATOMIC_CONFIG]: JSON.stringify({ shortcut: "alt+q" })
    })
    const { factory, resolution } = await readBoth(home, { PI_CODING_AGENT_DIR: "agent" })
    assert.strictEqual(resolution.settings.toolVisibility, "after-first-use")
    assert.deepStrictEqual(factory, { toolVisibility: "after-first-use", shortcut: "ctrl+k" })
    const { factory: none } = await readBoth(home, { PI_CODING_AGENT_DIR: "elsewhere" })
    assert.deepStrictEqual(none, { toolVisibility: "always", shortcut: undefined })
  })
})
