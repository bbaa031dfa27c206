/**
 * Size: about 650 lines, one concept — the flags. Most of it is the flag
 * table itself, one declaration per flag with its help text, and the checks
 * that refuse a vacuous value or a --replay of another mode; the replay line they print is simArgs.ts's.
 *
 * The command line of `npm run sim` (src/testing/sim-cli.ts), parsed with
 * effect/cli: which flags exist, what each means, and the `SimRequest` they
 * make. Running a request is sim-cli.ts's job; keeping the two apart lets the
 * parsing be tested without running a simulation.
 *
 * An unknown flag, a value that is not an integer, or a `--replay` that is not
 * a workload is a usage error: effect/cli prints the help and the error, and
 * the process exits 2 (cli/exit.ts).
 */
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as CliError from "effect/cli/CliError"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { ViolationKind } from "./Ledger.ts"
import { type SimArgs, SIM_DEFAULTS } from "./simArgs.ts"
import { defaultClientTimingRanges, defaultHostJournal, defaultHostRefusals, type SimulationConfig } from "./Simulation.ts"
import { KNOWN_ISSUES, KNOWN_ISSUES_WITH_JOURNAL, type SoakOptions } from "./Soak.ts"
import { DELIVERY_WEIGHT } from "./simulation/delivery.ts"
import {
  GROUPS_SUPERVISOR_WEIGHT,
  HOSTILE_WEIGHT,
  type Op,
  OpSchema,
  TOPICS_PUBLISH_WEIGHT,
  TOPICS_SUBSCRIBE_WEIGHT,
  trafficWeights,
  UNREGISTER_WEIGHT,
  type WorkloadOptions
} from "./Workload.ts"
import { type BusFullOp, BusFullOpSchema } from "./workflow/BusFullWorkload.ts"
import { type BusWorkflowOp, BusWorkflowOpSchema } from "./workflow/BusParentWorkload.ts"
import { WORKFLOW_CHILDREN, WORKFLOW_STAGES, type WorkflowOp, WorkflowOpSchema } from "./workflow/WorkflowWorkload.ts"

/** What one invocation of `npm run sim` asks for. */
export type SimRequest =
  | {
    /** `--seed S`: one run, printed with its workload and trace. */
    readonly _tag: "Seed"
    readonly seed: number
    /** `--replay JSON`: run this workload instead of the one generated from the seed. */
    readonly replay: ReadonlyArray<Op> | undefined
    readonly workload: WorkloadOptions & { readonly sessions: number }
    readonly config: Omit<SimulationConfig, "seed">
  }
  | {
    /** Many seeds, summarized (the default). */
    readonly _tag: "Soak"
    readonly soak: SoakOptions
  }
  | {
    /**
     * `--workflow`: the workflow simulation (src/testing/workflow) instead of
     * the bus: one seed with its trace (`seed`), or many summarized.
     */
    readonly _tag: "Workflow"
    readonly seed: number | undefined
    /** `--replay JSON` (with `seed`): run this workload instead of the one generated from the seed. */
    readonly replay: ReadonlyArray<WorkflowOp> | undefined
    readonly from: number
    readonly seeds: number
    readonly ops: number
    readonly maxFailures: number
    /** The flags a failing seed's replay command repeats (simArgs.ts). */
    readonly args: SimArgs
  }
  | {
    /**
     * `--workflow-bus`: the bus simulation with one session hosted by the
     * workflow parent and its background children (workflow/BusParent.ts):
     * one seed with its trace (`seed`), or many summarized.
     */
    readonly _tag: "WorkflowBus"
    readonly seed: number | undefined
    /** `--replay JSON` (with `seed`): run this workload instead of the one generated from the seed. */
    readonly replay: ReadonlyArray<BusWorkflowOp> | undefined
    readonly from: number
    readonly seeds: number
    readonly ops: number
    readonly maxFailures: number
    /** `--parent-restarts`: the parent's process restarts too, keeping a `ParentJournal`. */
    readonly parentRestarts: boolean
    /** `--strict`: the bus ledger counts messages lost in flight to a dying receiver as violations. */
    readonly strict: boolean
    /** `--tolerate`: bus violation kinds reported without failing a run (none unless given). */
    readonly tolerate: ReadonlyArray<ViolationKind>
    /** The flags a failing seed's replay command repeats (simArgs.ts). */
    readonly args: SimArgs
  }
  | {
    /**
     * `--workflow-bus-full`: the bus simulation with the whole workflow
     * layer hosted (workflow/BusFull.ts): one seed with its trace (`seed`),
     * or many summarized.
     */
    readonly _tag: "WorkflowBusFull"
    readonly seed: number | undefined
    /** `--replay JSON` (with `seed`): run this workload instead of the one generated from the seed. */
    readonly replay: ReadonlyArray<BusFullOp> | undefined
    readonly from: number
    readonly seeds: number
    readonly ops: number
    readonly maxFailures: number
    /** `--parent-restarts`: the parent reloads too (its generation replaced in-process), keeping a `ParentJournal`. */
    readonly parentRestarts: boolean
    /** `--strict`: the bus ledger counts messages lost in flight to a dying receiver as violations. */
    readonly strict: boolean
    /** `--tolerate`: bus violation kinds reported without failing a run (none unless given). */
    readonly tolerate: ReadonlyArray<ViolationKind>
    /** The flags a failing seed's replay command repeats (simArgs.ts). */
    readonly args: SimArgs
  }

