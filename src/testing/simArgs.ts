/**
 * The replay command of a failing seed: `npm run sim -- --seed N` with every
 * flag that shaped the run and differs from its default, so that running the
 * printed line runs the same workload in the same world and judges it the
 * same way. One function for every mode (the bus soak, `--workflow`,
 * `--workflow-bus`, `--workflow-bus-full`); the command line
 * (simCommand.ts) hands the flags it parsed, a soak started from code hands
 * what its options say.
 */

/**
 * The flags of `npm run sim` that shape a run, as parsed; absent means the
 * default. Seed selection (`--seeds`, `--from`, `--seed`, `--replay`) and
 * reporting (`--no-shrink`, `--max-failures`) are not here: a replay
 * command sets its own seed.
 */
export interface SimArgs {
  readonly workflow?: boolean
  readonly workflowBus?: boolean
  readonly workflowBusFull?: boolean
  readonly parentRestarts?: boolean
  readonly ops?: number
  readonly sessions?: number
  readonly scopes?: number
  readonly traffic?: boolean
  readonly noPressure?: boolean
  readonly hostile?: boolean
  readonly groups?: boolean
  readonly delivery?: boolean
  readonly topics?: boolean
  readonly unregister?: boolean
  readonly parkedFlush?: boolean
  readonly heldReturn?: boolean
  readonly custodyHold?: boolean
  readonly settleHold?: boolean
  readonly instanceControl?: boolean
  readonly readerReturn?: boolean
  readonly groupMove?: boolean
  readonly staleAsk?: boolean
  readonly answerTakeover?: boolean
  readonly answerMailbox?: boolean
  readonly noControls?: boolean
  readonly durability?: "durable" | "memory"
  readonly connections?: "adopted" | "accepted"
  readonly hostJournal?: boolean
  readonly hostRefusals?: boolean
  readonly clientTimings?: boolean
  readonly withholdRejoin?: boolean
  readonly strict?: boolean
  readonly frames?: boolean
  /** `--tolerate` as given (`none`, or comma-separated kinds); absent: the default (the known issues). */
  readonly tolerate?: string | undefined
}

/** The defaults of `npm run sim`'s numeric flags. */
export const SIM_DEFAULTS = { seeds: 1000, from: 1, ops: 40, sessions: 4, scopes: 1, maxFailures: 5 } as const

/** The mode flags, printed before `--seed` (`npm run sim -- --workflow --seed 3`). */
const modeArgv = (args: SimArgs): ReadonlyArray<string> => [
  ...(args.workflow === true ? ["--workflow"] : []),
  ...(args.workflowBus === true ? ["--workflow-bus"] : []),
  ...(args.workflowBusFull === true ? ["--workflow-bus-full"] : []),
  ...(args.parentRestarts === true ? ["--parent-restarts"] : [])
]

/** The other flags that differ from their defaults, printed after `--seed`. */
const worldArgv = (args: SimArgs): ReadonlyArray<string> => {
  const numeric = (flag: string, value: number | undefined, fallback: number) =>
    value === undefined || value === fallback ? [] : [`--${flag}`, String(value)]
  const toggle = (flag: string, on: boolean | undefined) => on === true ? [`--${flag}`] : []
  return [
    ...toggle("hostile", args.hostile),
    ...toggle("groups", args.groups),
    ...toggle("delivery", args.delivery),
    ...toggle("topics", args.topics),
    ...toggle("unregister", args.unregister),
    ...toggle("parked-flush", args.parkedFlush),
    ...toggle("held-return", args.heldReturn),
    ...toggle("custody-hold", args.custodyHold),
    ...toggle("settle-hold", args.settleHold),
    ...toggle("instance-control", args.instanceControl),
    ...toggle("reader-return", args.readerReturn),
    ...toggle("group-move", args.groupMove),
    ...toggle("stale-ask", args.staleAsk),
    ...toggle("answer-takeover", args.answerTakeover),
    ...toggle("answer-mailbox", args.answerMailbox),
    ...toggle("no-controls", args.noControls),
    ...toggle("host-journal", args.hostJournal === true && args.hostRefusals !== true),
    ...toggle("host-refusals", args.hostRefusals),
    ...toggle("client-timings", args.clientTimings),
    ...toggle("withhold-rejoin", args.withholdRejoin),
    ...(args.durability === "memory" ? ["--durability", "memory"] : []),
    ...(args.connections === "accepted" ? ["--connections", "accepted"] : []),
    ...numeric("ops", args.ops, SIM_DEFAULTS.ops),
    ...numeric("sessions", args.sessions, SIM_DEFAULTS.sessions),
    ...numeric("scopes", args.scopes, SIM_DEFAULTS.scopes),
    ...toggle("traffic", args.traffic),
    ...toggle("no-pressure", args.noPressure === true && args.traffic !== true),
    ...toggle("strict", args.strict),
    ...toggle("frames", args.frames),
    ...(args.tolerate === undefined ? [] : ["--tolerate", args.tolerate])
  ]
}

/** A word as a shell reads it back: bare when it is plain, else in single quotes. */
const shellWord = (word: string): string => /^[\w,.:=/-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`

/**
 * The arguments that run `seed` again as `args` ran it, and `replay` (an op
 * list, printed as JSON) instead of the seed's workload when given.
 *
 * @example
 * replayArgv(26, { tolerate: "none", ops: 12 }) // ["--seed", "26", "--ops", "12", "--tolerate", "none"]
 */
export const replayArgv = (seed: number, args: SimArgs, replay?: unknown): ReadonlyArray<string> => [
  ...modeArgv(args),
  "--seed",
  String(seed),
  ...worldArgv(args),
  ...(replay === undefined ? [] : ["--replay", JSON.stringify(replay)])
]

/**
 * `replayArgv` as a command to paste into a shell.
 *
 * @example
 * replayCommand(26, { tolerate: "none" }) // "npm run sim -- --seed 26 --tolerate none"
 */
export const replayCommand = (seed: number, args: SimArgs, replay?: unknown): string =>
  `npm run sim -- ${replayArgv(seed, args, replay).map(shellWord).join(" ")}`
