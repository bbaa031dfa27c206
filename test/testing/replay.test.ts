/**
 * A failing seed's printed replay command (simArgs.ts) runs the same world
 * and judges it the same way: every flag that shaped the run and differs
 * from its default is in it, in every mode. The printed lines are parsed
 * back through `npm run sim`'s own command (simCommand.ts) and run
 * in-process. Also: the shrinker ends on a workload that fails (not one
 * whose only violations are tolerated), `--no-shrink` says it did not shrink,
 * and flags that would make a vacuous or misleading run are usage errors.
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import * as CliError from "effect/cli/CliError"
import * as Command from "effect/cli/Command"
import { EXIT_USAGE, exitCodeOf } from "../../src/cli/exit.ts"
import { cliErrorExitCode } from "../../src/cli/programExit.ts"
import { ignoreGroups } from "../../src/testing/BrokenBuilds.ts"
import { shrinkWorkload } from "../../src/testing/Shrink.ts"
import { replayArgv, replayCommand } from "../../src/testing/simArgs.ts"
import { simCommand, type SimRequest } from "../../src/testing/simCommand.ts"
import { soak } from "../../src/testing/Soak.ts"
import { generateWorkload, runWorkload } from "../../src/testing/Workload.ts"
import { formatBusFullSummary } from "../../src/testing/workflow/BusFullSoak.ts"
import { formatBusWorkflowSummary } from "../../src/testing/workflow/BusParentSoak.ts"
import { emptyTally } from "../../src/testing/workflow/WorkflowLedger.ts"
import { generateBusFullWorkload } from "../../src/testing/workflow/BusFullWorkload.ts"
import { generateBusWorkflowWorkload } from "../../src/testing/workflow/BusParentWorkload.ts"
import { formatWorkflowSummary, generateWorkflowWorkload, runWorkflowWorkload } from "../../src/testing/workflow/WorkflowWorkload.ts"

/** How `npm run sim -- <argv>` ends, and the request it made. */
const parse = (argv: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const requests: Array<SimRequest> = []
    const command = simCommand((request) => Effect.sync(() => requests.push(request)))
    const exit = yield* Effect.exit(Command.runWith(command, { version: "test" })(argv))
    return { request: requests[0], exit }
  }).pipe(Effect.provide(NodeServices.layer))

/** The request `argv` makes (fails the test if it is refused). */
const requestOf = (argv: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const { request, exit } = yield* parse(argv)
    assert.isTrue(Exit.isSuccess(exit), `${argv.join(" ")}: ${String(exit)}`)
    if (request === undefined) return assert.fail("no request")
    return request
  })

/** The words of a printed `npm run sim -- …` command, as a shell splits them (single quotes only). */
const argvOfCommand = (line: string): ReadonlyArray<string> => {
  const start = line.indexOf("npm run sim -- ")
  const rest = line.slice(start + "npm run sim -- ".length)
  // In parentheses ("(npm run sim -- …)"), the command ends at the closing one; a --replay's JSON has none.
  const command = line[start - 1] === "(" ? rest.slice(0, rest.indexOf(")")) : rest
  return [...command.matchAll(/'([^']*)'|(\S+)/g)].map((match) => match[1] ?? match[2] ?? "")
}

/** The usage error `argv` is refused with (exit 2, nothing run): its message. */
const usageError = (argv: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const { request, exit } = yield* parse(argv)
    assert.isUndefined(request, `${argv.join(" ")} ran`)
    assert.strictEqual(exitCodeOf(exit, cliErrorExitCode), EXIT_USAGE, `${argv.join(" ")}: ${String(exit)}`)
    const failure = Exit.isFailure(exit) ? exit.cause.reasons.find((reason) => reason._tag === "Fail") : undefined
    const error = failure?._tag === "Fail" ? failure.error : undefined
    // Refusals found after parsing come wrapped as effect/cli's own are: a ShowHelp carrying them.
    if (CliError.isCliError(error) && error._tag === "ShowHelp") return error.errors.map((e) => e.message).join("\n")
    return CliError.isCliError(error) ? error.message : String(error)
  })