/** Every violation kind, so that `--tolerate` can pick out the names it knows. */
const VIOLATION_KINDS: Readonly<Record<ViolationKind, true>> = {
  "silent-loss": true,
  "crash-loss": true,
  "crash-lost-notice": true,
  "crash-redelivery": true,
  "unconfirmed-redelivery": true,
  "duplicate-delivery": true,
  "duplicate-on-wire": true,
  "fifo": true,
  "misrouted": true,
  "scope-leak": true,
  "ask-unsettled": true,
  "ask-wrong-reply": true,
  "answer-after-timeout": true,
  "refused-as-timeout": true,
  "answered-elsewhere-false": true,
  "registry-mismatch": true,
  "untold-eviction": true,
  "stranded-mail": true,
  "takeover-late-write": true,
  "left-before-mail": true,
  "fiber-leak": true,
  "defect": true,
  "mailbox-not-empty": true,
  "not-reconnected": true,
  "lost-in-flight": true,
  "frame-too-large": true,
  "ask-hijacked": true,
  "cross-group": true,
  "cross-group-accepted": true,
  "replace-not-latest": true,
  "passive-woke-model": true,
  "topic-revision-backwards": true,
  "topic-double-interrupt": true,
  "membership-view": true,
  "control-before-message": true,
  "cancel-unheard": true,
  "supersede-unheard": true,
  "handed-after-drop": true,
  "missing-left": true,
  "control-to-other-instance": true,
  "control-never-reached-reader": true,
  "missing-pair": true,
  "ask-expired-untold": true,
  "expired-after-answer": true
}

const isViolationKind = (name: string): name is ViolationKind => Object.hasOwn(VIOLATION_KINDS, name)

/**
 * `--tolerate`: absent → the known issues (none in a world with host
 * journals, `withJournal`); `none` → nothing; else the comma-separated
 * kinds. The command refuses a name that is no violation kind
 * (`usageErrorOf`); here such a name is left out.
 */
export const toleratedKinds = (arg: Option.Option<string>, withJournal = false): ReadonlyArray<ViolationKind> =>
  Option.match(arg, {
    onNone: () => withJournal ? KNOWN_ISSUES_WITH_JOURNAL : KNOWN_ISSUES,
    onSome: (list) => list === "none" ? [] : [...new Set(list.split(",").filter(isViolationKind))]
  })

/**
 * `--tolerate` in a workflow-bus mode: absent → nothing (those worlds'
 * default: every bus violation fails the run); else as `toleratedKinds`.
 */
const busTolerated = (arg: Option.Option<string>): ReadonlyArray<ViolationKind> =>
  Option.isNone(arg) ? [] : toleratedKinds(arg)

/** `--replay`'s op lists, one per kind of world: the bus soak's, `--workflow`'s, `--workflow-bus`'s, `--workflow-bus-full`'s. */
const BusReplay = Schema.Array(OpSchema)
const WorkflowReplay = Schema.Array(WorkflowOpSchema)
const BusWorkflowReplay = Schema.Array(BusWorkflowOpSchema)
const BusFullReplay = Schema.Array(BusFullOpSchema)

