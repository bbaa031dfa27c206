/**
 * A removable lock (FileLock.ts `holdRemovableFileLock`) on Linux where this
 * process cannot read `/proc/locks` (a sandbox that hides /proc) while other
 * lockers of the same file can, and so remove it at a clean end: taken
 * unchecked, it could be a removed file's while a newcomer holds the file the
 * path names now — two holders. So it is refused (`FileLockFailed`). Here: a
 * child process in a mount namespace whose /proc is an empty tmpfs, paused
 * between its open and its lock while the holder removes the file and a
 * newcomer takes a new one. Skipped where `unshare --mount` is not allowed.
 */
import { spawn, spawnSync } from "node:child_process"
import { Effect, Exit, Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "vitest"
import { holdRemovableFileLock } from "../../src/config/FileLock.ts"

const CHILD = `
import * as fs from "node:fs"
import { Effect, Exit, Scope } from "effect"
import { holdRemovableFileLock } from "../../src/config/FileLock.ts"
const file = process.argv[2]
let opens = 0
const result = Effect.runSync(Effect.gen(function*() {
  const scope = yield* Scope.make()
  const exit = yield* holdRemovableFileLock(file, {
    probeGraceMs: 0,
    betweenOpenAndLock: () => {
      if (opens++ > 0) return
      fs.writeSync(1, "opened\\n")
      fs.readSync(0, Buffer.alloc(3)) // until the parent says go
    }
  }).pipe(Scope.provide(scope), Effect.exit)
  return Exit.isSuccess(exit) ? "held" : exit.cause.toString().includes("FileLockHeld") ? "refused" : /FileLockFailed[^]*\\/proc\\/locks/.test(exit.cause.toString()) ? "failed:proc" : "failed"
}))
fs.writeSync(1, "proc:" + fs.existsSync("/proc/locks") + " " + result + "\\n")
`

const canHideProc = (() => {
  if (!fs.existsSync("/proc/locks")) return false
  const run = spawnSync("unshare", ["--mount", "sh", "-c", "mount -t tmpfs none /proc && test ! -e /proc/locks"], { stdio: "ignore" })
  return run.status === 0
})()

const run = <A, E>(effect: Effect.Effect<A, E>): Promise<A> => Effect.runPromise(effect)

describe.skipIf(!canHideProc)("a removable lock on Linux without /proc/locks, beside lockers with it", () => {
  it("a locker that cannot check fails with FileLockFailed naming /proc/locks, rather than hold a removed file while a newcomer holds the path's", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "filelock-noproc-"))
    const file = path.join(dir, "instance.lock")
    const script = path.join(import.meta.dirname, `noproc-${process.pid}.child.ts`)
    fs.writeFileSync(script, CHILD)
    const first = await run(Scope.make())
    const newcomer = await run(Scope.make())
    try {
      await run(Scope.provide(holdRemovableFileLock(file, { probeGraceMs: 0 }), first)) // a holder with /proc: removes on release
      const child = spawn("unshare", [
        "--mount",
        "sh",
        "-c",
        `mount -t tmpfs none /proc && exec "${process.execPath}" "${script}" "${file}"`
      ], { stdio: ["pipe", "pipe", "inherit"] })
      let out = ""
      const opened = new Promise<void>((resolve) =>
        child.stdout.on("data", (chunk: Buffer) => {
          out += chunk.toString()
          if (out.includes("opened")) resolve()
        })
      )
      const closed = new Promise<void>((resolve) => child.on("close", () => resolve()))
      await opened // the child opened the first holder's file and waits before locking it
      await run(Scope.close(first, Exit.void)) // a clean end: unlinks, then lets go
      await run(Scope.provide(holdRemovableFileLock(file, { probeGraceMs: 0 }), newcomer)) // a newcomer holds the new file
      child.stdin.end("go\n")
      await closed
      assert.include(out, "proc:false", "the child ran without /proc/locks")
      assert.include(out, "proc:false failed:proc", "unchecked it would hold the removed file while the newcomer holds the path's: two holders")
    } finally {
      await run(Scope.close(newcomer, Exit.void))
      await run(Scope.close(first, Exit.void))
      fs.rmSync(script, { force: true })
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }, 40_000)
})
