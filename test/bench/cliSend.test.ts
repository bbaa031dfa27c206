/**
 * bench/cli-send.ts: its process timer (`timedProcess`, which times each
 * `intercom send`) kills a process that outlives its bound, not leaving it
 * running behind the bench, and one still running when the bench cleans up
 * (Ctrl-C, `--ci`'s watchdog: `cleanupAll`) is killed too; a `node` that
 * never exits stands in for a hung `intercom send`. And a run is not steered
 * by the user's intercom settings in the bench's environment: a real broker
 * from `dist/` (so `npm run build` first) and real `intercom send`s.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { cliSendRun, timedProcess } from "../../bench/cli-send.ts"
import { benchEnv, brokerSpec, cleanupAll } from "../../bench/targets.ts"
import { built, BUILT_CLI } from "../support/built.ts"
import { isAlive } from "../support/process.ts"

const HANG = [process.execPath, "-e", "setInterval(() => {}, 1000)"]

/** The rejection's message, or a failure naming the value it resolved with. */
const rejection = (p: Promise<number>): Effect.Effect<string> =>
  Effect.promise(() => p.then((ms) => `resolved after ${ms} ms`, (e: unknown) => (e instanceof Error ? e.message : String(e))))

describe("bench/cli-send.ts", () => {
  it.live("timedProcess kills a process that outlives its bound, and rejects once it is gone", () =>
    Effect.gen(function*() {
      const message = yield* rejection(timedProcess(HANG, process.env, 300))
      const m = /^-e setInterval.*: timed out after 300 ms \(pid (\d+), killed\)$/.exec(message)
      assert.isNotNull(m, message)
      assert.isFalse(isAlive(Number(m?.[1])), "the timed-out process was killed and reaped")
    }), { timeout: 20_000 })

  it.live("a process still running is killed by cleanupAll (Ctrl-C, the --ci watchdog)", () =>
    Effect.gen(function*() {
      const running = timedProcess(HANG, process.env, 60_000)
      cleanupAll()
      const message = yield* rejection(running)
      assert.match(message, /exited SIGKILL/)
    }), { timeout: 20_000 })

  it.live("a PI_INTERCOM_GROUP in the bench's environment reaches neither the broker nor `intercom send`", () =>
    Effect.gen(function*() {
      built(BUILT_CLI) // the broker and `intercom send` are the bundle
      // As in a pi session of a group, or a subagent: `intercom send` went to that group, not the recipient's, and failed.
      const before = process.env["PI_INTERCOM_GROUP"]
      process.env["PI_INTERCOM_GROUP"] = "bench-test-group"
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          if (before === undefined) delete process.env["PI_INTERCOM_GROUP"]
          else process.env["PI_INTERCOM_GROUP"] = before
        })
      )
      const env = benchEnv("/tmp/agent-dir")
      assert.strictEqual(env["PI_INTERCOM_GROUP"], undefined)
      assert.strictEqual(env["PI_CODING_AGENT_DIR"], "/tmp/agent-dir")
      assert.strictEqual(env["PATH"], process.env["PATH"])
      const sendMs = yield* Effect.promise(() =>
        cliSendRun(brokerSpec, 1).then((run) => run.metrics["sendMs"], (e: unknown) => (e instanceof Error ? e.message : String(e)))
      )
      assert.isNumber(sendMs, String(sendMs))
    }), { timeout: 30_000 })
})