describe("a failing seed's replay command", () => {
  it.effect("--tolerate none: both printed commands fail again, and --no-shrink says it did not shrink", () =>
    Effect.gen(function*() {
      const request = yield* requestOf(["--from", "26", "--seeds", "1", "--tolerate", "none", "--no-shrink"])
      if (request._tag !== "Soak") return assert.fail(request._tag)
      const summary = yield* soak(request.soak)
      const description = summary.failures[0]?.description ?? ""
      const lines = description.split("\n")
      // 40 ops and the seed's cancels and supersedes (simulation/controls.ts).
      assert.match(lines[2] ?? "", /^workload \(4\d op\(s\), not shrunk\):/)
      assert.notInclude(description, "minimal")
      const commands = lines.filter((line) => line.includes("npm run sim -- "))
      assert.strictEqual(commands.length, 2, description)
      for (const line of commands) {
        const replay = yield* requestOf(argvOfCommand(line))
        if (replay._tag !== "Seed") return assert.fail(replay._tag)
        const report = yield* runWorkload({ ...replay.config, seed: replay.seed }, replay.replay, replay.workload)
        assert.isFalse(report.ok, `${line} passes`)
      }
    }), 60_000)

  it.effect("every flag that shapes a soak's world or workload comes back in its replay", () =>
    Effect.gen(function*() {
      for (
        const argv of [
          ["--tolerate", "none"],
          ["--ops", "12", "--sessions", "3", "--scopes", "2", "--no-pressure", "--strict", "--frames"],
          ["--traffic", "--hostile", "--groups", "--delivery", "--topics", "--unregister", "--tolerate", "fifo,silent-loss"],
          ["--host-refusals", "--client-timings", "--withhold-rejoin", "--durability", "memory", "--connections", "accepted"],
          ["--host-journal", "--tolerate", "crash-redelivery"],
          ["--parked-flush", "--held-return", "--custody-hold", "--settle-hold", "--no-controls"]
        ]
      ) {
        const soakRequest = yield* requestOf(["--seeds", "3", "--from", "9", ...argv])
        if (soakRequest._tag !== "Soak") return assert.fail(soakRequest._tag)
        const args = soakRequest.soak.args ?? {}
        const replay = yield* requestOf(replayArgv(9, args))
        if (replay._tag !== "Seed") return assert.fail(replay._tag)
        const { from: _from, seeds: _seeds, config, shrink: _shrink, maxFailures: _max, args: _args, ...workload } = soakRequest.soak
        assert.deepStrictEqual<unknown>(replay.workload, workload, argv.join(" "))
        assert.deepStrictEqual(replay.config, config, argv.join(" "))
        assert.strictEqual(replay.seed, 9)
      }
    }))

  it.effect("the workflow modes print a replay command with their --ops and --parent-restarts", () =>
    Effect.gen(function*() {
      // A real (passing) bus report to hang the failures on: only their seed and violations are printed.
      const bus = yield* runWorkload({ seed: 1 }, [{ _tag: "List", after: 0, from: 0 }])
      const empty = { runs: 1, events: 0, simulatedMs: 0, busMessages: 0, checks: 0 }
      for (
        const argv of [
          ["--workflow", "--ops", "12"],
          ["--workflow-bus", "--ops", "12", "--parent-restarts"],
          ["--parent-restarts", "--ops", "7"],
          ["--workflow-bus-full", "--ops", "12", "--parent-restarts"],
          ["--workflow-bus-full", "--ops", "9"]
        ]
      ) {
        const request = yield* requestOf(["--seeds", "2", ...argv])
        if (request._tag === "Soak" || request._tag === "Seed") return assert.fail(request._tag)
        const text = request._tag === "Workflow"
          ? formatWorkflowSummary(
            { ...empty, tally: emptyTally(), violations: {}, failures: [{ seed: 5, violations: ["x: y"] }] },
            0,
            request.args
          )
          : request._tag === "WorkflowBus"
          ? formatBusWorkflowSummary(
            {
              ...empty,
              accepted: 0,
              checked: 0,
              terminals: 0,
              late: 0,
              restarts: 0,
              reloads: 0,
              restored: 0,
              failures: [{
                seed: 5,
                ok: false,
                bus,
                violations: ["x"],
                accepted: 0,
                terminals: 0,
                checked: 0,
                late: 0,
                supervisorChannel: 0,
                restarts: 0,
                reloads: 0,
                restored: 0
              }]
            },
            0,
            request.args
          )
          : formatBusFullSummary(
            { ...empty, tally: {}, failures: [{ seed: 5, ok: false, bus, violations: [], busySteer: "steer", checks: 0, tally: {} }] },
            0,
            request.args
          )
        const line = text.split("\n").find((l) => l.startsWith("seed 5"))
        assert.isDefined(line, text)
        const replay = yield* requestOf(argvOfCommand(line ?? ""))
        assert.deepStrictEqual(
          { ...replay, seed: undefined, from: 1, seeds: 2 },
          { ...request, seed: undefined, from: 1, seeds: 2 },
          `${argv.join(" ")}: ${line}`
        )
        assert.strictEqual(replay._tag !== "Soak" && replay._tag !== "Seed" ? replay.seed : undefined, 5)
      }
    }))

  it.effect("a failing --workflow seed's printed replay of its workload runs that op list again, and fails the same way", () =>
    Effect.gen(function*() {
      // A broken build (not a flag) makes the failure; the replay brings back the op list, the seed and --ops.
      const broken = { seed: 6, broken: "barrier-without-prelude" } as const
      const ops = generateWorkflowWorkload(6, 40)
      const failing = yield* runWorkflowWorkload(broken, ops)
      assert.isFalse(failing.ok)
      const line = replayCommand(6, { workflow: true, ops: 40 }, ops)
      const replay = yield* requestOf(argvOfCommand(line))
      if (replay._tag !== "Workflow") return assert.fail(replay._tag)
      assert.deepStrictEqual([replay.seed, replay.ops], [6, 40])
      assert.deepStrictEqual(replay.replay, ops)
      const again = yield* runWorkflowWorkload({ ...broken, seed: replay.seed ?? 0 }, replay.replay ?? [])
      assert.deepStrictEqual(again.violations, failing.violations)
      assert.deepStrictEqual(again.trace, failing.trace)
    }))

  it.effect("--workflow-bus and --workflow-bus-full (with --parent-restarts) take their own op lists as --replay", () =>
    Effect.gen(function*() {
      const bus = generateBusWorkflowWorkload(4, 12, { parentRestarts: true })
      const busRequest = yield* requestOf(argvOfCommand(replayCommand(4, { workflowBus: true, parentRestarts: true, ops: 12 }, bus)))
      if (busRequest._tag !== "WorkflowBus") return assert.fail(busRequest._tag)
      assert.deepStrictEqual([busRequest.seed, busRequest.parentRestarts, busRequest.replay], [4, true, bus])
      const full = generateBusFullWorkload(4, 12, { parentReloads: true })
      const fullRequest = yield* requestOf(argvOfCommand(replayCommand(4, { workflowBusFull: true, parentRestarts: true, ops: 12 }, full)))
      if (fullRequest._tag !== "WorkflowBusFull") return assert.fail(fullRequest._tag)
      assert.deepStrictEqual([fullRequest.seed, fullRequest.parentRestarts, fullRequest.replay], [4, true, full])
    }))

  it("prints the JSON of --replay in single quotes and leaves default flags out", () => {
    assert.strictEqual(replayCommand(3, {}), "npm run sim -- --seed 3")
    assert.strictEqual(
      replayCommand(3, { ops: 40, sessions: 4, scopes: 1, workflow: true }, [{ _tag: "List", after: 0, from: 1 }]),
      `npm run sim -- --workflow --seed 3 --replay '[{"_tag":"List","after":0,"from":1}]'`
    )
  })
})

