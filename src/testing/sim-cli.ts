/**
 * `npm run sim -- [options]`: runs simulation seeds and prints a summary, or
 * one seed with its workload and trace. The flags are simCommand.ts's
 * (`npm run sim -- --help` lists them):
 *
 *   --seeds N      how many seeds (default 1000)
 *   --from S       first seed (default 1)
 *   --seed S       run one seed and print its workload and trace
 *   --replay JSON  with --seed: run this op list (a failure report prints it) instead of the seed's;
 *                  in a workflow mode, a list of that mode's operations
 *   --ops N        operations per run (default 40)
 *   --sessions N   sessions per world (default 4)
 *   --scopes N     spread sessions over N pi scopeIds (default 1)
 *   --traffic      no faults, traffic only
 *   --hostile      two hostile sessions, their attacks mixed into the workload
 *   --unregister   sessions also leave by unregister and come back; the last one is ephemeral
 *                  (ephemeral-v1) and stays gone once it unregisters
 *   --parked-flush one or two parked flushes per workload: a session comes back to more mail than
 *                  its outbox takes, reading slowly, while its senders send on, leave, rejoin or
 *                  unregister (simulation/parkedFlush.ts)
 *   --held-return  one held return per workload: a session leaves with its last messages parked
 *                  behind a slow recipient and registers again on a new connection while they
 *                  wait (simulation/heldReturn.ts)
 *   --custody-hold one custody hold per workload: a recipient taken over by a new instance while
 *                  its old connection holds a sender's unconfirmed mail; the sender sends, leaves
 *                  and comes back while the new connection holds it (simulation/custodyHold.ts)
 *   --settle-hold  one settle hold per workload: an asker's deadline comes while the reply to its
 *                  ask is parked behind the answerer's mail to a slow reader (the broker holds its
 *                  settling answer), then it is released, forced or taken back (simulation/settleHold.ts);
 *                  and one whose reply a takeover's custody hold on the asker keeps, or its old
 *                  connection gives back at the close the hold waits for (settleCustody.ts)
 *   --instance-control  one instance control per workload: a receiver reads a message, leaves and
 *                  starts again (a new client instance), then its sender cancels or supersedes it
 *                  (simulation/instanceControl.ts)
 *   --reader-return  one reader return per workload: a reader's connection drops (or it
 *                  unregisters) holding its sender's control or message unconfirmed, the sender
 *                  cancels or supersedes, and the same instance comes back (simulation/readerReturn.ts)
 *   --group-move   one group move per workload: a reader holds its sender's control unconfirmed
 *                  when its client instance moves it to another group and back; the control must
 *                  reach it back in the first group (simulation/groupMove.ts)
 *   --stale-ask    one stale ask per workload: a target holds an ask's question unread past its
 *                  deadline and gives it back after the asker timed out (simulation/staleAsk.ts)
 *   --answer-takeover  one answer by a takeover per workload: a new client instance of an ask's
 *                  target answers while the old connection holds the question past its deadline,
 *                  or (half the seeds) while the old close's copy waits unwritten on the new one
 *                  (simulation/answerTakeover.ts)
 *   --answer-mailbox  one answer in the mailbox case per workload: a target killed inside the
 *                  window of its replace-staged reply, the question back in the mailbox when the
 *                  reply is accepted; it starts again past the deadline (simulation/answerMailbox.ts)
 *   --no-controls  no cancels or supersedes after the sends (simulation/controls.ts): the
 *                  workloads of before they came
 *   --workflow     the workflow simulation (stages, children, handshakes, terminals) instead
 *   --workflow-bus the bus simulation with a workflow parent session and its background children
 *   --parent-restarts  with --workflow-bus (implied): the parent's process restarts and reloads too,
 *                  keeping a ParentJournal across its generations; with --workflow-bus-full: it reloads
 *   --workflow-bus-full  the bus simulation with the whole workflow layer hosted (stages, foreground
 *                  children, parallel groups, asks, terminals)
 *   --durability durable|memory  the broker's mail on a simulated disk that outlives
 *                  its crashes (default), or in its memory only
 *   --connections adopted|accepted  the broker adopts its connections as the Unix-socket
 *                  broker does (default), or runs a fiber per connection (`accept`)
 *   --host-journal every host keeps a journal whose checkpoints wait simulated time
 *                  (simulation/journal.ts), so a generation can close mid-message
 *   --host-refusals  hosts that are sometimes busy refuse hand-offs (implies --host-journal)
 *   --client-timings  every client a session starts gets its own timings drawn from the seed
 *                  (simulation/timings.ts) instead of one fixed set
 *   --withhold-rejoin  about one client in two registers without rejoin-v1 (an older client),
 *                  drawn per client from the seed (simulation/withheldRejoin.ts); takeover-late-write
 *                  is tolerated only for a takeover such a registration made or suffered
 *   --strict       count messages lost in flight to a dying receiver as failures
 *                  (with --workflow-bus, --workflow-bus-full too; --workflow refuses it)
 *   --frames       every frame in the trace
 *   --no-shrink    report failing seeds without shrinking them
 *   --max-failures N  stop after N failing seeds (default 5)
 *   --tolerate K   violation kinds to report without failing, comma-separated
 *                  (default: the known issues, see docs/testing.md; "none" for none;
 *                  with --workflow-bus, --workflow-bus-full: of their bus, default none;
 *                  --workflow refuses it)
 *
 * Exits 0 when every seed passes, 1 when any fails, 2 on a bad command line
 * (an unknown flag, a value that is not an integer, a --replay that is not a
 * workload, and what simCommand.ts's `usageErrorOf` refuses). A failing
 * seed's report carries a replay command with every flag that shaped it
 * (simArgs.ts).
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as Command from "effect/cli/Command"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { EXIT_FAILURE, ExitCode } from "../cli/exit.ts"
import { programTeardown } from "../cli/programExit.ts"
import { packageInfo } from "../config/install.ts"
import { formatBuildStamp, readBuildStamp } from "./BuildStamp.ts"
import { replayCommand } from "./simArgs.ts"
import { simCommand, type SimRequest } from "./simCommand.ts"
import { formatSummary, soak } from "./Soak.ts"
import { formatOp, generateWorkload, runWorkload, sessionNames } from "./Workload.ts"
import { generateBusWorkflowWorkload, runBusWorkflow } from "./workflow/BusParent.ts"
import { busWorkflowSoak, formatBusWorkflowSummary } from "./workflow/BusParentSoak.ts"
import { runBusWorkflowFull } from "./workflow/BusFull.ts"
import { busFullSoak, formatBusFullSummary } from "./workflow/BusFullSoak.ts"
import { generateBusFullWorkload } from "./workflow/BusFullWorkload.ts"
import { shrinkWorkflowWorkload } from "./workflow/WorkflowShrink.ts"
import { formatWorkflowSummary, generateWorkflowWorkload, runWorkflowWorkload, workflowSoak } from "./workflow/WorkflowWorkload.ts"

/** `--workflow`: one workflow seed with its trace, or many summarized. */
const runWorkflowRequest = (request: Extract<SimRequest, { readonly _tag: "Workflow" }>): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    if (request.seed !== undefined) {
      const ops = request.replay ?? generateWorkflowWorkload(request.seed, request.ops)
      yield* Console.log(`workflow seed ${request.seed}, ${ops.length} ops${request.replay === undefined ? "" : " (replayed)"}:`)
      for (const op of ops) yield* Console.log(`  ${JSON.stringify(op)}`)
      const report = yield* runWorkflowWorkload({ seed: request.seed }, ops)
      yield* Console.log(report.trace.join("\n"))
      yield* Console.log(report.ok ? "ok" : report.violations.map((v) => `${v.kind}: ${v.message}`).join("\n"))
      return report.ok
    }
    const started = performance.now()
    const summary = yield* workflowSoak(request)
    yield* Console.log(formatWorkflowSummary(summary, performance.now() - started, request.args))
    const first = summary.failures[0]
    if (first !== undefined) {
      const ops = generateWorkflowWorkload(first.seed, request.ops)
      const failing = yield* runWorkflowWorkload({ seed: first.seed }, ops)
      const shrunk = yield* shrinkWorkflowWorkload({ seed: first.seed }, ops, failing)
      yield* Console.log(`seed ${first.seed}, minimal workload (${shrunk.ops.length} op(s), ${shrunk.runs} reruns to shrink):`)
      for (const op of shrunk.ops) yield* Console.log(`  ${JSON.stringify(op)}`)
      yield* Console.log(shrunk.report.trace.join("\n"))
      yield* Console.log(`replay the minimal workload: ${replayCommand(first.seed, request.args, shrunk.ops)}`)
    }
    return summary.failures.length === 0
  })

