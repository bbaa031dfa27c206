/**
 * bench/ab.ts as a process: the workloads it is asked for are checked before
 * either build is looked at, so a typo in `--only` (or `cli-send`, which it
 * refuses) is reported at once rather than after a base commit has been
 * exported and built. An empty directory as `--base` stands for a base that
 * is not ready: the workload error comes first.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { runChild } from "../support/process.ts"

const SCRIPT = fileURLToPath(new URL("../../bench/ab.ts", import.meta.url))

describe("bench/ab.ts", () => {
  it.live("refuses a bad --only before it looks at the builds", () =>
    Effect.gen(function*() {
      const base = fs.mkdtempSync(path.join(os.tmpdir(), "ab-test-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(base, { recursive: true, force: true })))
      const typo = yield* runChild(process.execPath, [SCRIPT, "--base", base, "--only", "w64,fanim"])
      assert.strictEqual(typo.code, 2, typo.stderr)
      assert.match(typo.stderr, /^ab: --only: fanim selects no workload \(workloads at these sizes: w1 w64 /)
      const cliSend = yield* runChild(process.execPath, [SCRIPT, "--base", base, "--only", "cli-send"])
      assert.strictEqual(cliSend.code, 2, cliSend.stderr)
      assert.match(cliSend.stderr, /^ab: cli-send spawns this tree's `intercom send`/)
    }), { timeout: 30_000 })
})
