/**
 * FileLock in a pid namespace whose /proc is the parent's (`unshare --pid
 * --fork` without remounting /proc; some sandboxes): `/proc/locks` lists pids
 * as the /proc mount's namespace numbers them, not as `process.pid` does. A
 * removable lock checks itself against `/proc/self` there, so it is taken as
 * a plain one is; and the broker's lock holder is "not verified", not "not the
 * holder", since a pid read from `broker.pid` cannot be matched to that list.
 * Run in a child process under `unshare`; skipped where that is not allowed.
 */
import { execFileSync, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "vitest"

const SCRIPT = `
import { Effect, Exit, Scope } from "effect"
import * as fs from "node:fs"
import { holdFileLock, holdRemovableFileLock } from "../../src/config/FileLock.ts"
import { holdLifetimeLock, holdsLifetimeLock } from "../../src/config/LifetimeLock.ts"
const take = (hold) => Effect.runSync(Effect.gen(function*() {
  const scope = yield* Scope.make()
  const exit = yield* hold.pipe(Scope.provide(scope), Effect.exit)
  yield* Scope.close(scope, Exit.void)
  return Exit.isSuccess(exit) ? "held" : String(exit)
}))
const dir = process.argv[2]
const holds = Effect.runSync(Effect.scoped(Effect.gen(function*() {
  yield* holdLifetimeLock(dir)
  return yield* holdsLifetimeLock(dir, process.pid)
})))
console.log(JSON.stringify({
  inner: process.pid !== Number(fs.readlinkSync("/proc/self")),
  plain: take(holdFileLock(dir + "/plain.lock", { probeGraceMs: 0 })),
  removable: take(holdRemovableFileLock(dir + "/removable.lock", { probeGraceMs: 0 })),
  removed: !fs.existsSync(dir + "/removable.lock"),
  holds: holds === undefined ? "unknown" : holds
}))
`

/** Whether this machine lets us make a pid namespace without remounting /proc. */
const canUnshare = (() => {
  if (!fs.existsSync("/proc/locks")) return false
  const run = spawnSync("unshare", ["--pid", "--fork", "true"], { stdio: "ignore" })
  return run.status === 0
})()

describe.skipIf(!canUnshare)("FileLock in a pid namespace whose /proc is the parent's", () => {
  it("a removable lock is taken (and its file removed at the end) as a plain one is; the broker lock's holder is not verified rather than denied", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "filelock-pidns-"))
    // Beside the sources, so the script resolves "effect" and ../../src (node ≥ 22.19 strips types).
    const script = path.join(import.meta.dirname, `pidns-${process.pid}.child.ts`)
    fs.writeFileSync(script, SCRIPT)
    try {
      const out = execFileSync("unshare", ["--pid", "--fork", process.execPath, script, dir], {
        encoding: "utf8",
        timeout: 30_000
      })
      const result: { inner: boolean; plain: string; removable: string; removed: boolean; holds: string | boolean } =
        JSON.parse(out.trim())
      assert.isTrue(result.inner, "the child's process.pid is not the pid /proc shows for it")
      assert.strictEqual(result.plain, "held", "holdFileLock works here")
      assert.strictEqual(result.removable, "held", "holdRemovableFileLock works here too")
      assert.isTrue(result.removed, "checked, so its file is removed at a clean end")
      assert.strictEqual(result.holds, "unknown", "broker.pid's pid cannot be matched to /proc/locks here: not verified, not false")
    } finally {
      fs.rmSync(script, { force: true })
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }, 40_000)
})
