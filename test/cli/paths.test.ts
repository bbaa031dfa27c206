/**
 * The CLI's paths (P90): agent-dir precedence, and the socket rule, which is
 * config's (test/config/socketPath.test.ts) so that clients dial where the
 * CLI's broker listens.
 */
import { assert, describe, it } from "@effect/vitest"
import { type IntercomPaths, resolveIntercomPaths, SocketPathError } from "../../src/config/index.ts"
import { type ProcessInputs, resolveCliPaths } from "../../src/cli/paths.ts"

const base: ProcessInputs = {
  dir: undefined,
  env: {},
  cwd: "/work/project",
  homeDir: "/home/alice",
  placement: { runtimeDir: "/run/user/1000", uid: 1000, maxSocketBytes: 107 }
}

const resolve = (overrides: Partial<ProcessInputs>): IntercomPaths => {
  const result = resolveCliPaths({ ...base, ...overrides })
  if (result instanceof SocketPathError) throw new Error(`unexpected: ${result.message}`)
  return result
}

describe("agent dir precedence", () => {
  it("defaults to ~/.pi/agent", () => {
    const paths = resolve({})
    assert.strictEqual(paths.agentDir, "/home/alice/.pi/agent")
    assert.strictEqual(paths.intercomDir, "/home/alice/.pi/agent/intercom")
    assert.strictEqual(paths.socketPath, "/home/alice/.pi/agent/intercom/broker.sock")
    assert.strictEqual(paths.defaultSocketPath, paths.socketPath)
    assert.strictEqual(paths.pidFile, "/home/alice/.pi/agent/intercom/broker.pid")
    assert.isUndefined(paths.socketFallbackDir)
  })

  it("PI_CODING_AGENT_DIR beats the default", () => {
    assert.strictEqual(resolve({ env: { PI_CODING_AGENT_DIR: "/srv/pi" } }).agentDir, "/srv/pi")
  })

  it("ATOMIC_CODING_AGENT_DIR beats PI_CODING_AGENT_DIR", () => {
    const env = { ATOMIC_CODING_AGENT_DIR: "/srv/atomic", PI_CODING_AGENT_DIR: "/srv/pi" }
    assert.strictEqual(resolve({ env }).agentDir, "/srv/atomic")
  })

  it("--dir beats both variables", () => {
    const env = { ATOMIC_CODING_AGENT_DIR: "/srv/atomic", PI_CODING_AGENT_DIR: "/srv/pi" }
    assert.strictEqual(resolve({ env, dir: "/srv/flag" }).agentDir, "/srv/flag")
  })

  it("values are trimmed; empty and blank values are ignored", () => {
    assert.strictEqual(resolve({ env: { PI_CODING_AGENT_DIR: "  /srv/pi \n" } }).agentDir, "/srv/pi")
    const env = { ATOMIC_CODING_AGENT_DIR: "   ", PI_CODING_AGENT_DIR: "/srv/pi" }
    assert.strictEqual(resolve({ env }).agentDir, "/srv/pi")
    assert.strictEqual(resolve({ env: { ATOMIC_CODING_AGENT_DIR: "" } }).agentDir, "/home/alice/.pi/agent")
    assert.strictEqual(resolve({ dir: " ", env: { PI_CODING_AGENT_DIR: "/srv/pi" } }).agentDir, "/srv/pi")
  })

  it("relative values are resolved against the cwd and normalised", () => {
    assert.strictEqual(resolve({ env: { PI_CODING_AGENT_DIR: "agents/pi/" } }).agentDir, "/work/project/agents/pi")
    assert.strictEqual(resolve({ dir: "../other" }).agentDir, "/work/other")
  })
})

describe("socket path", () => {
  it("is config's rule: a long agent dir gets the same short fallback a client computes", () => {
    const agentDir = "/very/" + "long/".repeat(25) + "agent"
    const paths = resolve({ dir: agentDir })
    assert.deepStrictEqual(paths, resolveIntercomPaths(agentDir, base.placement))
    assert.strictEqual(paths.socketFallbackDir, "/run/user/1000/intercom-1000")
  })

  it("fails with a clear message when even the fallback is too long", () => {
    const placement = { ...base.placement, runtimeDir: "/" + "r".repeat(100) }
    const result = resolveCliPaths({ ...base, dir: "/" + "x".repeat(120), placement })
    assert.instanceOf(result, SocketPathError)
    if (result instanceof SocketPathError) assert.include(result.message, "--dir")
  })
})