describe("the shrinker", () => {
  it.effect("shrinks towards the first violation that is not tolerated, to a workload that still fails", () =>
    Effect.gen(function*() {
      // Seed 3 with groups ignored: its first violation is a cross-group (tolerated here), what fails it a cross-group-accepted.
      const config = { seed: 3, brokerInputFault: ignoreGroups(), tolerate: ["cross-group" as const, "registry-mismatch" as const] }
      const ops = generateWorkload(3, 4, { groups: true })
      const failing = yield* runWorkload(config, ops, { groups: true })
      assert.isFalse(failing.ok)
      assert.strictEqual(failing.violations[0]?.kind, "cross-group")
      const shrunk = yield* shrinkWorkload(config, ops, failing, { groups: true, maxRuns: 10 })
      assert.isFalse(shrunk.report.ok, "the minimal failing workload passes")
      assert.isTrue(shrunk.report.violations.some((violation) => violation.kind === "cross-group-accepted"))
    }), 60_000)

  it.effect("a soak's failure headline names what failed the run, not a tolerated violation", () =>
    Effect.gen(function*() {
      const summary = yield* soak({
        from: 3,
        seeds: 1,
        groups: true,
        shrink: false,
        config: { brokerInputFault: ignoreGroups(), tolerate: ["cross-group", "registry-mismatch"] }
      })
      assert.match(summary.failures[0]?.description ?? "", /^simulation seed 3 failed: cross-group-accepted: /)
    }), 60_000)
})