/** A `--replay` (decoded as any of them) as one kind of list; undefined when it is not one. */
const busReplayOf = (replay: unknown) => Option.getOrUndefined(Schema.decodeUnknownOption(BusReplay)(replay))
const workflowReplayOf = (replay: unknown) => Option.getOrUndefined(Schema.decodeUnknownOption(WorkflowReplay)(replay))
const busWorkflowReplayOf = (replay: unknown) => Option.getOrUndefined(Schema.decodeUnknownOption(BusWorkflowReplay)(replay))
const busFullReplayOf = (replay: unknown) => Option.getOrUndefined(Schema.decodeUnknownOption(BusFullReplay)(replay))

const int = (name: string, fallback: number, description: string) =>
  Flag.Int(name).pipe(Flag.withDefault(fallback), Flag.withDescription(`${description} (default ${fallback})`))

const toggle = (name: string, description: string) =>
  Flag.Boolean(name).pipe(Flag.withDefault(false), Flag.withoutNegation, Flag.withDescription(description))

const flags = {
  seeds: int("seeds", SIM_DEFAULTS.seeds, "How many seeds"),
  from: int("from", SIM_DEFAULTS.from, "First seed"),
  seed: Flag.Int("seed").pipe(Flag.withDescription("Run one seed and print its workload and trace"), Flag.optional),
  replay: Flag.String("replay").pipe(
    Flag.withSchema(Schema.fromJsonString(Schema.Union([BusReplay, WorkflowReplay, BusWorkflowReplay, BusFullReplay]))),
    Flag.withDescription(
      "With --seed: run this op list (a failure report prints it) instead of the seed's; in a workflow mode (--workflow, --workflow-bus, --workflow-bus-full), a list of that mode's operations"
    ),
    Flag.optional
  ),
  ops: int("ops", SIM_DEFAULTS.ops, "Operations per run"),
  sessions: int("sessions", SIM_DEFAULTS.sessions, "Sessions per world"),
  scopes: int("scopes", SIM_DEFAULTS.scopes, "Spread the sessions over this many pi scopeIds"),
  traffic: toggle("traffic", "No faults, traffic only (and no pressure)"),
  noPressure: toggle(
    "no-pressure",
    "No registration storms or floods, and the broker's usual limits: the workloads and worlds before they came (docs/testing.md, \"Pressure\")"
  ),
  hostile: toggle("hostile", "Add two hostile sessions and mix their attacks into the workload (docs/testing.md)"),
  groups: toggle(
    "groups",
    "Spread the sessions over two groups with a supervisor and its delegated child; mix in supervisor traffic and sends into the other group (docs/testing.md)"
  ),
  delivery: toggle(
    "delivery",
    "Mix sends with delivery modes (steer, queue, passive) and bursts of replace updates into the workload (delivery-v1; docs/testing.md)"
  ),
  topics: toggle("topics", "Mix topic publications and subscriptions into the workload (topics-v1; docs/testing.md)"),
  unregister: toggle(
    "unregister",
    "Sessions also leave by unregister (the client's orderly close: it confirms what it read, then unregisters) and come back under the same id with a later start; the last session registers ephemeral (ephemeral-v1, as the CLI's one-shot commands) and, once it unregisters, stays gone until the end (docs/testing.md)"
  ),
  parkedFlush: toggle(
    "parked-flush",
    "Insert one or two parked flushes into each workload: a session goes away, two or three others send it more than its outbox takes, it comes back reading slowly (its mailbox flush parked on its own reader) while they send on, leave, rejoin or unregister; outboxes of 4096 characters unless pressure makes them smaller (docs/testing.md)"
  ),
  heldReturn: toggle(
    "held-return",
    "Insert one held return into each workload: a session leaves with its last messages parked behind a slow recipient (sent with its unregister in one write, on a connection that stays open) and registers again on a new connection while they wait, then sends on; outboxes of 4096 characters unless pressure makes them smaller (simulation/heldReturn.ts; docs/testing.md)"
  ),
  custodyHold: toggle(
    "custody-hold",
    "Insert one custody hold into each workload: a recipient taken over by a new client instance while its old connection, not read by the broker, still holds a sender's unconfirmed mail in a slow write; the sender sends on, leaves and comes back while the new connection holds its mail behind that old connection's close (simulation/custodyHold.ts; docs/testing.md)"
  ),
  settleHold: toggle(
    "settle-hold",
    "Insert one settle hold into each workload: an asker's deadline comes while the reply to its ask is parked behind the answerer's mail to a slow reader, so the broker holds its settling list's answer (ask-expiry-v1); then the reader reads again, it or the answerer closes, or the asker's connection drops; and one whose reply is kept by a takeover's custody hold on the asker's session, or given back by the asker's old connection at the close that hold waits for (simulation/settleCustody.ts); outboxes of 4096 characters unless pressure makes them smaller (simulation/settleHold.ts; docs/testing.md)"
  ),
  instanceControl: toggle(
    "instance-control",
    "Insert one instance control into each workload: a receiver reads a message, stops or is killed and starts again (a new client instance), then the sender cancels or supersedes that message, which the broker must not send to the new instance (control-to-other-instance; simulation/instanceControl.ts; docs/testing.md)"
  ),
  readerReturn: toggle(
    "reader-return",
    "Insert one reader return into each workload: a reader's connection drops (or, holding a control, it unregisters) while it holds its sender's control or message unconfirmed, the sender cancels or supersedes, and the same client instance reconnects (or, after the unregister, a new process of it registers), which must be given the control (control-never-reached-reader; simulation/readerReturn.ts; docs/testing.md)"
  ),
  groupMove: toggle(
    "group-move",
    "Insert one group move into each workload: a reader holds its sender's control unconfirmed when its client instance moves the session to another group (a new process of the same instance registers it there) and, a while later, back: the control must reach it back in the first group (control-never-reached-reader; simulation/groupMove.ts; docs/testing.md). The summary says in how many runs the op reached its case (the reader's client read and confirmed the message before its control) and which seeds skipped it or fell short"
  ),
  staleAsk: toggle(
    "stale-ask",
    "Insert one stale ask into each workload: a target stops reading, an ask of it times out, and the target's connection drops after the asker's cancel_ask, giving the question back past its deadline: its asker must be told it expired (ask-expired-untold; simulation/staleAsk.ts; docs/testing.md)"
  ),
  answerTakeover: toggle(
    "answer-takeover",
    "Insert one answer by a takeover into each workload: a target's old connection holds an ask's question unconfirmed while a new client instance takes the session over and answers it, and closes past the deadline (or, half the seeds, gives it back before the deadline to the new connection, where it waits unwritten when answered, and that connection drops past the deadline): the asker, answered, must not be told it expired (expired-after-answer; simulation/answerTakeover.ts; docs/testing.md). The summary says in how many runs the op reached its case (the broker took the new instance's answer) and which seeds skipped it or fell short (no sessions connected to take, the question not written to its target within 1.5 s, or the answer not taken)"
  ),
  answerMailbox: toggle(
    "answer-mailbox",
    "Insert one answer in the mailbox case into each workload: a target holds an ask's question unconfirmed, answers it with a replace-staged reply and is killed inside the reply's window, so the question goes back to the mailbox while the reply waits behind the asker's slowed outbox; the reply is accepted with the question in the mailbox, and the target starts again past the deadline: the asker, answered, must not be told it expired (expired-after-answer; simulation/answerMailbox.ts; docs/testing.md). The op counts as reached when the target's own reply was still staged just after its close (never the broker's count of every sender's staged messages), the target's client read its acknowledgement and the ask ended with it. The summary says in how many runs the op reached its case and which seeds skipped it or fell short: no target and asker connected within 10 s, the target's 34 fillers not all staged within 1 s, the question not written in time, the reply not still staged just after the target's close (written at once, or not staged), its acknowledgement not read, or the ask not replied"
  ),
  noControls: toggle(
    "no-controls",
    "Leave out the cancels and supersedes that otherwise follow about one send in ten (simulation/controls.ts): the workloads of before they came, to tell whether a failure needs a control (docs/testing.md)"
  ),
  workflow: toggle(
    "workflow",
    "Run the workflow simulation instead: stages, parallel children, detach handshakes and terminals over the workflow layer, with its faults (docs/testing.md); honours --seed, --seeds, --from, --ops and --max-failures"
  ),
  workflowBus: toggle(
    "workflow-bus",
    "Run the bus simulation with a workflow parent session and its background children (their messages and terminals, with broker crashes and connection faults; docs/testing.md); honours --seed, --seeds, --from, --ops and --max-failures"
  ),
  parentRestarts: toggle(
    "parent-restarts",
    "With --workflow-bus (which it implies): the parent's process also ends and starts again, and its session generation is replaced in-process, its generations keeping a ParentJournal over one file and its client the grants its children were launched with; with --workflow-bus-full: the parent's generation is replaced in-process between subagent calls (docs/testing.md); not with --workflow"
  ),
  workflowBusFull: toggle(
    "workflow-bus-full",
    "Run the bus simulation with the whole workflow layer hosted: a parent with background and foreground children, a foreground parallel group, asks, a stage session with close and late asks, under broker crashes and connection faults (docs/testing.md); honours --seed, --seeds, --from, --ops and --max-failures"
  ),
  durability: Flag.Literals("durability", ["durable", "memory"]).pipe(
    Flag.withDefault("durable"),
    Flag.withDescription(
      "How the simulated broker keeps its mail: durable (a store on a simulated disk that outlives its crashes; the product default) or memory (lost with each crash) (default durable)"
    )
  ),
  connections: Flag.Literals("connections", ["adopted", "accepted"]).pipe(
    Flag.withDefault("adopted"),
    Flag.withDescription(
      "How the simulated broker takes its connections over: adopted (as the Unix-socket broker: no fiber per connection, frames pushed as data events) or accepted (a fiber per connection reading it) (default adopted)"
    )
  ),
  hostJournal: toggle(
    "host-journal",
    "Give every host a journal whose checkpoints wait simulated time (0–1.5 s), kept across generations and restored by each new one, so a generation can close in the middle of a message (known issue 15; docs/testing.md)"
  ),
  hostRefusals: toggle(
    "host-refusals",
    "With --host-journal's journals, hosts that are sometimes busy for 0–3 s and refuse hand-offs meanwhile; the session retries them and abandons what is still refused when its generation closes, for the journal to hand over again (implies --host-journal; docs/testing.md)"
  ),
  clientTimings: toggle(
    "client-timings",
    "Give every client a session starts its own timings drawn from the seed (reconnect base 5–500 ms, liveness every 1–20 s with a 0.5–5 s timeout, connect, send and list timeouts 1–10 s, rejoin grace up to 20 s; its session runtime's connect timeout 1–10 s and ask timeout 1–60 s) instead of one fixed set (docs/testing.md)"
  ),
  withholdRejoin: toggle(
    "withhold-rejoin",
    "About one client in two registers without rejoin-v1 (no feature, no instanceId: an older client), drawn per client from the seed, so its reconnects the broker sees late are takeovers; takeover-late-write is tolerated only for a takeover such a registration made or suffered (docs/testing.md)"
  ),
  strict: toggle(
    "strict",
    "Count messages lost in flight to a dying receiver as failures (also with --workflow-bus and --workflow-bus-full; not --workflow, which has no bus)"
  ),
  frames: toggle("frames", "Put every frame in the trace"),
  noShrink: toggle("no-shrink", "Report failing seeds without shrinking them"),
  maxFailures: int("max-failures", SIM_DEFAULTS.maxFailures, "Stop after this many failing seeds"),
  tolerate: Flag.String("tolerate").pipe(
    Flag.withDescription(
      "Violation kinds to report without failing, comma-separated, or \"none\" (default: the known issues, docs/testing.md; with --workflow-bus and --workflow-bus-full, of their bus, default none; not --workflow, which has no bus)"
    ),
    Flag.optional
  )
}

