/**
 * `npm run sim`'s command line (src/testing/simCommand.ts): the flags it had
 * before effect/cli parsed them, the request they make, and usage errors —
 * an unknown flag among them — exiting 2 without running anything.
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import * as CliError from "effect/cli/CliError"
import * as Command from "effect/cli/Command"
import { EXIT_USAGE, exitCodeOf } from "../../src/cli/exit.ts"
import { cliErrorExitCode } from "../../src/cli/programExit.ts"
import {
  defaultHostJournal,
  GROUPS_SUPERVISOR_WEIGHT,
  HOSTILE_WEIGHT,
  KNOWN_ISSUES,
  KNOWN_ISSUES_WITH_JOURNAL,
  trafficWeights
} from "../../src/testing/index.ts"
import { DELIVERY_WEIGHT } from "../../src/testing/simulation/delivery.ts"
import { TOPICS_PUBLISH_WEIGHT, TOPICS_SUBSCRIBE_WEIGHT, UNREGISTER_WEIGHT } from "../../src/testing/Workload.ts"
import { replayCommand } from "../../src/testing/simArgs.ts"
import { simCommand, type SimRequest } from "../../src/testing/simCommand.ts"

/** Parses `argv`: the requests the handler was given, and how the command ended. */
const parse = (argv: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const requests: Array<SimRequest> = []
    const command = simCommand((request) => Effect.sync(() => requests.push(request)))
    const exit = yield* Effect.exit(Command.runWith(command, { version: "test" })(argv))
    return { requests, exit }
  }).pipe(Effect.provide(NodeServices.layer))

/** The one request `argv` makes (fails the test if it made none). */
const requestOf = (argv: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const { requests, exit } = yield* parse(argv)
    assert.isTrue(Exit.isSuccess(exit), String(exit))
    assert.strictEqual(requests.length, 1)
    const [request] = requests
    if (request === undefined) return assert.fail("no request")
    return request
  })

/** `request` without the flags its replay commands repeat (replay.test.ts tests those). */
const withoutArgs = (request: SimRequest) => {
  if (request._tag === "Seed") return request
  if (request._tag === "Soak") {
    const { args: _args, ...soak } = request.soak
    return { ...request, soak }
  }
  const { args: _args, ...rest } = request
  return rest
}

/** The usage errors `argv` ends with; nothing was run. */
const usageErrorsOf = (argv: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const { requests, exit } = yield* parse(argv)
    assert.deepStrictEqual(requests, [], "nothing ran")
    assert.strictEqual(exitCodeOf(exit, cliErrorExitCode), EXIT_USAGE)
    const error = Exit.isFailure(exit) ? exit.cause.reasons.find((reason) => reason._tag === "Fail") : undefined
    const showHelp = error?._tag === "Fail" && CliError.isCliError(error.error) && error.error._tag === "ShowHelp"
      ? error.error
      : undefined
    return showHelp?.errors.map((e) => e._tag) ?? []
  })

