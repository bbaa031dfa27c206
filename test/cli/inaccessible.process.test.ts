/**
 * Agent dirs a command cannot use, and what it says. One it may enter but not
 * write: list and watch name the dir to fix or say to use another. A file where the intercom
 * dir must be: `list` and `broker` say to move it (not "another user could be
 * listening there", not "check that it is writable"). `intercom broker status`
 * and `stop` run by a user who may not enter the agent dir of a running broker: they say the dir cannot be accessed (path,
 * what to do) and exit 1, never "not running" / "No intercom broker is
 * running" with exit 0. A `--dir` below a directory it may not enter: client
 * commands say which directory, one line, exit 1 (no config error). As root the other user is `nobody` (setpriv), with
 * the agent dir under /var/tmp (/tmp may be 0700) and the CLI bundle copied
 * there too (the checkout may lie where `nobody` cannot read, a clone under
 * a 0700 /tmp say); as another user the agent dir's mode is set to 0 for
 * the command.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { runChild } from "../support/process.ts"
import { cleanEnv, main, runCli, startBroker, tempDir } from "./support.ts"

const isRoot = process.getuid?.() === 0
const hasSetpriv = fs.existsSync("/usr/bin/setpriv")

/**
 * A private root under /var/tmp (0755, so `nobody` may reach it) whose agent
 * dir `a` is 0700, and (as root) a copy of the CLI bundle (dist/bin, which
 * imports only Node's own modules) that `nobody` may read; removed with the
 * Scope.
 */
const varTmpAgent = Effect.acquireRelease(
  Effect.sync(() => {
    const root = fs.mkdtempSync("/var/tmp/eici-")
    fs.chmodSync(root, 0o755)
    const agentDir = path.join(root, "a")
    fs.mkdirSync(agentDir, { mode: 0o700 })
    const bin = path.join(root, "bin")
    if (isRoot) fs.cpSync(path.dirname(main()), bin, { recursive: true, filter: (from) => !from.endsWith(".map") })
    return { root, agentDir, cli: isRoot ? path.join(bin, path.basename(main())) : main() }
  }),
  ({ root, agentDir }) =>
    Effect.sync(() => {
      fs.chmodSync(agentDir, 0o700)
      fs.rmSync(root, { recursive: true, force: true })
    })
)

/**
 * `intercom ...args` as a user who may not enter `agentDir` (`mode` 0), or
 * with `mode` 0o555 may enter but not write to it.
 */
const runDenied = (cli: string, agentDir: string, args: ReadonlyArray<string>, mode = 0) => {
  const env = cleanEnv("/var/tmp", { TMPDIR: "/var/tmp", NODE_DISABLE_COMPILE_CACHE: "1", NODE_COMPILE_CACHE: "" })
  if (isRoot) {
    return runChild("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", process.execPath, cli, ...args], { env })
  }
  return Effect.acquireUseRelease(
    Effect.sync(() => fs.chmodSync(agentDir, mode)),
    () => runChild(process.execPath, [cli, ...args], { env }),
    () => Effect.sync(() => fs.chmodSync(agentDir, 0o700))
  )
}

describe.skipIf(isRoot && !hasSetpriv)("an agent dir this user may not enter", () => {
  it.live("broker status and broker stop say it cannot be accessed and exit 1; the broker keeps running", () =>
    Effect.gen(function*() {
      const { root, agentDir, cli } = yield* varTmpAgent
      const broker = yield* startBroker(["--dir", agentDir, "--idle-exit", "never"], cleanEnv(root))
      for (const command of [["broker", "status"], ["broker", "stop"]]) {
        const result = yield* runDenied(cli, agentDir, [...command, "--dir", agentDir])
        assert.strictEqual(result.code, 1, `${command.join(" ")}: ${result.stdout}${result.stderr}`)
        assert.include(result.stderr, `Cannot access ${path.join(agentDir, "intercom")} (EACCES)`)
        assert.include(result.stderr, "pass an agent dir of your own with --dir")
        assert.notInclude(result.stdout, "not running")
      }
      assert.isUndefined(broker.outcome(), "the broker is still running")
    }))

  it.live("a --dir below a directory this user may not enter: list, send and watch say so in one line, exit 1", () =>
    Effect.gen(function*() {
      const { agentDir: blocked, cli } = yield* varTmpAgent
      const agentDir = path.join(blocked, "nope")
      const expected =
        `Cannot use the agent dir ${agentDir}: this user may not enter ${blocked}, above it (EACCES). Run the command as a user who may, or pass an agent dir of your own with --dir.\n`
      for (const command of [["list"], ["send", "planner", "hi"], ["watch", "--no-stdin"]]) {
        const result = yield* runDenied(cli, blocked, [...command, "--dir", agentDir])
        const what = command.join(" ")
        assert.strictEqual(result.code, 1, `${what}: ${result.stderr}`)
        assert.strictEqual(result.stderr, expected, what)
        assert.strictEqual(result.stdout, "", what)
      }
    }))

  it.live("an agent dir this user may enter but not write: list and watch say which dir to fix or to use another", () =>
    Effect.gen(function*() {
      const { agentDir, cli } = yield* varTmpAgent
      if (isRoot) fs.chmodSync(agentDir, 0o755) // nobody may enter, not write
      const list = yield* runDenied(cli, agentDir, ["list", "--dir", agentDir], 0o555)
      assert.strictEqual(list.code, 1, list.stderr)
      assert.include(list.stderr, `Intercom not connected: broker failed to start: cannot create ${path.join(agentDir, "intercom")} (EACCES`)
      assert.include(list.stderr, `check that this user may write to ${agentDir}, or use an agent dir of your own`)
      const watch = yield* runDenied(cli, agentDir, ["watch", "--no-stdin", "--dir", agentDir], 0o555)
      assert.strictEqual(watch.code, 1, watch.stderr)
      assert.include(watch.stderr, "Cannot listen on the watch control socket")
      assert.include(watch.stderr, "Check that this user may write to the intercom dir above it")
    }))
})

describe("a file where the intercom dir must be", () => {
  it.live("list and broker exit 1 saying to move the file, not that another user could listen or that it is not writable", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const agentDir = path.join(root, "a")
      fs.mkdirSync(agentDir)
      fs.writeFileSync(path.join(agentDir, "intercom"), "x")
      const env = cleanEnv(root)

      const list = yield* runCli(["list", "--dir", agentDir], env)
      assert.strictEqual(list.code, 1, list.stderr)
      assert.include(list.stderr, `Cannot use the intercom directory ${path.join(agentDir, "intercom")}: it is not a directory. Move that file out of the way`)
      assert.notInclude(list.stderr, "another user could be listening")

      const broker = yield* runCli(["broker", "--dir", agentDir], env)
      assert.strictEqual(broker.code, 1, broker.stderr)
      assert.include(broker.stderr, "it is not a directory. Move that file out of the way, or pass another agent dir with --dir.")
      assert.notInclude(broker.stderr, "writable")
    }))
})