/** The parsed flags, as effect/cli hands them to the handler. */
type SimFlags = Command.Command.Config.Infer<typeof flags>

const isWorkflowMode = (input: SimFlags): boolean =>
  input.workflow || input.workflowBus || input.workflowBusFull || input.parentRestarts

/**
 * The flags of `input` that shape a run (`SimArgs`): what a failing seed's
 * replay command repeats. A workflow mode honours only `--ops` and
 * `--parent-restarts`, and a workflow-bus mode `--strict` and `--tolerate`
 * too (its bus ledger judges them; `--workflow` has no bus, and refuses
 * both).
 */
export const simArgsOf = (input: SimFlags): SimArgs => {
  const tolerate = Option.getOrUndefined(input.tolerate)
  if (input.workflowBusFull) {
    return { workflowBusFull: true, parentRestarts: input.parentRestarts, ops: input.ops, strict: input.strict, tolerate }
  }
  if (input.workflowBus || input.parentRestarts) {
    return { workflowBus: true, parentRestarts: input.parentRestarts, ops: input.ops, strict: input.strict, tolerate }
  }
  if (input.workflow) return { workflow: true, ops: input.ops }
  return {
    ops: input.ops,
    sessions: input.sessions,
    scopes: input.scopes,
    traffic: input.traffic,
    noPressure: input.noPressure,
    hostile: input.hostile,
    groups: input.groups,
    delivery: input.delivery,
    topics: input.topics,
    unregister: input.unregister,
    parkedFlush: input.parkedFlush,
    heldReturn: input.heldReturn,
    custodyHold: input.custodyHold,
    settleHold: input.settleHold,
    instanceControl: input.instanceControl,
    readerReturn: input.readerReturn,
    groupMove: input.groupMove,
    staleAsk: input.staleAsk,
    answerTakeover: input.answerTakeover,
    answerMailbox: input.answerMailbox,
    noControls: input.noControls,
    durability: input.durability,
    connections: input.connections,
    hostJournal: input.hostJournal,
    hostRefusals: input.hostRefusals,
    clientTimings: input.clientTimings,
    withholdRejoin: input.withholdRejoin,
    strict: input.strict,
    frames: input.frames,
    tolerate: Option.getOrUndefined(input.tolerate)
  }
}

