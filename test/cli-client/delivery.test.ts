/**
 * `intercom send --delivery … --queue-mode … --thread …` (C-DLV-1…6) as real
 * processes: the watch shows a sender's passive or queued delivery, a replace
 * send is staged (`Message queued for <to> (...)`) and then shown, and bad combinations exit 2 naming the problem, sending nothing.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { makeAgent, runCli, startWatch } from "./support.ts"

const TIMEOUT = 60_000

describe("intercom send delivery flags", () => {
  // Coalescing itself is the broker's (test/broker/delivery-modes.test.ts): two CLI processes may
  // start more than a window apart, so here each replace send is only checked to be staged and shown.
  it.live("--delivery passive and a replace send reach the watch marked as such; the replace send is staged", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const watch = yield* startWatch(agent, "planner")
      const passive = yield* runCli(agent, ["send", "--delivery", "passive", "planner", "fyi only"])
      assert.strictEqual(passive.code, 0, passive.stderr)
      assert.strictEqual(passive.stdout.trim(), "Message sent to planner")
      yield* watch.waitStdout(/\[message, passive\] cli-tester \([0-9a-f]{8}\) · \S+\n\s+fyi only/)

      const args = ["send", "--delivery", "queue", "--queue-mode", "replace", "--thread", "build"]
      const first = yield* runCli(agent, [...args, "planner", "build 10%"])
      assert.strictEqual(first.code, 0, first.stderr)
      assert.match(first.stdout.trim(), /^Message queued for planner \(replace mode, thread "build": .+\)$/)
      yield* watch.waitStdout(/\[message, queued\] cli-tester \([0-9a-f]{8}\) · \S+\n\s+build 10%/)
    }), TIMEOUT)

  it.live("bad combinations exit 2 with the reason, and nothing reaches the target", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const watch = yield* startWatch(agent, "planner")
      const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
        [["send", "--queue-mode", "replace", "planner", "x"], `queueMode is only valid with delivery: "queue"`],
        [["send", "--delivery", "queue", "--queue-mode", "replace", "planner", "x"], "needs a threadId"],
        [["send", "--thread", "t", "planner", "x"], "threadId is only valid"],
        [["ask", "--delivery", "passive", "planner", "x"], "An ask is never passive"]
      ]
      for (const [args, reason] of cases) {
        const outcome = yield* runCli(agent, args)
        assert.strictEqual(outcome.code, 2, `${args.join(" ")}: ${outcome.stderr}`)
        assert.include(outcome.stderr, reason)
      }
      const unknown = yield* runCli(agent, ["send", "--delivery", "loud", "planner", "x"])
      assert.strictEqual(unknown.code, 2)
      yield* runCli(agent, ["send", "planner", "marker"])
      yield* watch.waitStdout(/marker/)
      assert.notMatch(watch.stdout(), /\n\s+x\n/)
    }), TIMEOUT)
})
