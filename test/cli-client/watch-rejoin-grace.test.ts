/**
 * `intercom watch --rejoin-grace`: the watch opens its session with the value
 * (`watchSessionOptions`), whose client takes it as its `rejoinGraceMs` (how long after a reconnect a session may take to come
 * back before the watch shows it as left), a bad value is a usage error
 * naming what the flag takes, and a watch given a short grace shows a
 * session that died while it was away as `[left] … (while disconnected)`.
 * The pure parse is in units.test.ts.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as fs from "node:fs"
import { openSession, resolveContext } from "../../src/cli/client/session.ts"
import { watchSessionOptions } from "../../src/cli/client/watch.ts"
import { headless } from "../../src/session/Host.ts"
import { tempDir } from "../support/broker.ts"
import { freeze } from "../support/freeze.ts"
import { readPidFile } from "../support/process.ts"
import { makeAgent, runCli, startWatch } from "./support.ts"

/** Real processes on a machine that may be shared. */
const TIMEOUT = 90_000

/** The client of a CLI session opened (never connected) in a fresh agent dir, with `rejoinGraceMs` as given. */
const clientWith = (rejoinGraceMs: number | undefined) =>
  Effect.gen(function*() {
    const dir = yield* tempDir("eirg-")
    const context = yield* resolveContext({ name: Option.some("planner"), dir: Option.some(dir), group: Option.none() }).pipe(
      Effect.provide(NodeFileSystem.layer)
    )
    const { client } = yield* openSession(context, {
      sessionId: "planner-session",
      host: headless(context.identity, () => Effect.void),
      inboundTrigger: "never",
      ephemeral: false,
      rejoinGraceMs
    })
    return client
  })

describe("intercom watch --rejoin-grace", () => {
  it.effect("the session's client gets the grace it is given, and 10 s without one", () =>
    Effect.gen(function*() {
      assert.strictEqual((yield* clientWith(2_500)).rejoinGraceMs, 2_500)
      assert.strictEqual((yield* clientWith(0)).rejoinGraceMs, 0)
      assert.strictEqual((yield* clientWith(undefined)).rejoinGraceMs, 10_000)
    }))

  it("the watch opens its session with the flag's grace, and with the client's default without it", () => {
    assert.strictEqual(watchSessionOptions({ rejoinGrace: Option.some(2_500) }, "planner").rejoinGraceMs, 2_500)
    assert.isUndefined(watchSessionOptions({ rejoinGrace: Option.none() }, "planner").rejoinGraceMs)
  })

  it.live("a value that is no duration, or past 10 minutes, exits 2 saying what the flag takes; no broker starts", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const cases: ReadonlyArray<readonly [string, string]> = [
        ["soon", `--rejoin-grace must be a duration such as 3s, 500ms or 0 (milliseconds when no unit is given), got "soon"`],
        ["11m", `--rejoin-grace must be at most 10m (600000 ms), got "11m"`]
      ]
      for (const [value, text] of cases) {
        const outcome = yield* runCli(agent, ["watch", "--name", "planner", "--rejoin-grace", value])
        assert.strictEqual(outcome.code, 2, `${value}: ${outcome.stderr}`)
        assert.include(outcome.stderr, text)
        assert.strictEqual(outcome.stdout, "")
      }
      assert.isFalse(fs.existsSync(agent.pidFile), "no usage error started a broker")
    }), TIMEOUT)

  it.live("with a short grace, a session that died while the broker was gone is shown as [left] (while disconnected)", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const alice = yield* startWatch(agent, "alice", ["--rejoin-grace", "200ms"])
      const bob = yield* startWatch(agent, "bob")
      yield* alice.waitStdout(/^\[joined\] bob \(/m)
      const broker = readPidFile(agent.pidFile)
      assert.isDefined(broker)
      // Frozen, the broker cannot tell alice that bob's connection ended; then it dies, and bob never comes back.
      yield* freeze(broker ?? 0)
      yield* bob.kill("SIGKILL")
      yield* bob.waitExit()
      process.kill(broker ?? 0, "SIGKILL")
      // Alice's client starts a new broker, registers, and once its grace is over lists the sessions: bob is gone.
      yield* alice.waitStdout(/^\[left\] bob \([^\n]*\(while disconnected\)$/m)
      assert.strictEqual(alice.stdout().match(/^\[left\] bob \(/gm)?.length, 1, alice.stdout())
    }), TIMEOUT)
})