/** The kind of world `input` runs (its `SimRequest`'s tag): which op list a `--replay` must be. */
type ReplayMode = "Seed" | "Workflow" | "WorkflowBus" | "WorkflowBusFull"

const replayModeOf = (input: SimFlags): ReplayMode =>
  input.workflowBusFull
    ? "WorkflowBusFull"
    : input.workflowBus || input.parentRestarts
    ? "WorkflowBus"
    : input.workflow
    ? "Workflow"
    : "Seed"

/** What a `--replay` of each mode is, for a usage error. */
const REPLAY_WANTED: Readonly<Record<ReplayMode, string>> = {
  Seed: "a list of bus operations ({\"_tag\":\"Send\",\"after\":…}, as a bus failure report prints them)",
  Workflow: "a list of --workflow operations ({\"pause\":…,\"op\":\"ChildSend\",…}, as a --workflow failure report prints them)",
  WorkflowBus: "a list of --workflow-bus operations ({\"_tag\":\"send\",…,\"pauseMs\":…}, as --workflow-bus --seed S prints them)",
  WorkflowBusFull:
    "a list of --workflow-bus-full operations ({\"_tag\":\"send\",…,\"pauseMs\":…}, as --workflow-bus-full --seed S prints them)"
}

/**
 * What is wrong with the ops of a workflow mode's `--replay`: a negative
 * pause, or (`--workflow`) a child or stage its world does not have;
 * undefined when nothing is.
 */
