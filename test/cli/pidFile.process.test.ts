/**
 * The built `intercom` reads `broker.pid` through the one strict reader
 * (src/config/pidFile.ts) wherever it reads it: a second broker names the
 * running one's pid only from a canonical file, and `broker stop` signals
 * nobody when the file is not canonical. Needs `npm run build` first
 * (`npm test` does it).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { probeHealth } from "../../src/transport/healthProbe.ts"
import { runToClose } from "./runToClose.ts"
import { cleanEnv, main, startBroker, tempDir } from "./support.ts"

const setup = Effect.gen(function*() {
  const root = yield* tempDir()
  const agentDir = path.join(root, "agent")
  const intercomDir = path.join(agentDir, "intercom")
  return {
    agentDir,
    socketPath: path.join(intercomDir, "broker.sock"),
    pidFile: path.join(intercomDir, "broker.pid"),
    env: cleanEnv(root)
  }
})

describe("broker.pid, read strictly by the intercom executable", () => {
  it.live("a second broker names the running one's pid only when broker.pid is canonical", () =>
    Effect.gen(function*() {
      const t = yield* setup
      // never idle-exits: on a loaded machine the second start can outlast the default 5 s
      const first = yield* startBroker(["--dir", t.agentDir, "--idle-exit", "never"], t.env)
      fs.writeFileSync(t.pidFile, `${first.pid}a`)
      const garbled = yield* runToClose(main(), ["broker", "--dir", t.agentDir], t.env)
      assert.strictEqual(garbled.code, 1)
      assert.include(garbled.stderr, "already running (it holds ")
      fs.writeFileSync(t.pidFile, String(first.pid))
      const canonical = yield* runToClose(main(), ["broker", "--dir", t.agentDir], t.env)
      assert.strictEqual(canonical.code, 1)
      assert.include(canonical.stderr, `already running (pid ${first.pid})`)
    }))

  it.live("broker stop signals nobody when broker.pid is not canonical (here: a leading space)", () =>
    Effect.gen(function*() {
      const t = yield* setup
      const broker = yield* startBroker(["--dir", t.agentDir, "--idle-exit", "never"], t.env)
      fs.writeFileSync(t.pidFile, ` ${broker.pid}`)
      const stop = yield* runToClose(main(), ["broker", "stop", "--dir", t.agentDir], t.env)
      assert.strictEqual(stop.code, 1)
      assert.include(stop.stderr, "is missing or unreadable")
      assert.include(stop.stderr, "Not sending any signal")
      assert.isTrue(yield* probeHealth(t.socketPath), "the broker still answers")
    }))
})
