/**
 * `intercom top` and `intercom ui` where stdout is not a terminal that takes
 * everything: stdout a full disk (`> /dev/full`, ENOSPC) is exit 1 with why
 * on stderr; a pipe whose reader has gone (EPIPE, `| head -1` done) a quiet
 * exit 0, but for `ui` only before its URL was written: its URL is its only
 * stdout line, so a reader that took it and left does not end it. `top`'s
 * live view with stdout a pipe, or with stdin not a terminal while stdout is
 * one (a pty from util-linux `script`, skipped without it), is a usage error
 * naming `--once` and writes no escape sequence. Real processes of the built
 * CLI.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as childProcess from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { spawnChild } from "../support/process.ts"
import { cleanEnv, main, spawnCli, startBroker, tempDir } from "./support.ts"

/** util-linux `script`, which runs a command on a pty; the test that needs one skips without it. */
const SCRIPT = "/usr/bin/script"
const hasPty = fs.existsSync(SCRIPT) && childProcess.spawnSync(SCRIPT, ["-qec", "true", "/dev/null"], { stdio: "ignore" }).status === 0

/** `word` quoted for a POSIX shell. */
const shellQuote = (word: string): string => `'${word.replaceAll("'", `'\\''`)}'`

/** Each test runs a broker and a CLI process; the machine may be shared. */
const TIMEOUT = 60_000

const CANNOT_WRITE = "Cannot write the result to stdout (ENOSPC"

/** `intercom ...args > /dev/full`, through `sh` (`exec`: the shell becomes the command). */
const spawnToFull = (args: ReadonlyArray<string>, env: Readonly<Record<string, string>>) =>
  spawnChild("/bin/sh", ["-c", `exec "$0" "$@" > /dev/full`, process.execPath, main(), ...args], { env })

/**
 * `intercom ...args` whose stdout pipe has no reader: the read end is closed
 * right after the spawn, before the child has loaded, so its first write
 * meets EPIPE.
 */
const spawnWithoutReader = (args: ReadonlyArray<string>, env: Readonly<Record<string, string>>) =>
  Effect.tap(spawnCli(args, env), (cli) => Effect.sync(() => cli.child.stdout?.destroy()))

/** A temp root with a running memory broker in `<root>/agent`. */
const withBroker = Effect.gen(function*() {
  const root = yield* tempDir()
  const agentDir = path.join(root, "agent")
  const env = cleanEnv(root)
  yield* startBroker(["--dir", agentDir, "--idle-exit", "never", "--durability", "memory"], env)
  return { agentDir, env }
})

describe("intercom top and ui: stdout that does not take the output", () => {
  it.live("top --once > /dev/full exits 1 and says on stderr that stdout did not take it", () =>
    Effect.gen(function*() {
      const { agentDir, env } = yield* withBroker
      for (const args of [["top", "--once", "--dir", agentDir], ["top", "--once", "--json", "--dir", agentDir]]) {
        const top = yield* spawnToFull(args, env)
        assert.deepStrictEqual(yield* top.waitExit(), { code: 1, signal: null }, `${args.join(" ")}: ${top.stderr()}`)
        assert.include(top.stderr(), CANNOT_WRITE, args.join(" "))
      }
    }), TIMEOUT)

  it.live("top --once into a pipe whose reader has gone exits 0 with nothing on stderr", () =>
    Effect.gen(function*() {
      const { agentDir, env } = yield* withBroker
      const top = yield* spawnWithoutReader(["top", "--once", "--dir", agentDir], env)
      assert.deepStrictEqual(yield* top.waitExit(), { code: 0, signal: null }, top.stderr())
      assert.strictEqual(top.stderr(), "")
    }), TIMEOUT)

  it.live("ui > /dev/full exits 1 and says on stderr that stdout did not take its URL", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const ui = yield* spawnToFull(["ui", "--dir", path.join(root, "agent")], cleanEnv(root))
      assert.deepStrictEqual(yield* ui.waitExit(), { code: 1, signal: null }, ui.stderr())
      assert.include(ui.stderr(), CANNOT_WRITE)
    }), TIMEOUT)

  it.live("ui into a pipe whose reader has gone exits 0 with nothing on stderr", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const ui = yield* spawnWithoutReader(["ui", "--dir", path.join(root, "agent")], cleanEnv(root))
      assert.deepStrictEqual(yield* ui.waitExit(), { code: 0, signal: null }, ui.stderr())
      assert.strictEqual(ui.stderr(), "")
    }), TIMEOUT)

  it.live("ui | head -1: the URL is its only stdout line; with that reader gone it keeps serving the URL, and SIGINT ends it with exit 0", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const ui = yield* spawnCli(["ui", "--dir", path.join(root, "agent")], cleanEnv(root))
      const [, url = ""] = yield* ui.waitStdout(/^intercom ui: (http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]{43})\n/)
      // The note is its last output: written after the URL line, on stderr.
      yield* ui.waitStderr(/^Watching the broker on .*Ctrl-C stops\.\n$/)
      assert.strictEqual(ui.stdout(), `intercom ui: ${url}\n`)
      // What `head -1` does once it has the line: its end of the pipe closes.
      yield* Effect.sync(() => ui.child.stdout?.destroy())
      const response = yield* Effect.promise(() => fetch(url))
      assert.strictEqual(response.status, 200)
      yield* Effect.promise(() => response.arrayBuffer())
      assert.isUndefined(ui.outcome(), "ui is still running")
      yield* ui.kill("SIGINT")
      assert.deepStrictEqual(yield* ui.waitExit(), { code: 0, signal: null }, ui.stderr())
    }), TIMEOUT)
})

describe("intercom top without a terminal", () => {
  it.live("stdout a pipe: a usage error naming --once (exit 2), and no escape sequence on stdout", () =>
    Effect.gen(function*() {
      const { agentDir, env } = yield* withBroker
      const top = yield* spawnCli(["top", "--dir", agentDir], env)
      assert.deepStrictEqual(yield* top.waitExit(), { code: 2, signal: null }, top.stderr())
      assert.strictEqual(top.stdout(), "")
      assert.include(top.stderr(), "intercom top's live view needs a terminal, and stdout is not one")
      assert.include(top.stderr(), "intercom top --once")
    }), TIMEOUT)

  it.live.skipIf(!hasPty)("stdin not a terminal while stdout is one (script's pty): a usage error naming stdin (exit 2), no alternate screen", () =>
    Effect.gen(function*() {
      const { agentDir, env } = yield* withBroker
      const command = [process.execPath, main(), "top", "--dir", agentDir].map(shellQuote).join(" ")
      // script runs the command on a pty (stdout and stderr), its stdin redirected from /dev/null.
      const top = yield* spawnChild(SCRIPT, ["-qec", `${command} < /dev/null`, "/dev/null"], { env })
      assert.deepStrictEqual(yield* top.waitExit(), { code: 2, signal: null }, top.stdout())
      assert.include(top.stdout(), "intercom top's live view needs a terminal, and stdin is not one")
      assert.notInclude(top.stdout(), "\u001b[?1049h")
    }), TIMEOUT)
})
