/**
 * bench/cli-send.ts's process timer (`timedProcess`, which times each
 * `intercom send`): a process that outlives its bound is killed, not left
 * running behind the bench, and one still running when the bench cleans up
 * (Ctrl-C, `--ci`'s watchdog: `cleanupAll`) is killed too. A `node` that
 * never exits stands in for a hung `intercom send`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { timedProcess } from "../../bench/cli-send.ts"
import { cleanupAll } from "../../bench/targets.ts"
import { isAlive } from "../support/process.ts"

const HANG = [process.execPath, "-e", "setInterval(() => {}, 1000)"]

/** The rejection's message, or a failure naming the value it resolved with. */
const rejection = (p: Promise<number>): Effect.Effect<string> =>
  Effect.promise(() => p.then((ms) => `resolved after ${ms} ms`, (e: unknown) => (e instanceof Error ? e.message : String(e))))

describe("bench/cli-send.ts timedProcess", () => {
  it.live("kills a process that outlives its bound, and rejects once it is gone", () =>
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
})