/** `--workflow-bus`: one bus-hosted workflow parent seed with its trace, or many summarized. */
const runWorkflowBusRequest = (request: Extract<SimRequest, { readonly _tag: "WorkflowBus" }>): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    if (request.seed !== undefined) {
      const ops = request.replay ?? generateBusWorkflowWorkload(request.seed, request.ops, { parentRestarts: request.parentRestarts })
      yield* Console.log(`bus workflow seed ${request.seed}, ${ops.length} ops${request.replay === undefined ? "" : " (replayed)"}:`)
      for (const op of ops) yield* Console.log(`  ${JSON.stringify(op)}`)
      const report = yield* runBusWorkflow(
        { seed: request.seed, parentRestarts: request.parentRestarts, strictInFlight: request.strict, tolerate: request.tolerate },
        ops
      )
      yield* Console.log(report.bus.trace.join("\n"))
      const violations = [...report.violations, ...report.bus.violations.map((v) => `${v.kind}: ${v.message}`)]
      yield* Console.log(report.ok ? "ok" : violations.join("\n"))
      return report.ok
    }
    const started = performance.now()
    const summary = yield* busWorkflowSoak({ ...request, strictInFlight: request.strict })
    yield* Console.log(formatBusWorkflowSummary(summary, performance.now() - started, request.args))
    return summary.failures.length === 0
  })

