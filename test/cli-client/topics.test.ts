/**
 * Topics from the command line (`topics-v1`) as real processes: a watch
 * subscribes through `intercom subscribe --name`, a one-shot `publish` is
 * confirmed with the broker's counts, a blocker is printed by the watch, and
 * `topics` shows the record as unavailable once its publisher's session left.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { makeAgent, runCli, startWatch } from "./support.ts"

/** Each test runs several CLI processes; the machine may be shared. */
const TIMEOUT = 60_000

describe("intercom publish / subscribe / topics", () => {
  it.live("a watch subscribes; publish reports the counts; a blocker is printed by the watch; topics lists the record", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const watch = yield* startWatch(agent, "watcher")

      const subscribed = yield* runCli(agent, ["subscribe", "--name", "watcher", "repo/build"])
      assert.strictEqual(subscribed.code, 0, subscribed.stderr)
      assert.strictEqual(subscribed.stdout, "Subscribed to repo/build. Current state:\nNo current records.\n")

      const quiet = yield* runCli(agent, ["publish", "--name", "builder", "repo/build", "compiling"])
      assert.strictEqual(quiet.code, 0, quiet.stderr)
      assert.strictEqual(
        quiet.stdout,
        "Current state saved for repo/build. 1/1 subscribed deliveries accepted. Accepted means written to the subscriber's connection, not that it was read.\n"
      )
      const blocker = yield* runCli(agent, ["publish", "--name", "builder", "--event", "blocker", "repo/build", "build", "broken"])
      assert.strictEqual(blocker.code, 0, blocker.stderr)
      yield* watch.waitStdout(/\n {2}build broken\n/)
      assert.notInclude(watch.stdout(), "compiling")

      const listed = yield* runCli(agent, ["topics", "--name", "lister"])
      assert.strictEqual(listed.code, 0, listed.stderr)
      assert.match(listed.stdout, /- repo\/build — builder, revision 1, blocker \(publisher disconnected \/ unavailable; not released\): build broken\n/)

      const invalid = yield* runCli(agent, ["publish", "--ownership", "held", "repo/build", "x"])
      assert.strictEqual(invalid.code, 1)
      assert.include(invalid.stderr, "ownership needs a resource")
    }), TIMEOUT)
})
