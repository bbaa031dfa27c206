/**
 * `intercom broker stats [--json]` against a real broker process: the JSON
 * snapshot decodes with the published schema and counts the live sessions
 * (the one asking included); the text form names what it shows; with no
 * broker running it fails with exit code 1 and says so, starting none.
 * Needs `npm run build` first.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { BrokerStatsSnapshot } from "../../src/protocol/stats.ts"
import { cleanEnv, registerSession, runCli, startBroker, tempDir } from "./support.ts"

const setup = Effect.gen(function*() {
  const root = yield* tempDir()
  const agentDir = path.join(root, "agent")
  return { agentDir, socketPath: path.join(agentDir, "intercom", "broker.sock"), env: cleanEnv(root) }
})

describe("intercom broker stats", () => {
  it.live("--json prints the running broker's metrics as one object that decodes as a stats-v1 snapshot", () =>
    Effect.gen(function*() {
      const t = yield* setup
      yield* startBroker(["--dir", t.agentDir, "--idle-exit", "never"], t.env)
      yield* registerSession(t.socketPath, "alice")
      const done = yield* runCli(["broker", "stats", "--dir", t.agentDir, "--json"], t.env)
      assert.strictEqual(done.code, 0, done.stderr)
      const lines = done.stdout.trim().split("\n")
      assert.strictEqual(lines.length, 1, done.stdout)
      const stats = Schema.decodeUnknownSync(BrokerStatsSnapshot)(JSON.parse(lines[0] ?? ""))
      // alice and the stats connection itself.
      assert.strictEqual(stats.sessions.live, 2)
      assert.strictEqual(stats.routed.delivered, 0)
      assert.isDefined(stats.store, "the default broker is durable")
    }))

  it.live("without --json it prints readable lines", () =>
    Effect.gen(function*() {
      const t = yield* setup
      yield* startBroker(["--dir", t.agentDir, "--idle-exit", "never"], t.env)
      const done = yield* runCli(["broker", "stats", "--dir", t.agentDir], t.env)
      assert.strictEqual(done.code, 0, done.stderr)
      assert.match(done.stdout, /^Intercom broker statistics \(up /)
      assert.match(done.stdout, /sessions: +1 live/)
      assert.match(done.stdout, /routed: +0 delivered, 0 queued, 0 staged, 0 replayed, 0 refused/)
    }))

  it.live("with no broker running it exits 1 with a clear message and starts none", () =>
    Effect.gen(function*() {
      const t = yield* setup
      const done = yield* runCli(["broker", "stats", "--dir", t.agentDir, "--json"], t.env)
      assert.strictEqual(done.code, 1)
      assert.strictEqual(done.stdout, "")
      assert.include(done.stderr, "Could not read the broker's statistics")
      assert.include(done.stderr, "no broker answers there")
      assert.isFalse(fs.existsSync(t.socketPath), "no broker was started")
    }))
})
