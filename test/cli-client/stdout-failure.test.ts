/**
 * A short-lived command whose stdout does not take its result (`> /dev/full`:
 * ENOSPC) exits 1 and says so on stderr, rather than exit 0 with the result
 * lost; for an answered `ask`, stderr says the answer is lost. Real processes,
 * stdout redirected by a shell.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawnChild } from "../support/process.ts"
import { type Agent, BIN, makeAgent, startWatch } from "./support.ts"

/** Each test runs several CLI processes; the machine may be shared. */
const TIMEOUT = 60_000

/** `intercom ...args > /dev/full`, through `sh` (`exec`: the shell becomes the command). */
const spawnToFull = (agent: Agent, args: ReadonlyArray<string>) =>
  spawnChild("/bin/sh", ["-c", `exec "$0" "$@" > /dev/full`, process.execPath, BIN, ...args], {
    env: agent.env,
    cwd: agent.root
  })

const CANNOT_WRITE = "Cannot write the result to stdout (ENOSPC"

describe("stdout does not take the result", () => {
  it.live("list, send --json and broker status exit 1 and say why on stderr", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      yield* startWatch(agent, "planner")
      for (const args of [["list"], ["send", "--json", "planner", "hi"], ["broker", "status"]]) {
        const command = yield* spawnToFull(agent, args)
        assert.deepStrictEqual(yield* command.waitExit(), { code: 1, signal: null }, `${args.join(" ")}: ${command.stderr()}`)
        assert.include(command.stderr(), CANNOT_WRITE, args.join(" "))
      }
    }), TIMEOUT)

  it.live("an answered ask exits 1 and says on stderr that the answer is lost", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const watch = yield* startWatch(agent, "planner")
      const asker = yield* spawnToFull(agent, ["ask", "planner", "Safe?"])
      yield* watch.waitStdout(/\[ask\] cli-tester \([0-9a-f]{8}\) · \S+\n {2}Safe\?\n/)
      yield* watch.writeLine("Yes.")
      assert.deepStrictEqual(yield* asker.waitExit(), { code: 1, signal: null }, asker.stderr())
      assert.include(asker.stderr(), CANNOT_WRITE)
      assert.include(asker.stderr(), "The answer from planner was received but could not be kept: it is lost")
    }), TIMEOUT)
})