const workflowReplayProblem = (
  ops: ReadonlyArray<WorkflowOp> | ReadonlyArray<BusWorkflowOp> | ReadonlyArray<BusFullOp>
): string | undefined => {
  for (const [index, op] of ops.entries()) {
    const name = "op" in op ? op.op : op._tag
    const pause = "pause" in op ? op.pause : op.pauseMs
    if (pause < 0) return `op ${index} (${name}): its pause is 0 ms or more, not ${pause}`
    if (!("op" in op)) continue
    const children = [...("child" in op ? [op.child] : []), ...("children" in op ? op.children : [])]
    const child = children.find((c) => c < 0 || c >= WORKFLOW_CHILDREN)
    if (child !== undefined) return `op ${index} (${name}) names child ${child}; the world has children 0–${WORKFLOW_CHILDREN - 1}`
    if ("stage" in op && (op.stage < 0 || op.stage >= WORKFLOW_STAGES)) {
      return `op ${index} (${name}) names stage ${op.stage}; the world has stages 0–${WORKFLOW_STAGES - 1}`
    }
  }
  return undefined
}

/** The session indices an op names (`from`, `to`, `session`). */
const sessionsNamed = (op: Op): ReadonlyArray<number> => [
  ...("from" in op ? [op.from] : []),
  ...("to" in op ? [op.to] : []),
  ...("session" in op ? [op.session] : [])
]

/**
 * What is wrong with `input` that the flags' types let through, as a usage
 * error naming the flag and what it must be; undefined when nothing is.
 */
