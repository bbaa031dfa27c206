/**
 * examples/two-sessions.ts runs as documented (`node examples/two-sessions.ts`
 * after `npm run build`), prints the reply, exits 0, and leaves no broker
 * and no agent dir behind — so the example cannot rot.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { tempDir } from "../support/broker.ts"
import { built, BUILT_CLI, ROOT } from "../support/built.ts"
import { childEnv, spawnNode } from "../support/process.ts"
import { brokerProcessesWhere } from "./support.ts"

describe("examples/two-sessions.ts", () => {
  it.live("runs: two sessions, an ask and its reply, a clean shutdown that leaves no broker and no agent dir", () =>
    Effect.gen(function*() {
      built(BUILT_CLI) // the example's client spawns the bundle
      const parent = yield* tempDir("eix-")
      const example = yield* spawnNode(["examples/two-sessions.ts"], {
        cwd: ROOT,
        env: childEnv({ INTERCOM_EXAMPLE_DIR: parent })
      })
      assert.deepStrictEqual(yield* example.waitExit(), { code: 0, signal: null }, example.stderr())
      assert.strictEqual(example.stderr(), "")
      const lines = example.stdout().trimEnd().split("\n")
      assert.match(lines[0] ?? "", /^\*\*Current session:\*\*$/)
      // Rows carry peer health (health-v1) and a guidance line under each (C-HLT-1, C-HLT-7).
      assert.match(lines[1] ?? "", /^• planner \([0-9a-f]{8}\) — .* \(example-model\) \[self, idle, state:idle, accepts_asks:(true|unknown), /)
      assert.match(lines[2] ?? "", /^  ↳ self target unavailable/)
      assert.match(lines[5] ?? "", /^• reviewer \([0-9a-f]{8}\) — .* \(example-model\) \[same cwd, idle, state:idle, /)
      assert.match(lines[6] ?? "", /^  ↳ idle: /)
      // The reply went through the broker the example spawned for its private agent dir.
      assert.deepStrictEqual(lines.slice(7), [
        "reviewer received (trigger): Is the retry logic safe?",
        "**Reply from reviewer:**",
        "Yes: every retry reuses the message id, so the broker de-duplicates it."
      ])
      // The example waits for its broker to exit before it exits itself: none is left, and the dir is gone.
      assert.deepStrictEqual(brokerProcessesWhere((arg) => arg.startsWith(`${parent}/`)), [], "a broker was left running")
      assert.deepStrictEqual(fs.readdirSync(parent), [], "the agent dir was removed")
    }), { timeout: 30_000 })
})
