/**
 * examples/simulation.ts runs as documented (`node examples/simulation.ts`),
 * so the guide in docs/testing.md cannot rot.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { fileURLToPath } from "node:url"
import { spawnNode } from "../client/support.ts"

const ROOT = fileURLToPath(new URL("../../", import.meta.url))

describe("examples/simulation.ts", () => {
  it.live("50 seeds of a workflow with faults: every invariant and the workflow's own check hold", () =>
    Effect.gen(function*() {
      const example = yield* spawnNode(["examples/simulation.ts"], { cwd: ROOT })
      assert.strictEqual(yield* example.waitExit("60 seconds"), 0, example.stderr())
      assert.match(example.stdout(), /50 seeds in [\d.]+ s: 0 failed; \d+\/100 stages answered/)
    }), 90_000)

  it.live("--seed prints one run's trace and verdict", () =>
    Effect.gen(function*() {
      const example = yield* spawnNode(["examples/simulation.ts", "--seed", "3"], { cwd: ROOT })
      assert.strictEqual(yield* example.waitExit("60 seconds"), 0, example.stderr())
      assert.include(example.stdout(), "simulation seed 3: planner, reviewer-1, reviewer-2")
      assert.include(example.stdout(), "invariants hold; workflow ok")
    }), 90_000)
})