describe("flags that would make a vacuous or misleading run are usage errors (exit 2)", () => {
  it.effect("each names the flag and what it must be", () =>
    Effect.gen(function*() {
      const send = (fields: Record<string, number>) => JSON.stringify([{ _tag: "Send", after: 0, from: 0, to: 1, ...fields }])
      for (
        const [argv, expected] of [
          [["--replay", send({})], "--seed"],
          [["--workflow", "--seed", "3", "--replay", send({})], "a list of --workflow operations"],
          [["--workflow", "--replay", "[]"], "--seed"],
          [["--workflow", "--seed", "3", "--replay", JSON.stringify([{ pause: -1, op: "ParentReload" }])], "pause is 0 ms or more"],
          [["--workflow", "--seed", "3", "--replay", JSON.stringify([{ pause: 0, op: "Foreground", child: 5 }])], "child 5"],
          [["--workflow", "--seed", "3", "--replay", JSON.stringify([{ pause: 0, op: "StageClose", stage: 2 }])], "stage 2"],
          [["--workflow-bus", "--seed", "3", "--replay", JSON.stringify([{ pause: 0, op: "ParentReload" }])], "--workflow-bus operations"],
          [["--workflow-bus-full", "--seed", "3", "--replay", JSON.stringify([{ _tag: "reload", pauseMs: -2 }])], "pause is 0 ms or more"],
          [["--seed", "3", "--replay", send({ after: -5 })], "\"after\""],
          [["--seed", "3", "--replay", send({ to: 7 })], "session 7"],
          [["--seed", "3", "--sessions", "2", "--replay", send({ from: 2 })], "session 2"],
          [["--sessions", "0"], "at least 1"],
          [["--seeds", "-3"], "at least 1"],
          [["--ops", "-2"], "at least 1"],
          [["--workflow", "--ops", "0"], "at least 1"],
          [["--scopes", "0"], "at least 1"],
          [["--max-failures", "0"], "at least 1"],
          [["--tolerate", "unconfirmed-redelivry"], "\"unconfirmed-redelivry\" is no violation kind"]
        ] as const
      ) {
        const message = yield* usageError(argv)
        assert.include(message, expected, argv.join(" "))
      }
      // Still accepted: a replay inside the world, and a known kind.
      yield* requestOf(["--seed", "3", "--replay", send({ from: 3, to: 0 }), "--tolerate", "fifo,crash-redelivery"])
    }))
})