export const usageErrorOf = (input: SimFlags): CliError.InvalidValue | undefined => {
  const invalid = (option: string, value: string, expected: string) =>
    new CliError.InvalidValue({ option, value, expected, kind: "flag" })
  const workflowMode = isWorkflowMode(input)
  if (input.parentRestarts && input.workflow && !input.workflowBus && !input.workflowBusFull) {
    return invalid(
      "parent-restarts",
      "true",
      "--parent-restarts restarts the parent of --workflow-bus or --workflow-bus-full; the --workflow world has no bus to restart it on"
    )
  }
  if (input.strict && input.workflow && !input.workflowBus && !input.workflowBusFull && !input.parentRestarts) {
    return invalid(
      "strict",
      "true",
      "--strict judges messages lost in flight on the bus; the --workflow world has no bus (use --workflow-bus or --workflow-bus-full)"
    )
  }
  if (Option.isSome(input.tolerate) && input.workflow && !input.workflowBus && !input.workflowBusFull && !input.parentRestarts) {
    return invalid(
      "tolerate",
      input.tolerate.value,
      "--tolerate names bus violation kinds; the --workflow world has no bus, and its own violations all fail the run (use --workflow-bus or --workflow-bus-full)"
    )
  }
  if (input.seeds < 1) return invalid("seeds", String(input.seeds), "a number of seeds of at least 1")
  if (input.ops < 1) return invalid("ops", String(input.ops), "a number of operations per run of at least 1")
  if (input.maxFailures < 1) return invalid("max-failures", String(input.maxFailures), "a number of failing seeds of at least 1")
  if (!workflowMode) {
    if (input.sessions < 1) return invalid("sessions", String(input.sessions), "a number of sessions of at least 1")
    if (input.scopes < 1) return invalid("scopes", String(input.scopes), "a number of scopeIds of at least 1")
  }
  if (Option.isSome(input.tolerate) && input.tolerate.value !== "none") {
    const unknown = input.tolerate.value.split(",").filter((name) => !isViolationKind(name))
    if (unknown.length > 0) {
      return invalid(
        "tolerate",
        input.tolerate.value,
        `"none" or violation kinds, comma-separated (${unknown.map((name) => JSON.stringify(name)).join(", ")} is no violation kind; docs/testing.md lists them)`
      )
    }
  }
  if (Option.isSome(input.replay)) {
    const replay = input.replay.value
    const shown = JSON.stringify(replay).slice(0, 200)
    if (Option.isNone(input.seed)) return invalid("replay", shown, "--replay runs with --seed S: the seed of the world it replays in")
    const mode = replayModeOf(input)
    const wanted = REPLAY_WANTED[mode]
    if (mode !== "Seed") {
      const ops = mode === "Workflow"
        ? workflowReplayOf(replay)
        : mode === "WorkflowBus"
        ? busWorkflowReplayOf(replay)
        : busFullReplayOf(replay)
      if (ops === undefined) return invalid("replay", shown, wanted)
      const problem = workflowReplayProblem(ops)
      return problem === undefined ? undefined : invalid("replay", shown, problem)
    }
    const ops = busReplayOf(replay)
    if (ops === undefined) return invalid("replay", shown, wanted)
    for (const [index, op] of ops.entries()) {
      if (op.after < 0) return invalid("replay", shown, `op ${index} (${op._tag}): "after" is a pause of 0 ms or more, not ${op.after}`)
      const outside = sessionsNamed(op).find((session) => session < 0 || session >= input.sessions)
      if (outside !== undefined) {
        return invalid(
          "replay",
          shown,
          `op ${index} (${op._tag}) names session ${outside}; the world has sessions 0–${input.sessions - 1} (--sessions ${input.sessions})`
        )
      }
    }
  }
  return undefined
}

