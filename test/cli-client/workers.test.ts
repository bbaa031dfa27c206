/**
 * Supervised-worker commands from the command line (C-WKR-2): `peek`,
 * `steer`, and the worker forms of `stop` and `result`, and how `stop` and
 * `result` tell a run handle from a question id or an archived report's
 * address (docs/cli.md, "Supervised workers").
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { resultTarget, stopTarget } from "../../src/cli/client/workerArgs.ts"
import { makeAgent, runCli } from "./support.ts"

const TIMEOUT = 60_000

describe("worker arguments", () => {
  it("result: result:<UUID> is an archived report, anything else a run handle", () => {
    assert.deepStrictEqual(resultTarget("result:0b7c2a4e-6f1d-4c3b-9a8e-2d5f7e1c3b9a"), { ref: "result:0b7c2a4e-6f1d-4c3b-9a8e-2d5f7e1c3b9a" })
    assert.deepStrictEqual(resultTarget("run-3"), { run: "run-3" })
  })

  it("stop: with --session a durable question, without it a run handle", () => {
    assert.deepStrictEqual(stopTarget("q-1", Option.some(" sup-1 ")), { owner: "sup-1", questionId: "q-1" })
    assert.deepStrictEqual(stopTarget("run-3", Option.none()), { run: "run-3" })
  })
})

describe("intercom peek / steer / stop / result with a run handle", () => {
  it.live("reach the worker actions of the session (a CLI session supervises none), and keep the archive form of result", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      for (const args of [["peek", "run-3"], ["steer", "run-3", "skip", "it"], ["stop", "run-3"], ["result", "run-3"]]) {
        const done = yield* runCli(agent, args)
        assert.strictEqual(done.code, 1, `${args.join(" ")}: ${done.stdout}`)
        assert.include(done.stderr, "This session supervises no workers", args.join(" "))
      }
      const bus = yield* runCli(agent, ["peek", "operator#3"])
      assert.strictEqual(bus.code, 1)
      assert.include(bus.stderr, "operator#3 is a bus handle (from list)")
      const archived = yield* runCli(agent, ["result", "result:0b7c2a4e-6f1d-4c3b-9a8e-2d5f7e1c3b9a"])
      assert.strictEqual(archived.code, 1)
      assert.notInclude(archived.stderr, "supervises no workers")
    }), TIMEOUT)
})
