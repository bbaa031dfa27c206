/**
 * How `intercom watch` ends when its terminal or its reader goes away, as real
 * processes: stdout closed under it (`intercom watch | head -1`) and SIGHUP
 * (the terminal closed). Each leaves cleanly: exit 0, no stack trace, the
 * session unregistered, the control socket removed; a message whose line
 * stdout could not take comes again to the next watch of the name.
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
  it.live("stdout closed under it (watch | head -1): the next message ends it quietly (exit 0), and comes again to the next watch", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const watch = yield* startWatch(agent, "w2", ["--no-stdin"])
      watch.child.stdout?.destroy() // the reader went away, as `head -1` does after its line

      // Delivered to the watch (it is connected), whose write of it fails with EPIPE.
      const send = yield* runCli(agent, ["send", "--name", "x", "w2", "first"])
      assert.strictEqual(send.code, 0, send.stderr)
      assert.deepStrictEqual(yield* watch.waitExit(), { code: 0, signal: null }, watch.stderr())
      assert.strictEqual(watch.stderr(), "", "no stack trace, no error")
      assert.deepStrictEqual(controlSockets(agent.intercomDir), [], "control socket removed")

      // The message it could not show was not confirmed: the next watch of the name gets it.
      const next = yield* startWatch(agent, "w2", ["--no-stdin"])
      yield* next.waitStdout(/\[message\] x \([0-9a-f]{8}\) · \S+\n {2}first\n/)
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