/** `--workflow-bus-full`: one seed of the whole workflow layer on the bus with its trace, or many summarized. */
const runWorkflowBusFullRequest = (request: Extract<SimRequest, { readonly _tag: "WorkflowBusFull" }>): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    if (request.seed !== undefined) {
      const ops = request.replay ?? generateBusFullWorkload(request.seed, request.ops, { parentReloads: request.parentRestarts })
      yield* Console.log(`bus workflow (whole layer) seed ${request.seed}, ${ops.length} ops${request.replay === undefined ? "" : " (replayed)"}:`)
      for (const op of ops) yield* Console.log(`  ${JSON.stringify(op)}`)
      const report = yield* runBusWorkflowFull(
        { seed: request.seed, parentReloads: request.parentRestarts, strictInFlight: request.strict, tolerate: request.tolerate },
        ops
      )
      yield* Console.log(report.bus.trace.join("\n"))
      const violations = [...report.violations, ...report.bus.violations].map((v) => `${v.kind}: ${v.message}`)
      yield* Console.log(report.ok ? "ok" : violations.join("\n"))
      return report.ok
    }
    const started = performance.now()
    const summary = yield* busFullSoak({ ...request, parentReloads: request.parentRestarts, strictInFlight: request.strict })
    yield* Console.log(formatBusFullSummary(summary, performance.now() - started, request.args))
    return summary.failures.length === 0
  })

/** Runs one request and prints what it found; whether every seed passed. */
const runRequest = (request: SimRequest): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    if (request._tag === "Workflow") return yield* runWorkflowRequest(request)
    if (request._tag === "WorkflowBus") return yield* runWorkflowBusRequest(request)
    if (request._tag === "WorkflowBusFull") return yield* runWorkflowBusFullRequest(request)
    if (request._tag === "Seed") {
      const { seed, workload, config } = request
      const ops = request.replay ?? generateWorkload(seed, workload.sessions, workload)
      const names = sessionNames(workload.sessions)
      yield* Console.log(`seed ${seed}, ${ops.length} ops:`)
      for (const op of ops) yield* Console.log(`  ${formatOp(op, names)}`)
      const report = yield* runWorkload({ ...config, seed }, ops, workload)
      yield* Console.log(report.trace.join("\n"))
      const { trace: _trace, ...rest } = report
      yield* Console.log(JSON.stringify(rest, null, 2))
      return report.ok
    }
    const seeds = request.soak.seeds
    const started = performance.now()
    let done = 0
    const summary = yield* soak({
      ...request.soak,
      onSeed: () =>
        Effect.sync(() => {
          done++
          if (process.stderr.isTTY && done % 100 === 0) process.stderr.write(`\r${done}/${seeds}`)
        })
    })
    if (process.stderr.isTTY) process.stderr.write("\r")
    yield* Console.log(formatSummary(summary, performance.now() - started))
    return summary.failures.length === 0
  })

/** Prints which build runs (BuildStamp.ts): dist/ is this module's parent's parent, src/ beside it. */
const printBuild: Effect.Effect<void> = Effect.gen(function*() {
  const distRoot = path.dirname(path.dirname(fileURLToPath(import.meta.url)))
  const stamp = yield* Effect.sync(() => readBuildStamp(distRoot, path.join(path.dirname(distRoot), "src")))
  for (const line of formatBuildStamp(stamp)) yield* Console.log(line)
})

simCommand((request) =>
  Effect.flatMap(Effect.andThen(printBuild, runRequest(request)), (ok) => ok ? Effect.void : Effect.fail(new ExitCode({ code: EXIT_FAILURE })))
).pipe(
  Command.run({ version: packageInfo()?.version ?? "unknown" }),
  Effect.provide(NodeServices.layer),
  NodeRuntime.runMain({ teardown: programTeardown })
)
