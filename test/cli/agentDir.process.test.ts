/**
 * A client command's agent dir checked before anything reads config or
 * spawns a broker (src/cli/paths.ts `checkAgentDir`): a file where
 * `<agentDir>/intercom` must be is one line on stderr saying which path and
 * what to do, exit 1, no config error and no stack trace; `broker status`
 * says the same instead of a permission error; a `--dir` that names no
 * directory is exit 2 and starts no broker there. Real processes of the
 * built CLI, each agent dir private to the test.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { runChild } from "../support/process.ts"
import { cleanEnv, main, runCli, tempDir } from "./support.ts"

/** Several CLI processes per test; the machine may be shared. */
const TIMEOUT = 60_000

/**
 * Runs each of `commands` with `--dir dir`: each must exit `code` with exactly `stderr` (one line) and
 * nothing on stdout; `then` checks more after each.
 */
const saysOnly = (
  root: string,
  commands: ReadonlyArray<ReadonlyArray<string>>,
  dir: string,
  expected: { readonly code: number; readonly stderr: string },
  then: (what: string) => void = () => {}
) =>
  Effect.gen(function*() {
    for (const args of commands) {
      const result = yield* runCli([...args, "--dir", dir], cleanEnv(root))
      const what = args.join(" ")
      assert.strictEqual(result.code, expected.code, `${what}: ${result.stderr}`)
      assert.strictEqual(result.stderr, expected.stderr, what)
      assert.strictEqual(result.stdout, "", what)
      then(what)
    }
  })

/** An agent dir under `root` whose `intercom` is a file, and the line every command says of it. */
const intercomIsAFile = (root: string) => {
  const agentDir = path.join(root, "agent")
  const intercomDir = path.join(agentDir, "intercom")
  fs.mkdirSync(agentDir)
  fs.writeFileSync(intercomDir, "")
  const stderr =
    `Cannot use the intercom directory ${intercomDir}: it is not a directory. Move that file out of the way, or pass another agent dir with --dir.\n`
  return { agentDir, stderr }
}

/** A file `afile` under `root`, and the line a command given it as `--dir` says. */
const dirIsAFile = (root: string) => {
  const file = path.join(root, "afile")
  fs.writeFileSync(file, "")
  const stderr = `--dir ${file} is a file, not a directory (${file}). Pass the agent directory, or omit --dir for the default agent dir.\n`
  return { file, stderr }
}

describe("a file where the intercom dir must be", () => {
  it.live("list, send, watch and broker status say which path and what to do, exit 1, one line, no stack", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const { agentDir, stderr } = intercomIsAFile(root)
      const commands = [["list"], ["send", "planner", "hi"], ["watch", "--no-stdin"], ["broker", "status"]]
      yield* saysOnly(root, commands, agentDir, { code: 1, stderr })
    }), TIMEOUT)

  it.live("a file above the intercom dir (the agent dir from the environment) is named as such", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const file = path.join(root, "agent")
      fs.writeFileSync(file, "")
      const intercomDir = path.join(file, "sub", "intercom")
      const result = yield* runCli(["list"], cleanEnv(root, { PI_CODING_AGENT_DIR: path.join(file, "sub") }))
      assert.strictEqual(result.code, 1, result.stderr)
      assert.strictEqual(
        result.stderr,
        `Cannot use the intercom directory ${intercomDir}: ${file}, a file above it, is in the way. Move that file out of the way, or pass another agent dir with --dir.\n`
      )
    }), TIMEOUT)

  it.live("a file above a --dir (not the --dir itself) is named as a file above it, exit 1", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const file = path.join(root, "afile")
      fs.writeFileSync(file, "")
      const result = yield* runCli(["list", "--dir", path.join(file, "sub")], cleanEnv(root))
      assert.strictEqual(result.code, 1, result.stderr)
      assert.strictEqual(
        result.stderr,
        `Cannot use the intercom directory ${path.join(file, "sub", "intercom")}: ${file}, a file above it, is in the way. Move that file out of the way, or pass another agent dir with --dir.\n`
      )
    }), TIMEOUT)
})

describe("a --dir that names no directory", () => {
  it.live("list, send and watch say so and exit 2, and start no broker there (the dir is not created)", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const typo = path.join(root, "agnet")
      const stderr = `No such directory: ${typo} (--dir). Create it, or omit --dir for the default agent dir.\n`
      yield* saysOnly(
        root,
        [["list"], ["send", "planner", "hi"], ["watch", "--no-stdin"]],
        typo,
        { code: 2, stderr },
        (what) => assert.isFalse(fs.existsSync(typo), `${what} created ${typo}`)
      )
    }), TIMEOUT)
  it.live("a --dir that is a file: list, send and watch say so (not \"a directory above it\") and exit 2", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const { file, stderr } = dirIsAFile(root)
      yield* saysOnly(root, [["list"], ["send", "planner", "hi"], ["watch", "--no-stdin"]], file, { code: 2, stderr })
    }), TIMEOUT)

  it.live("a --dir starting with ~ (not expanded by the shell in --dir=~/x) says so and names the home path, not \"Create it\"", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const cwd = path.join(root, "work")
      fs.mkdirSync(cwd)
      for (const args of [["list", "--dir=~/agent"], ["list", "--dir", "~/agent"]]) {
        const result = yield* runChild(process.execPath, [main(), ...args], { env: cleanEnv(root), cwd })
        const what = args.join(" ")
        assert.strictEqual(result.code, 2, `${what}: ${result.stderr}`)
        assert.strictEqual(
          result.stderr,
          `No such directory: ${path.join(cwd, "~", "agent")} (--dir). The value "~/agent" starts with "~", which is not expanded here; if you meant your home directory, write the path out (${root}/agent).\n`,
          what
        )
        assert.isFalse(fs.existsSync(path.join(cwd, "~")), `${what} created ${cwd}/~`)
      }
    }), TIMEOUT)
})

describe("top, ui and broker check the agent dir as the client commands do", () => {
  it.live("a file where the intercom dir must be: top --once and ui say which path and what to do, exit 1, not \"No broker answers\"", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const { agentDir, stderr } = intercomIsAFile(root)
      yield* saysOnly(root, [["top", "--once"], ["ui"]], agentDir, { code: 1, stderr })
    }), TIMEOUT)

  it.live("a --dir that is a file: top --once, ui and broker say so as list does, exit 2, nothing on stdout", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const { file, stderr } = dirIsAFile(root)
      yield* saysOnly(root, [["top", "--once"], ["ui"], ["broker"]], file, { code: 2, stderr })
    }), TIMEOUT)

  it.live("broker: a file above its --dir is named as a file above the intercom dir, exit 1, in the client commands' words", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const file = path.join(root, "afile")
      fs.writeFileSync(file, "")
      const result = yield* runCli(["broker", "--dir", path.join(file, "sub")], cleanEnv(root))
      assert.strictEqual(result.code, 1, result.stderr)
      assert.strictEqual(
        result.stderr,
        `Cannot use the intercom directory ${path.join(file, "sub", "intercom")}: ${file}, a file above it, is in the way. Move that file out of the way, or pass another agent dir with --dir.\n`
      )
      assert.strictEqual(result.stdout, "")
    }), TIMEOUT)
})
