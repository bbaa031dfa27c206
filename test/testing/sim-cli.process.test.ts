/**
 * `npm run sim` as a process (`node dist/testing/sim-cli.js`; npm test builds
 * first): an unknown flag, or a value the command refuses, is rejected with
 * exit 2 and says why, and no seed runs; a workflow seed runs a `--replay` op list, its
 * report opening with the build's stamp (BuildStamp.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { built } from "../support/built.ts"
import { runToClose } from "../cli/runToClose.ts"

const SIM_CLI = built("dist/testing/sim-cli.js")

describe("sim-cli process", () => {
  it.live("rejects an unknown flag with exit 2, naming it, and runs no seed", () =>
    Effect.gen(function*() {
      const { code, stdout, stderr } = yield* runToClose(SIM_CLI, ["--seeds", "1", "--bogus"])
      assert.strictEqual(code, 2)
      assert.include(stderr, "Unrecognized flag: --bogus")
      assert.notInclude(stdout, "runs:")
    }))

  it.live("a value the command refuses after parsing (--seeds 0) exits 2 with the usage and the reason, without a stack trace", () =>
    Effect.gen(function*() {
      const { code, stdout, stderr } = yield* runToClose(SIM_CLI, ["--seeds", "0"])
      assert.strictEqual(code, 2)
      assert.include(stderr, "Invalid value for flag --seeds: \"0\"")
      assert.include(stderr, "a number of seeds of at least 1")
      assert.notMatch(stderr, /\n\s+at /, "no stack trace")
      assert.include(stdout + stderr, "USAGE")
      assert.notInclude(stdout, "runs:")
    }))

  it.live("--workflow --seed S --replay JSON runs that op list, not the seed's, its report opening with the build's stamp", () =>
    Effect.gen(function*() {
      const ops = [{ pause: 0, op: "ParentBusy", busy: true }, { pause: 100, op: "ChildSend", child: 0, kind: "send" }]
      const { code, stdout } = yield* runToClose(SIM_CLI, ["--workflow", "--seed", "2", "--replay", JSON.stringify(ops)])
      assert.strictEqual(code, 0, stdout)
      assert.match(stdout, /^build [0-9a-f]{12} \(\d+ compiled modules\)\n/)
      assert.include(stdout, "workflow seed 2, 2 ops (replayed):")
      for (const op of ops) assert.include(stdout, `  ${JSON.stringify(op)}`)
      assert.match(stdout, /\nok\n?$/)
    }))
})
