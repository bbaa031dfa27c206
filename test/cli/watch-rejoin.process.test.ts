/**
 * `intercom watch` across a broker restart: the broker is killed, the
 * watches' clients start a new one and register again one by one, and the
 * new broker tells the watch that registered first that the other joined.
 * That watch had seen no `[left]`, so it says `[rejoined]`, not a second
 * `[joined]`. A real leave and return (the watch ended, then run again, the
 * broker up throughout) is `[left]` then `[joined]`, not `[rejoined]`. Real
 * processes: watches of the built CLI and the broker they spawn.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { readPidFile } from "../support/process.ts"
import { makeAgent, startWatch } from "../cli-client/support.ts"

/** Two watches, a broker killed and one spawned again; the machine may be shared. */
const TIMEOUT = 90_000

const count = (text: string, pattern: RegExp): number => text.match(pattern)?.length ?? 0

describe("intercom watch: a session that goes and comes back", () => {
  it.live("the session that registers again is shown as [rejoined], and no watch shows a second [joined]", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const alice = yield* startWatch(agent, "alice")
      const bob = yield* startWatch(agent, "bob")
      yield* alice.waitStdout(/^\[joined\] bob \(/m)
      const first = readPidFile(agent.pidFile)
      assert.isDefined(first)
      process.kill(first ?? 0, "SIGKILL")
      // Whichever watch registers again first is told of the other.
      yield* Effect.raceFirst(alice.waitStdout(/^\[rejoined\] bob \(/m), bob.waitStdout(/^\[rejoined\] alice \(/m))
      assert.strictEqual(count(alice.stdout(), /^\[joined\] bob \(/gm), 1, alice.stdout())
      assert.strictEqual(count(bob.stdout(), /^\[joined\] alice \(/gm), 0, bob.stdout())
    }), TIMEOUT)
  it.live("a watch that ends and runs again (the broker up throughout) is shown as [left], then [joined], not [rejoined]", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const alice = yield* startWatch(agent, "alice")
      const bob = yield* startWatch(agent, "bob")
      yield* alice.waitStdout(/^\[joined\] bob \(/m)
      const broker = readPidFile(agent.pidFile)
      // End of stdin ends bob's watch: its session leaves.
      yield* bob.endStdin
      assert.deepStrictEqual(yield* bob.waitExit(), { code: 0, signal: null }, bob.stderr())
      yield* alice.waitStdout(/^\[left\] bob\b/m)
      yield* startWatch(agent, "bob")
      yield* alice.waitStdout(/^\[left\] bob\b[^\n]*\n[\s\S]*^\[joined\] bob \(/m)
      assert.strictEqual(count(alice.stdout(), /^\[joined\] bob \(/gm), 2, alice.stdout())
      assert.strictEqual(count(alice.stdout(), /^\[rejoined\] /gm), 0, alice.stdout())
      assert.strictEqual(readPidFile(agent.pidFile), broker, "the same broker throughout")
    }), TIMEOUT)
})