/** The request that parsed flags make (see `SimRequest`). */
export const simRequest = (input: SimFlags): SimRequest => {
  const args = simArgsOf(input)
  const replay = Option.getOrUndefined(input.replay)
  if (isWorkflowMode(input)) {
    const fields = {
      seed: Option.getOrUndefined(input.seed),
      from: input.from,
      seeds: input.seeds,
      ops: input.ops,
      maxFailures: input.maxFailures,
      args
    }
    // `usageErrorOf` refused a replay that is not the mode's op list.
    if (input.workflowBusFull) {
      return {
        _tag: "WorkflowBusFull",
        ...fields,
        replay: busFullReplayOf(replay),
        parentRestarts: input.parentRestarts,
        strict: input.strict,
        tolerate: busTolerated(input.tolerate)
      }
    }
    if (input.workflowBus || input.parentRestarts) {
      return {
        _tag: "WorkflowBus",
        ...fields,
        replay: busWorkflowReplayOf(replay),
        parentRestarts: input.parentRestarts,
        strict: input.strict,
        tolerate: busTolerated(input.tolerate)
      }
    }
    return { _tag: "Workflow", ...fields, replay: workflowReplayOf(replay) }
  }
  const workload = {
    ops: input.ops,
    sessions: input.sessions,
    ...(input.traffic
      ? {
        weights: {
          ...trafficWeights,
          ...(input.hostile ? { Hostile: HOSTILE_WEIGHT } : {}),
          ...(input.groups ? { SupervisorSend: GROUPS_SUPERVISOR_WEIGHT } : {}),
          ...(input.delivery ? { DeliverySend: DELIVERY_WEIGHT } : {}),
          ...(input.topics ? { Publish: TOPICS_PUBLISH_WEIGHT, Subscribe: TOPICS_SUBSCRIBE_WEIGHT } : {}),
          ...(input.unregister ? { Unregister: UNREGISTER_WEIGHT } : {})
        }
      }
      : {}),
    ...(input.hostile ? { hostile: true } : {}),
    ...(input.groups ? { groups: true } : {}),
    ...(input.delivery ? { delivery: true } : {}),
    ...(input.topics ? { topics: true } : {}),
    ...(input.unregister ? { unregister: true } : {}),
    ...(input.parkedFlush ? { parkedFlush: true } : {}),
    ...(input.heldReturn ? { heldReturn: true } : {}),
    ...(input.custodyHold ? { custodyHold: true } : {}),
    ...(input.settleHold ? { settleHold: true } : {}),
    ...(input.instanceControl ? { instanceControl: true } : {}),
    ...(input.readerReturn ? { readerReturn: true } : {}),
    ...(input.groupMove ? { groupMove: true } : {}),
    ...(input.staleAsk ? { staleAsk: true } : {}),
    ...(input.answerTakeover ? { answerTakeover: true } : {}),
    ...(input.answerMailbox ? { answerMailbox: true } : {}),
    ...(input.noControls ? { controls: false } : {}),
    ...(input.traffic || input.noPressure ? { pressure: false } : {})
  }
  const config: Omit<SimulationConfig, "seed"> = {
    tolerate: toleratedKinds(input.tolerate, input.hostJournal || input.hostRefusals),
    durability: input.durability,
    ...(input.connections === "accepted" ? { brokerConnections: "accepted" } : {}),
    ...(input.scopes > 1 ? { scopes: Array.from({ length: input.scopes }, (_, i) => `scope-${i + 1}`) } : {}),
    ...(input.strict ? { strictInFlight: true } : {}),
    ...(input.hostRefusals
      ? { hostJournal: { ...defaultHostJournal, refusals: defaultHostRefusals } }
      : input.hostJournal
      ? { hostJournal: defaultHostJournal }
      : {}),
    ...(input.clientTimings ? { clientTimings: defaultClientTimingRanges } : {}),
    ...(input.withholdRejoin ? { withholdRejoin: true } : {}),
    ...(input.frames ? { traceFrames: true } : {})
  }
  if (Option.isSome(input.seed)) {
    return { _tag: "Seed", seed: input.seed.value, replay: busReplayOf(replay), workload, config }
  }
  return {
    _tag: "Soak",
    soak: {
      ...workload,
      from: input.from,
      seeds: input.seeds,
      config,
      shrink: !input.noShrink,
      maxFailures: input.maxFailures,
      args
    }
  }
}

/**
 * The `sim` command: parses the flags into a `SimRequest` and hands it to
 * `run`.
 *
 * @example
 * // In a test: parse without running anything.
 * const requests: Array<SimRequest> = []
 * const command = simCommand((request) => Effect.sync(() => requests.push(request)))
 * yield* Command.runWith(command, { version: "test" })(["--seeds", "5", "--traffic"])
 */
export const simCommand = <E, R>(run: (request: SimRequest) => Effect.Effect<void, E, R>) =>
  Command.make("sim", flags, (input): Effect.Effect<void, E | CliError.ShowHelp, R> => {
    const error = usageErrorOf(input)
    // As a ShowHelp, the way effect/cli reports its own parse errors: the usage and the error, no stack trace.
    return error === undefined ? run(simRequest(input)) : Effect.fail(new CliError.ShowHelp({ commandPath: ["sim"], errors: [error] }))
  }).pipe(
    Command.withDescription(
      "Run simulation seeds and print a summary (docs/testing.md). Exits 1 when a seed fails, 2 on a bad command line."
    )
  )
