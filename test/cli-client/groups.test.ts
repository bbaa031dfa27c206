/**
 * Groups from the command line (C-GRP-2/5/6, C-TOOL-9/11) as real
 * processes: `--group` puts the session of a command that sends (or a watch)
 * in a group, `list --group` / `status --group` look at another group
 * read-only, and the environment's ATOMIC_INTERCOM_GROUP is the home group
 * when no `--group` is given.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { get, jsonOf, makeAgent, runCli, startWatch } from "./support.ts"

/** Each test runs several CLI processes; the machine may be shared. */
const TIMEOUT = 60_000

describe("intercom --group", () => {
  it.live("a watch in group blue: hidden from default, peeked read-only, reached only from blue", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const watch = yield* startWatch(agent, "blue-w", ["--group", "blue"])

      const own = yield* runCli(agent, ["list", "--name", "lister"])
      assert.strictEqual(own.code, 0, own.stderr)
      assert.include(own.stdout, "**Other sessions:**\nNo other sessions connected.")
      assert.notInclude(own.stdout, "blue-w")

      const peek = yield* runCli(agent, ["list", "--name", "lister", "--group", "blue"])
      assert.strictEqual(peek.code, 0, peek.stderr)
      assert.match(
        peek.stdout,
        /^\*\*Group "blue" \(read-only view\):\*\*\nYou cannot send to or ask these sessions: send and ask stay in your own group "default"\.\n\n• blue-w \(\S+\) — .* \(intercom-cli\) \[same cwd, idle, group: blue\]\n$/
      )
      const peekJson = jsonOf(yield* runCli(agent, ["list", "--json", "--group", "blue"]))
      assert.strictEqual(get(peekJson, "details", "readOnly"), true)

      const status = yield* runCli(agent, ["status", "--group", "blue"])
      assert.strictEqual(status.code, 0, status.stderr)
      assert.match(
        status.stdout,
        /\nGroup: default\nActive sessions: 1\nGroup "blue" \(read-only view, no send rights\): 1 active session\n\n\*\*Current session:\*\*\n/
      )

      // From the default group the watch is not found; from blue it is.
      const outside = yield* runCli(agent, ["send", "blue-w", "hello?"])
      assert.strictEqual(outside.code, 1)
      const inside = yield* runCli(agent, ["send", "--group", "blue", "blue-w", "hello", "blue"])
      assert.strictEqual(inside.code, 0, inside.stderr)
      assert.strictEqual(inside.stdout, "Message sent to blue-w\n")
      yield* watch.waitStdout(/\n {2}hello blue\n/)

      // The environment is the home group when there is no --group (C-GRP-2).
      const env = yield* runCli(agent, ["list", "--name", "env-lister"], { env: { ATOMIC_INTERCOM_GROUP: " blue " } })
      assert.strictEqual(env.code, 0, env.stderr)
      assert.match(env.stdout, /• env-lister \([0-9a-f]{8}\) — .* \[self, idle, group: blue, state:idle, /)
      assert.match(env.stdout, /• blue-w \(\S+\) — .* \[same cwd, idle, group: blue, state:idle, /)

      // A command handed to the watch carries its --group, and the watch's session refuses another group.
      const locked = yield* runCli(agent, ["send", "--name", "blue-w", "--group", "red", "env-lister", "hi"])
      assert.strictEqual(locked.code, 1)
      assert.include(locked.stderr, `The 'group' parameter is read-only: send is locked to this session's own group "blue"`)
    }), TIMEOUT)

  it.live("an empty --group is a usage error", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const listed = yield* runCli(agent, ["list", "--group", " "])
      assert.strictEqual(listed.code, 2)
      const sent = yield* runCli(agent, ["send", "--group", "", "x", "hi"])
      assert.strictEqual(sent.code, 2)
    }), TIMEOUT)
})
