/**
 * `npm run fuzz` killed outright (SIGKILL, out of memory) does not leave its
 * broker behind: the broker runs detached with `--idle-exit never`, and the
 * GC hook ends it when the fuzzer's end of its stdin pipe goes, removing the
 * temp dir as it exits (src/fuzz/gcHook.ts). Needs dist/ (`npm run build`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Option, Schedule } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import { built } from "../support/built.ts"

const cli = built("dist/fuzz/fuzz-cli.js")

const alive = (pid: number): boolean => fs.existsSync(`/proc/${pid}`) && !/^State:\s+Z/m.test(readStatus(pid))
const readStatus = (pid: number): string => {
  try {
    return fs.readFileSync(`/proc/${pid}/status`, "utf8")
  } catch {
    return ""
  }
}

describe("npm run fuzz killed outright", () => {
  it.live("takes its broker and the broker's temp dir with it", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<{ readonly pid: number; readonly dir: string }>()
      const exited = yield* Deferred.make<void>()
      const fuzzer = spawn(process.execPath, [cli, "--seed", "1", "--frames", "1000000", "--light"], { stdio: ["ignore", "ignore", "pipe"] })
      let stderr = ""
      fuzzer.stderr.setEncoding("utf8").on("data", (chunk: string) => {
        stderr += chunk
        const pid = /broker process (\d+)/.exec(stderr)?.[1]
        if (pid === undefined) return
        const dir = /--dir\0([^\0]+)/.exec(fs.readFileSync(`/proc/${pid}/cmdline`, "utf8"))?.[1] ?? ""
        Deferred.doneUnsafe(started, Exit.succeed({ pid: Number(pid), dir }))
      })
      fuzzer.once("close", () => Deferred.doneUnsafe(exited, Exit.void))
      const broker = yield* Deferred.await(started).pipe(Effect.timeout("20 seconds"))
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          // Only if the test failed: the broker this test's fuzzer started, by its pid.
          if (alive(broker.pid)) process.kill(broker.pid, "SIGKILL")
          if (broker.dir !== "") fs.rmSync(broker.dir, { recursive: true, force: true })
        })
      )
      assert.isTrue(fs.existsSync(broker.dir), broker.dir)
      fuzzer.kill("SIGKILL")
      yield* Deferred.await(exited)
      // The broker goes by itself: wait for it (its exit is the condition, polled), then for nothing more.
      const gone = yield* Effect.sync(() => !alive(broker.pid)).pipe(
        Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (done) => done }),
        Effect.timeoutOption("10 seconds")
      )
      assert.isTrue(Option.isSome(gone), `broker ${broker.pid} still running after its fuzzer was killed`)
      assert.isFalse(fs.existsSync(broker.dir), `${broker.dir} left behind`)
    }).pipe(Effect.scoped), 40_000)
})
