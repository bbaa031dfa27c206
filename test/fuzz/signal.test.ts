/**
 * `npm run fuzz` ended by a signal exits as a shell reports that signal:
 * 143 for SIGTERM (a CI job's timeout, `kill`), 130 for SIGINT (Ctrl-C).
 * Before, its teardown saw only an interruption and exited 130 for both.
 * Needs dist/ (`npm run build`): the fuzzer under test is the built CLI.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { built } from "../support/built.ts"
import { spawnChild } from "../support/process.ts"

const cli = built("dist/fuzz/fuzz-cli.js")

/** Starts an in-process campaign far too long to finish, signals it once it has printed its first line, and returns how it exited. */
const endWith = (signal: NodeJS.Signals) =>
  Effect.gen(function*() {
    const fuzzer = yield* spawnChild(process.execPath, [cli, "--seed", "3", "--frames", "1000000", "--light", "--in-process"])
    yield* fuzzer.waitStdout(/^fuzz: seed 3, /m)
    yield* fuzzer.kill(signal)
    const outcome = yield* fuzzer.waitExit()
    return { outcome, output: `${fuzzer.stdout()}\n${fuzzer.stderr()}` }
  })

describe("npm run fuzz ended by a signal", () => {
  it.live("exits 143 on SIGTERM and 130 on SIGINT", () =>
    Effect.gen(function*() {
      const [term, int] = yield* Effect.all([endWith("SIGTERM"), endWith("SIGINT")], { concurrency: 2 })
      assert.deepStrictEqual(term.outcome, { code: 143, signal: null }, term.output)
      assert.deepStrictEqual(int.outcome, { code: 130, signal: null }, int.output)
    }).pipe(Effect.scoped), 20_000)
})
