/**
 * How `intercom watch` ends when its terminal or its reader goes away, as real
 * processes: stdout closed under it (`intercom watch | head -1`) and SIGHUP
 * (the terminal closed). Each leaves cleanly: exit 0, no stack trace, the
 * session unregistered, the control socket removed. The closed stdout is met
 * by a presence line, or by a message's line: that message was not shown,
 * and comes again to the next watch of the name.
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

  it.live("stdout closed under it after its first message: the next message's line ends it quietly (exit 0), the session gone, and that message comes to the next watch of the name", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      // The peer is a watch already registered, and sends through it (its control socket): no line of a
      // session joining reaches w2, so the line that meets w2's closed stdout is a message's.
      yield* startWatch(agent, "p", ["--no-stdin"])
      const before = controlSockets(agent.intercomDir)
      const watch = yield* startWatch(agent, "w2", ["--no-stdin"])
      const ownSocket = controlSockets(agent.intercomDir).filter((file) => !before.includes(file))
      assert.strictEqual(ownSocket.length, 1, "w2's control socket")
      const send = (text: string) =>
        Effect.gen(function*() {
          const sent = yield* runCli(agent, ["send", "--name", "p", "w2", text])
          assert.strictEqual(sent.code, 0, sent.stderr)
        })
      yield* send("first")
      yield* watch.waitStdout(/^\[message\] p \([^)]+\) · \S+\n {2}first\n/m)
      watch.child.stdout?.destroy() // the reader took its line and went away, as `head -1` does
      yield* send("second")
      // Bounded by the child's exit: before the fix the watch never ended here (CHILD_WAIT timed out).
      assert.deepStrictEqual(yield* watch.waitExit(), { code: 0, signal: null }, watch.stderr())
      assert.strictEqual(watch.stderr(), "", "no error, no warning about an abandoned message")
      const left = controlSockets(agent.intercomDir)
      assert.isFalse(left.includes(ownSocket[0] ?? ""), "w2's control socket removed")
      const listed = yield* runCli(agent, ["list"])
      assert.notInclude(listed.stdout, "w2", "the watch unregistered")
      // The message whose line stdout did not take was not confirmed (nor logged as shown): the next watch
      // of the name gets it. The first one, shown, is not shown again (it would come before "second").
      const next = yield* startWatch(agent, "w2", ["--no-stdin"])
      yield* next.waitStdout(/^\[message\] p \([^)]+\) · \S+\n {2}second\n/m)
      assert.notMatch(next.stdout(), /\n {2}first\n/, "the message shown before is not shown again")
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
