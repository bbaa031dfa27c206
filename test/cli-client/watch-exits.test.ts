/**
 * How `intercom watch` ends when its terminal or its reader goes away, as real
 * processes: stdout closed under it (`intercom watch | head -1`) and SIGHUP
 * (the terminal closed). Each leaves cleanly: exit 0, no stack trace, the
 * session unregistered, the control socket removed. (A message line that
 * meets the closed stdout does not end the watch today — docs/cli.md,
 * "Leaving" — so the closed stdout is met here by a presence line.)
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { makeAgent, runCli, startWatch } from "./support.ts"

/** The watch control sockets left in the intercom dir (`<intercomDir>/cli/*.sock`). */
const controlSockets = (intercomDir: string): ReadonlyArray<string> => {
  const dir = path.join(intercomDir, "cli")
  return fs.existsSync(dir) ? fs.readdirSync(dir).filter((file) => file.endsWith(".sock")) : []
}

/** Each test runs several CLI processes; the machine may be shared. */
const TIMEOUT = 60_000

describe("intercom watch leaving", () => {
  it.live("stdout closed under it (watch | head -1): its next line, a session joining, ends it quietly (exit 0), the control socket removed", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const watch = yield* startWatch(agent, "w2", ["--no-stdin"])
      watch.child.stdout?.destroy() // the reader went away, as `head -1` does after its line
      // A one-shot session joins (and leaves): the watch's `[joined]` line meets the closed stdout.
      yield* runCli(agent, ["list", "--name", "y"])
      assert.deepStrictEqual(yield* watch.waitExit(), { code: 0, signal: null }, watch.stderr())
      assert.strictEqual(watch.stderr(), "", "no stack trace, no error")
      assert.deepStrictEqual(controlSockets(agent.intercomDir), [], "control socket removed")
      const listed = yield* runCli(agent, ["list"])
      assert.notInclude(listed.stdout, "w2", "the watch unregistered")
    }), TIMEOUT)

  it.live("SIGHUP (the terminal closed) leaves as SIGTERM does: exit 0, the control socket removed, the session gone", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const watch = yield* startWatch(agent, "planner", ["--no-stdin"])
      assert.strictEqual(controlSockets(agent.intercomDir).length, 1)
      yield* watch.kill("SIGHUP")
      assert.deepStrictEqual(yield* watch.waitExit(), { code: 0, signal: null }, watch.stderr())
      assert.deepStrictEqual(controlSockets(agent.intercomDir), [], "control socket removed")
      const listed = yield* runCli(agent, ["list"])
      assert.notInclude(listed.stdout, "planner", "the watch unregistered")
    }), TIMEOUT)
})
