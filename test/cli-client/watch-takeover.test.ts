/**
 * `intercom watch` taken over (`taken_over`, `takeover-v1`): another process
 * registers the watch's session id. The watch receives nothing from then on,
 * so it says so in one line — the other process's pid and how to take the
 * session back — and exits 1, instead of staying up silent.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { watchSessionId } from "../../src/cli/client/identity.ts"
import { register } from "../support/broker.ts"
import { connect } from "../support/wire.ts"
import { makeAgent, startWatch } from "./support.ts"

describe("intercom watch taken over", () => {
  it.live("prints who took it over and how to take it back, and exits 1", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const watch = yield* startWatch(agent, "planner")
      const other = yield* connect(agent.socketPath, "other")
      yield* register(other, { sessionId: watchSessionId("planner", undefined), session: { pid: 4242 } })
      const outcome = yield* watch.waitExit("30 seconds")
      // Read once the child closed: both pipes are drained.
      const stderr = watch.stderr()
      assert.strictEqual(outcome.code, 1, stderr)
      const lines = stderr.trim().split("\n")
      assert.strictEqual(lines.length, 1, stderr)
      assert.match(lines[0] ?? "", /^intercom watch stopped: this session was taken over by another process \(pid 4242\)/)
      assert.include(lines[0], `Run "intercom watch --name planner" again to take it back.`)
    }), 60_000)
})