describe("sim command line", () => {
  it.effect("no flags: a durable soak of seeds 1–1000, 40 ops, 4 sessions, shrinking, tolerating the known issues", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(withoutArgs(yield* requestOf([])), {
        _tag: "Soak",
        soak: {
          ops: 40,
          sessions: 4,
          from: 1,
          seeds: 1000,
          config: { tolerate: KNOWN_ISSUES, durability: "durable" },
          shrink: true,
          maxFailures: 5
        }
      })
    }))

  it.effect("every soak flag", () =>
    Effect.gen(function*() {
      const request = yield* requestOf([
        "--seeds", "7", "--from", "3", "--ops", "10", "--sessions", "5", "--scopes", "2", "--traffic", "--strict",
        "--frames", "--no-shrink", "--max-failures", "2", "--tolerate", "fifo,silent-loss,fifo",
        "--durability", "memory"
      ])
      assert.deepStrictEqual(withoutArgs(request), {
        _tag: "Soak",
        soak: {
          ops: 10,
          sessions: 5,
          weights: trafficWeights,
          pressure: false,
          from: 3,
          seeds: 7,
          config: { tolerate: ["fifo", "silent-loss"], durability: "memory", scopes: ["scope-1", "scope-2"], strictInFlight: true, traceFrames: true },
          shrink: false,
          maxFailures: 2
        }
      })
    }))

  it.effect("--hostile adds hostile sessions and their attacks, also to a traffic-only workload", () =>
    Effect.gen(function*() {
      const hostile = yield* requestOf(["--hostile", "--seeds", "2"])
      assert.strictEqual(hostile._tag === "Soak" ? hostile.soak.hostile : undefined, true)
      const traffic = yield* requestOf(["--hostile", "--traffic", "--seed", "4"])
      assert.deepStrictEqual(traffic._tag === "Seed" ? traffic.workload : undefined, {
        ops: 40,
        sessions: 4,
        weights: { ...trafficWeights, Hostile: HOSTILE_WEIGHT },
        hostile: true,
        pressure: false
      })
    }))

  it.effect("--groups spreads sessions over groups with a supervisor, also in a traffic-only workload", () =>
    Effect.gen(function*() {
      const groups = yield* requestOf(["--groups", "--seeds", "2"])
      assert.strictEqual(groups._tag === "Soak" ? groups.soak.groups : undefined, true)
      const traffic = yield* requestOf(["--groups", "--traffic", "--seed", "4"])
      assert.deepStrictEqual(traffic._tag === "Seed" ? traffic.workload : undefined, {
        ops: 40,
        sessions: 4,
        weights: { ...trafficWeights, SupervisorSend: GROUPS_SUPERVISOR_WEIGHT },
        groups: true,
        pressure: false
      })
    }))

  it.effect("--delivery and --topics mix delivery modes and topic traffic in, also in a traffic-only workload", () =>
    Effect.gen(function*() {
      const soak = yield* requestOf(["--delivery", "--topics", "--seeds", "2"])
      assert.deepStrictEqual(soak._tag === "Soak" ? [soak.soak.delivery, soak.soak.topics] : undefined, [true, true])
      const traffic = yield* requestOf(["--delivery", "--topics", "--traffic", "--seed", "4"])
      assert.deepStrictEqual(traffic._tag === "Seed" ? traffic.workload : undefined, {
        ops: 40,
        sessions: 4,
        weights: {
          ...trafficWeights,
          DeliverySend: DELIVERY_WEIGHT,
          Publish: TOPICS_PUBLISH_WEIGHT,
          Subscribe: TOPICS_SUBSCRIBE_WEIGHT
        },
        delivery: true,
        topics: true,
        pressure: false
      })
    }))

  it.effect("--unregister adds sessions leaving by unregister (and an ephemeral one), also in a traffic-only workload; absent, nothing", () =>
    Effect.gen(function*() {
      const soak = yield* requestOf(["--unregister", "--seeds", "2"])
      assert.strictEqual(soak._tag === "Soak" ? soak.soak.unregister : undefined, true)
      const plain = yield* requestOf(["--seeds", "2"])
      assert.strictEqual(plain._tag === "Soak" ? plain.soak.unregister : "not a soak", undefined)
      const traffic = yield* requestOf(["--unregister", "--traffic", "--seed", "4"])
      assert.deepStrictEqual(traffic._tag === "Seed" ? traffic.workload : undefined, {
        ops: 40,
        sessions: 4,
        weights: { ...trafficWeights, Unregister: UNREGISTER_WEIGHT },
        unregister: true,
        pressure: false
      })
    }))

  it.effect("--no-pressure leaves out the registration storms and floods, and the small broker limits", () =>
    Effect.gen(function*() {
      const soak = yield* requestOf(["--no-pressure", "--seeds", "2"])
      assert.strictEqual(soak._tag === "Soak" ? soak.soak.pressure : undefined, false)
      const seed = yield* requestOf(["--seed", "4"])
      assert.strictEqual(seed._tag === "Seed" ? seed.workload.pressure : "not a seed", undefined)
    }))

  it.effect("--withhold-rejoin sets withholdRejoin, for a soak and for one seed, and a failing seed's replay command repeats it; without it, nothing", () =>
    Effect.gen(function*() {
      const soak = yield* requestOf(["--withhold-rejoin", "--seeds", "2"])
      assert.strictEqual(soak._tag === "Soak" ? soak.soak.config?.withholdRejoin : undefined, true)
      assert.include(soak._tag === "Soak" ? replayCommand(9, soak.soak.args ?? {}) : "", "--seed 9 --withhold-rejoin")
      const seed = yield* requestOf(["--seed", "4", "--withhold-rejoin"])
      assert.strictEqual(seed._tag === "Seed" ? seed.config.withholdRejoin : undefined, true)
      const plain = yield* requestOf(["--seed", "4"])
      assert.isFalse(plain._tag === "Seed" && "withholdRejoin" in plain.config)
    }))

  it.effect("--host-journal gives the hosts a journal, for a soak and for one seed; without it they have none", () =>
    Effect.gen(function*() {
      const soak = yield* requestOf(["--host-journal", "--seeds", "2"])
      assert.deepStrictEqual(soak._tag === "Soak" ? soak.soak.config?.hostJournal : undefined, defaultHostJournal)
      const seed = yield* requestOf(["--seed", "4", "--host-journal"])
      assert.deepStrictEqual(seed._tag === "Seed" ? seed.config.hostJournal : undefined, defaultHostJournal)
      const plain = yield* requestOf(["--seed", "4"])
      assert.isFalse(plain._tag === "Seed" && "hostJournal" in plain.config)
    }))

  it.effect("with host journals the redeliveries are fixed: only the order trade-off (takeover-late-write) is tolerated unless --tolerate says otherwise", () =>
    Effect.gen(function*() {
      const tolerated = (request: SimRequest) =>
        request._tag === "Soak" ? request.soak.config?.tolerate : request._tag === "Seed" ? request.config.tolerate : undefined
      assert.deepStrictEqual(tolerated(yield* requestOf(["--host-journal", "--seeds", "2"])), KNOWN_ISSUES_WITH_JOURNAL)
      assert.deepStrictEqual(KNOWN_ISSUES_WITH_JOURNAL, ["takeover-late-write"])
      assert.deepStrictEqual(tolerated(yield* requestOf(["--host-refusals", "--seed", "4"])), KNOWN_ISSUES_WITH_JOURNAL)
      assert.deepStrictEqual(tolerated(yield* requestOf(["--seed", "4"])), KNOWN_ISSUES)
      assert.deepStrictEqual(
        tolerated(yield* requestOf(["--host-journal", "--tolerate", "unconfirmed-redelivery"])),
        ["unconfirmed-redelivery"]
      )
    }))

  it.effect("--tolerate none tolerates nothing", () =>
    Effect.gen(function*() {
      const request = yield* requestOf(["--tolerate", "none"])
      assert.deepStrictEqual(request._tag === "Soak" ? request.soak.config?.tolerate : undefined, [])
    }))

  it.effect("--seed runs one seed; --replay gives it a workload as JSON", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* requestOf(["--seed", "3", "--sessions", "2"]), {
        _tag: "Seed",
        seed: 3,
        replay: undefined,
        workload: { ops: 40, sessions: 2 },
        config: { tolerate: KNOWN_ISSUES, durability: "durable" }
      })
      const replay = JSON.stringify([{ _tag: "Send", after: 0, from: 0, to: 1 }])
      const request = yield* requestOf(["--seed", "3", "--replay", replay])
      assert.deepStrictEqual(request._tag === "Seed" ? request.replay : undefined, [{ _tag: "Send", after: 0, from: 0, to: 1 }])
    }))

  it.effect("--durability takes durable or memory; anything else is a usage error (exit 2)", () =>
    Effect.gen(function*() {
      const memory = yield* requestOf(["--durability", "memory", "--seed", "4"])
      assert.strictEqual(memory._tag === "Seed" ? memory.config.durability : undefined, "memory")
      assert.isNotEmpty(yield* usageErrorsOf(["--durability", "sqlite"]))
    }))

  it.effect("--workflow runs the workflow simulation: a soak of its seeds, or one seed", () =>
    Effect.gen(function*() {
      const soak = yield* requestOf(["--workflow", "--seeds", "7", "--from", "3"])
      assert.deepStrictEqual(withoutArgs(soak), { _tag: "Workflow", seed: undefined, replay: undefined, from: 3, seeds: 7, ops: 40, maxFailures: 5 })
      const one = yield* requestOf(["--workflow", "--seed", "9", "--ops", "12"])
      assert.deepStrictEqual(one._tag === "Workflow" ? [one.seed, one.ops] : undefined, [9, 12])
    }))

  it.effect("--workflow-bus runs the bus-hosted workflow parent: a soak of its seeds, or one seed", () =>
    Effect.gen(function*() {
      const soak = yield* requestOf(["--workflow-bus", "--seeds", "7", "--from", "3"])
      assert.deepStrictEqual(withoutArgs(soak), {
        _tag: "WorkflowBus",
        seed: undefined,
        replay: undefined,
        from: 3,
        seeds: 7,
        ops: 40,
        maxFailures: 5,
        parentRestarts: false,
        strict: false,
        tolerate: []
      })
      const one = yield* requestOf(["--workflow-bus", "--seed", "9", "--ops", "12"])
      assert.deepStrictEqual(one._tag === "WorkflowBus" ? [one.seed, one.ops] : undefined, [9, 12])
    }))

  it.effect("--parent-restarts runs --workflow-bus (which it implies) with parent restarts, or --workflow-bus-full with parent reloads; with --workflow it is a usage error (exit 2)", () =>
    Effect.gen(function*() {
      const soak = yield* requestOf(["--parent-restarts", "--seeds", "7"])
      assert.deepStrictEqual(soak._tag === "WorkflowBus" ? [soak.parentRestarts, soak.seeds] : undefined, [true, 7])
      const both = yield* requestOf(["--workflow-bus", "--parent-restarts", "--seed", "3"])
      assert.deepStrictEqual(both._tag === "WorkflowBus" ? [both.parentRestarts, both.seed] : undefined, [true, 3])
      const full = yield* requestOf(["--workflow-bus-full", "--parent-restarts", "--seeds", "4"])
      assert.deepStrictEqual(full._tag === "WorkflowBusFull" ? [full.parentRestarts, full.seeds] : undefined, [true, 4])
      assert.deepStrictEqual(yield* usageErrorsOf(["--workflow", "--parent-restarts"]), ["InvalidValue"])
      const { exit } = yield* parse(["--workflow", "--parent-restarts"])
      const failure = Exit.isFailure(exit) ? exit.cause.reasons.find((reason) => reason._tag === "Fail") : undefined
      const error = failure?._tag === "Fail" && CliError.isCliError(failure.error) && failure.error._tag === "ShowHelp"
        ? failure.error.errors[0]
        : undefined
      assert.include(error?.message, "--workflow-bus-full")
    }))

  it.effect("--strict reaches --workflow-bus and --workflow-bus-full (their request and replay command); with --workflow it is a usage error (exit 2)", () =>
    Effect.gen(function*() {
      const bus = yield* requestOf(["--workflow-bus", "--strict", "--seeds", "7"])
      assert.deepStrictEqual(bus._tag === "WorkflowBus" ? [bus.strict, bus.args.strict] : undefined, [true, true])
      assert.include(bus._tag === "WorkflowBus" ? replayCommand(3, bus.args) : "", "--strict")
      const full = yield* requestOf(["--workflow-bus-full", "--strict", "--seed", "3"])
      assert.deepStrictEqual(full._tag === "WorkflowBusFull" ? [full.strict, full.args.strict] : undefined, [true, true])
      const restarts = yield* requestOf(["--parent-restarts", "--strict", "--seeds", "2"])
      assert.deepStrictEqual(restarts._tag === "WorkflowBus" ? restarts.strict : undefined, true)
      assert.deepStrictEqual(yield* usageErrorsOf(["--workflow", "--strict"]), ["InvalidValue"])
    }))

  it.effect("--tolerate reaches --workflow-bus and --workflow-bus-full (their request and replay command; absent, nothing is tolerated); with --workflow it is a usage error (exit 2)", () =>
    Effect.gen(function*() {
      const bus = yield* requestOf(["--workflow-bus", "--strict", "--tolerate", "lost-in-flight,fifo", "--seeds", "7"])
      assert.deepStrictEqual(bus._tag === "WorkflowBus" ? [bus.tolerate, bus.args.tolerate] : undefined, [
        ["lost-in-flight", "fifo"],
        "lost-in-flight,fifo"
      ])
      assert.include(bus._tag === "WorkflowBus" ? replayCommand(3, bus.args) : "", "--tolerate lost-in-flight,fifo")
      const full = yield* requestOf(["--workflow-bus-full", "--tolerate", "none", "--seed", "3"])
      assert.deepStrictEqual(full._tag === "WorkflowBusFull" ? [full.tolerate, full.args.tolerate] : undefined, [[], "none"])
      const restarts = yield* requestOf(["--parent-restarts", "--tolerate", "crash-loss", "--seeds", "2"])
      assert.deepStrictEqual(restarts._tag === "WorkflowBus" ? restarts.tolerate : undefined, ["crash-loss"])
      const absent = yield* requestOf(["--workflow-bus-full", "--seeds", "2"])
      assert.deepStrictEqual(absent._tag === "WorkflowBusFull" ? [absent.tolerate, absent.args.tolerate] : undefined, [[], undefined])
      assert.deepStrictEqual(yield* usageErrorsOf(["--workflow-bus", "--tolerate", "bogus"]), ["InvalidValue"])
      assert.deepStrictEqual(yield* usageErrorsOf(["--workflow", "--tolerate", "fifo"]), ["InvalidValue"])
      const { exit } = yield* parse(["--workflow", "--tolerate", "fifo"])
      const failure = Exit.isFailure(exit) ? exit.cause.reasons.find((reason) => reason._tag === "Fail") : undefined
      const error = failure?._tag === "Fail" && CliError.isCliError(failure.error) && failure.error._tag === "ShowHelp"
        ? failure.error.errors[0]
        : undefined
      assert.include(error?.message, "no bus")
    }))

  it.effect("--workflow-bus-full runs the whole workflow layer on the bus: a soak of its seeds, or one seed", () =>
    Effect.gen(function*() {
      const soak = yield* requestOf(["--workflow-bus-full", "--seeds", "7", "--from", "3"])
      assert.deepStrictEqual(withoutArgs(soak), {
        _tag: "WorkflowBusFull",
        seed: undefined,
        replay: undefined,
        from: 3,
        seeds: 7,
        ops: 40,
        maxFailures: 5,
        parentRestarts: false,
        strict: false,
        tolerate: []
      })
      const one = yield* requestOf(["--workflow-bus-full", "--seed", "9", "--ops", "12"])
      assert.deepStrictEqual(one._tag === "WorkflowBusFull" ? [one.seed, one.ops] : undefined, [9, 12])
    }))

  it.effect("an unknown flag is a usage error (exit 2), not ignored", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* usageErrorsOf(["--seeds", "5", "--bogus"]), ["UnrecognizedOption"])
      assert.deepStrictEqual(yield* usageErrorsOf(["--no-traffic"]), ["UnrecognizedOption"])
    }))

  it.effect("a value that is not an integer, or a --replay that is not a workload, is a usage error (exit 2)", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* usageErrorsOf(["--seeds", "many"]), ["InvalidValue"])
      assert.deepStrictEqual(yield* usageErrorsOf(["--seed", "1", "--replay", "[{\"_tag\":\"Send\"}]"]), ["InvalidValue"])
    }))
})
