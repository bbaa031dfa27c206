/** C-CFG-1 / P90 and the design decision: which agent dir, and which files live in it. */
import { assert, describe, it } from "@effect/vitest"
import {
  configFileCandidates,
  ConfigFileRead,
  intercomPaths,
  resolveAgentDir
} from "../../src/config/index.ts"
import { ATOMIC_CONFIG, CWD, HOME, PI_CONFIG, resolve } from "./support.ts"

const agentDir = (env: Record<string, string>, dir?: string) => resolveAgentDir({ env, cwd: CWD, homeDir: HOME, dir })

describe("resolveAgentDir", () => {
  it("defaults to ~/.pi/agent", () => {
    assert.deepStrictEqual(agentDir({}), { agentDir: "/home/ada/.pi/agent", source: { _tag: "Default" } })
  })

  it("ATOMIC_CODING_AGENT_DIR beats PI_CODING_AGENT_DIR", () => {
    assert.deepStrictEqual(agentDir({ ATOMIC_CODING_AGENT_DIR: "/a", PI_CODING_AGENT_DIR: "/p" }), {
      agentDir: "/a",
      source: { _tag: "Env", variable: "ATOMIC_CODING_AGENT_DIR" }
    })
  })

  it("PI_CODING_AGENT_DIR is used when the Atomic variable is unset or blank", () => {
    const expected = { agentDir: "/p", source: { _tag: "Env", variable: "PI_CODING_AGENT_DIR" } } as const
    assert.deepStrictEqual(agentDir({ PI_CODING_AGENT_DIR: "/p" }), expected)
    assert.deepStrictEqual(agentDir({ ATOMIC_CODING_AGENT_DIR: "", PI_CODING_AGENT_DIR: "/p" }), expected)
    assert.deepStrictEqual(agentDir({ ATOMIC_CODING_AGENT_DIR: " \t\n", PI_CODING_AGENT_DIR: "/p" }), expected)
  })

  it("blank values everywhere fall back to the default", () => {
    assert.deepStrictEqual(agentDir({ ATOMIC_CODING_AGENT_DIR: " ", PI_CODING_AGENT_DIR: "" }, "  ").source, {
      _tag: "Default"
    })
  })

  it("values are trimmed, and relative values resolve against cwd", () => {
    assert.strictEqual(agentDir({ PI_CODING_AGENT_DIR: "  /abs/dir  " }).agentDir, "/abs/dir")
    assert.strictEqual(agentDir({ ATOMIC_CODING_AGENT_DIR: "rel/agent" }).agentDir, "/work/project/rel/agent")
    assert.strictEqual(agentDir({ PI_CODING_AGENT_DIR: "../up" }).agentDir, "/work/up")
    assert.strictEqual(agentDir({ PI_CODING_AGENT_DIR: "/a/b/../c/" }).agentDir, "/a/c")
  })

  it("an explicit dir beats the environment, and is resolved the same way", () => {
    assert.deepStrictEqual(agentDir({ ATOMIC_CODING_AGENT_DIR: "/a" }, " flag "), {
      agentDir: "/work/project/flag",
      source: { _tag: "Override" }
    })
  })
})

describe("intercomPaths", () => {
  it("puts every runtime file under <agentDir>/intercom", () => {
    assert.deepStrictEqual(intercomPaths("/x/agent"), {
      agentDir: "/x/agent",
      intercomDir: "/x/agent/intercom",
      configFile: "/x/agent/intercom/config.json",
      socketPath: "/x/agent/intercom/broker.sock",
      defaultSocketPath: "/x/agent/intercom/broker.sock",
      socketFallbackDir: undefined,
      pidFile: "/x/agent/intercom/broker.pid",
      spawnLockFile: "/x/agent/intercom/broker.spawn.lock"
    })
  })

  it("settings carry the paths of the resolved agent dir", () => {
    const { settings } = resolve({ env: { PI_CODING_AGENT_DIR: "/p" } })
    assert.deepStrictEqual(settings.paths, intercomPaths("/p"))
    assert.deepStrictEqual(settings.agentDirSource, { _tag: "Env", variable: "PI_CODING_AGENT_DIR" })
  })
})

