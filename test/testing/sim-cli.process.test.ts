/**
 * `npm run sim` as a process (`node dist/testing/sim-cli.js`; npm test builds
 * first): an unknown flag is rejected with exit 2 and says which flag, and
 * no seed runs.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { fileURLToPath } from "node:url"
import { runToClose } from "../cli/runToClose.ts"

const SIM_CLI = fileURLToPath(new URL("../../dist/testing/sim-cli.js", import.meta.url))

describe("sim-cli process", () => {
  it.live("rejects an unknown flag with exit 2, naming it, and runs no seed", () =>
    Effect.gen(function*() {
      const { code, stdout, stderr } = yield* runToClose(SIM_CLI, ["--seeds", "1", "--bogus"])
      assert.strictEqual(code, 2)
      assert.include(stderr, "Unrecognized flag: --bogus")
      assert.notInclude(stdout, "runs:")
    }))
})