describe("an agent dir named with a leading ~ (not expanded)", () => {
  it("is kept as a relative path, with a warning that names the variable or flag and the home-dir path meant", () => {
    const fromEnv = resolve({ env: { PI_CODING_AGENT_DIR: "~/.pi/agent" } })
    assert.strictEqual(fromEnv.settings.paths.agentDir, `${CWD}/~/.pi/agent`)
    assert.deepStrictEqual(fromEnv.warnings, [
      `The agent dir "~/.pi/agent" (PI_CODING_AGENT_DIR) starts with "~", which is not expanded: it is ${CWD}/~/.pi/agent. ` +
      `If you meant your home directory, write the path out (${HOME}/.pi/agent).`
    ])
    assert.include(resolve({ dir: "~" }).warnings[0] ?? "", `"~" (--dir)`)
    assert.deepStrictEqual(resolve({ env: { ATOMIC_CODING_AGENT_DIR: "/a/~b" } }).warnings, [])
    assert.deepStrictEqual(resolve({}).warnings, [])
  })
})

describe("Atomic config fallback (default agent dir only)", () => {
  it("candidates: the pi file, then the Atomic file, only for the default agent dir", () => {
    assert.deepStrictEqual(configFileCandidates(agentDir({}), HOME, CWD), [PI_CONFIG, ATOMIC_CONFIG])
    assert.deepStrictEqual(configFileCandidates(agentDir({ PI_CODING_AGENT_DIR: "/p" }), HOME, CWD), [
      "/p/intercom/config.json"
    ])
    assert.deepStrictEqual(configFileCandidates(agentDir({}, "/d"), HOME, CWD), ["/d/intercom/config.json"])
  })

  it("reads ~/.atomic/agent/intercom/config.json when the ~/.pi one is missing", () => {
    const { errors, settings } = resolve({ files: { [ATOMIC_CONFIG]: `{"confirmSend": true}` } })
    assert.deepStrictEqual(errors, [])
    assert.isTrue(settings.confirmSend)
    assert.strictEqual(settings.configSource, ATOMIC_CONFIG)
    // runtime files stay under ~/.pi/agent
    assert.strictEqual(settings.paths.socketPath, "/home/ada/.pi/agent/intercom/broker.sock")
  })

  it("the ~/.pi file wins when both exist", () => {
    const { settings } = resolve({
      files: { [PI_CONFIG]: `{"confirmSend": false}`, [ATOMIC_CONFIG]: `{"confirmSend": true}` }
    })
    assert.isFalse(settings.confirmSend)
    assert.strictEqual(settings.configSource, PI_CONFIG)
  })

  it("an invalid or unreadable ~/.pi file is not skipped in favour of the Atomic one", () => {
    const invalid = resolve({ files: { [PI_CONFIG]: `{"confirmSend": 1}`, [ATOMIC_CONFIG]: `{"confirmSend": true}` } })
    assert.isFalse(invalid.settings.confirmSend)
    assert.strictEqual(invalid.errors.length, 1)
    const unreadable = resolve({
      files: { [PI_CONFIG]: ConfigFileRead.unreadable("EACCES"), [ATOMIC_CONFIG]: `{"confirmSend": true}` }
    })
    assert.isFalse(unreadable.settings.confirmSend)
    assert.strictEqual(unreadable.settings.configSource, PI_CONFIG)
  })

  it("is read when --dir or a variable names the default agent dir itself, as for a broker a client spawned", () => {
    // A client of the default agent dir starts its broker with --dir and PI_CODING_AGENT_DIR naming that dir:
    // the broker must read the same file as the client (its askTimeoutMs and durability).
    const files = { [ATOMIC_CONFIG]: `{"confirmSend": true}` }
    const spawned = resolve({ dir: `${HOME}/.pi/agent`, env: { PI_CODING_AGENT_DIR: `${HOME}/.pi/agent` }, files })
    assert.isTrue(spawned.settings.confirmSend)
    assert.strictEqual(spawned.settings.configSource, ATOMIC_CONFIG)
    assert.strictEqual(resolve({ env: { ATOMIC_CODING_AGENT_DIR: `${HOME}/.pi/agent/` }, files }).settings.configSource, ATOMIC_CONFIG)
  })

  it("is never read when an environment variable or explicit dir names the agent dir", () => {
    const files = { [ATOMIC_CONFIG]: `{"confirmSend": true}` }
    assert.isFalse(resolve({ env: { PI_CODING_AGENT_DIR: "/p" }, files }).settings.confirmSend)
    assert.isFalse(resolve({ dir: "/d", files }).settings.confirmSend)
    assert.isUndefined(resolve({ dir: "/d", files }).settings.configSource)
  })
})
