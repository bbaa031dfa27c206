/**
 * The command line of `npm run fuzz` (src/fuzz/fuzz-cli.ts), parsed with
 * effect/cli: its flags and the `CampaignOptions` they make. Running the
 * campaign is fuzz-cli.ts's job, so the parsing can be tested alone.
 */
import * as os from "node:os"
import * as Cause from "effect/Cause"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Console from "effect/Console"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import { EXIT_USAGE, ExitCode } from "../cli/exit.ts"
import { programTeardown } from "../cli/programExit.ts"
import { ATTACKS, selectAttacks } from "./attacks/catalogue.ts"
import { CAMPAIGN_TIMEOUTS, type CampaignOptions, type CampaignTimeouts } from "./Campaign.ts"
import { FINDING_KINDS, type FindingKind, isFindingKind, KNOWN_FINDINGS } from "./Findings.ts"

/** What one invocation asks for: the campaign, and whether a seed was given (else one is drawn). */
export interface FuzzRequest {
  readonly campaign: Omit<CampaignOptions, "seed">
  readonly seed: number | undefined
}

const int = (name: string, fallback: number, description: string) =>
  Flag.Int(name).pipe(Flag.withDefault(fallback), Flag.withDescription(`${description} (default ${fallback})`))

/** The longest timeout a flag takes: 2^31 − 1 ms (about 24.8 days), the most a Node timer holds. */
export const MAX_TIMEOUT_MS = 2_147_483_647

/** A timeout in ms, optional (the campaign's default otherwise); 0, negative or past `MAX_TIMEOUT_MS` is a usage error. */
const timeoutMs = (name: string, fallback: number, description: string) =>
  Flag.Int(name).pipe(
    Flag.filter(
      (ms) => ms >= 1 && ms <= MAX_TIMEOUT_MS,
      () => `a whole number of milliseconds from 1 to ${MAX_TIMEOUT_MS}`
    ),
    Flag.withDescription(`${description} (default ${fallback})`),
    Flag.optional
  )

const flags = {
  seed: Flag.Int("seed").pipe(Flag.withDescription("The campaign's seed (default: drawn from the clock, and printed)"), Flag.optional),
  frames: int("frames", 20_000, "Frames the attackers send in all"),
  bytes: Flag.Int("bytes").pipe(Flag.withDescription("Bytes the attackers send in all (default 2 KiB a frame)"), Flag.optional),
  attackers: int("attackers", 8, "Attackers running at once"),
  minutes: Flag.Int("minutes").pipe(
    Flag.withDescription("End the attack phase after this many minutes even if frames are left (the summary covers what ran)"),
    Flag.optional
  ),
  inProcess: Flag.Boolean("in-process").pipe(
    Flag.withDefault(false),
    Flag.withoutNegation,
    Flag.withDescription("Run the broker in this process (no memory measurements) instead of as `intercom broker`")
  ),
  light: Flag.Boolean("light").pipe(
    Flag.withDefault(false),
    Flag.withoutNegation,
    Flag.withDescription("Light floods: the same attacks at a fraction of the size (what the CI campaign runs)")
  ),
  only: Flag.String("only").pipe(
    Flag.withDescription("Only these attack kinds or categories, comma-separated (malformed, forged, oversized, churn, slow, log)"),
    Flag.optional
  ),
  tolerate: Flag.String("tolerate").pipe(
    Flag.withDescription("Finding kinds that do not fail the run, comma-separated; \"known\" for the known findings (default: none)"),
    Flag.optional
  ),
  runLimitMs: timeoutMs("run-limit-ms", CAMPAIGN_TIMEOUTS.runLimitMs, "Cut one attack run short after this many ms"),
  hungAfterMs: timeoutMs(
    "hung-after-ms",
    CAMPAIGN_TIMEOUTS.hungAfterMs,
    "During the attack phase: a broker alive whose health probe has had no answer for this many ms is hung (broker-hung)"
  ),
  finalRoundTripsMs: timeoutMs(
    "final-round-trips-ms",
    CAMPAIGN_TIMEOUTS.finalRoundTripsMs,
    "After the attack phase: a broker alive that has not answered the healthy sessions' final round trips within this many ms is hung"
  ),
  memoryReportMs: timeoutMs(
    "memory-report-ms",
    CAMPAIGN_TIMEOUTS.memoryReportMs,
    "A broker process that sends no memory report within this many ms of SIGUSR2 is hung"
  )
}

type FuzzFlags = Command.Command.Config.Infer<typeof flags>

const list = (text: string): ReadonlyArray<string> => text.split(",").map((item) => item.trim()).filter((item) => item !== "")

/** `--tolerate`: "known" → the known findings; else the listed kinds. */
export const toleratedFindings = (arg: Option.Option<string>): ReadonlyArray<FindingKind> =>
  Option.match(arg, {
    onNone: () => [],
    onSome: (text) =>
      text === "known"
        ? Object.keys(KNOWN_FINDINGS).filter(isFindingKind)
        : list(text).filter(isFindingKind)
  })

/** The request that parsed flags make. */
export const fuzzRequest = (input: FuzzFlags): FuzzRequest => ({
  seed: Option.getOrUndefined(input.seed),
  campaign: {
    frames: input.frames,
    attackers: input.attackers,
    mode: input.inProcess ? "in-process" : "process",
    ...(input.light ? { light: true } : {}),
    ...(Option.isSome(input.bytes) ? { bytes: input.bytes.value } : {}),
    ...(Option.isSome(input.minutes) ? { maxAttackMs: input.minutes.value * 60_000 } : {}),
    ...(Option.isSome(input.only) ? { only: list(input.only.value) } : {}),
    ...timeoutsOf(input),
    tolerate: toleratedFindings(input.tolerate)
  }
})

/** The timeouts the command line set (`timeouts`), or nothing when it set none. */
const timeoutsOf = (input: FuzzFlags): { readonly timeouts?: Partial<CampaignTimeouts> } => {
  const timeouts: Partial<CampaignTimeouts> = {
    ...(Option.isSome(input.runLimitMs) ? { runLimitMs: input.runLimitMs.value } : {}),
    ...(Option.isSome(input.hungAfterMs) ? { hungAfterMs: input.hungAfterMs.value } : {}),
    ...(Option.isSome(input.finalRoundTripsMs) ? { finalRoundTripsMs: input.finalRoundTripsMs.value } : {}),
    ...(Option.isSome(input.memoryReportMs) ? { memoryReportMs: input.memoryReportMs.value } : {})
  }
  return Object.keys(timeouts).length === 0 ? {} : { timeouts }
}

/**
 * What the command line names that does not exist: `--only` names that are
 * no attack kind or category, `--tolerate` names that are no finding kind.
 * A typo must not run every attack (an `--only` with nothing known in it
 * would) or fail a run the user meant to tolerate.
 */
export const unknownNames = (input: Pick<FuzzFlags, "only" | "tolerate">): ReadonlyArray<string> => [
  ...Option.match(input.only, { onNone: () => [], onSome: (text) => selectAttacks(list(text)).unknown.map((name) => `--only ${name}`) }),
  ...Option.match(input.tolerate, {
    onNone: () => [],
    onSome: (text) => text === "known" ? [] : list(text).filter((name) => !isFindingKind(name)).map((name) => `--tolerate ${name}`)
  })
]

/** Exit code of a campaign cut short by SIGINT (Ctrl-C), or by an interruption whose signal is unknown: 128 + 2, as shells report it. */
export const EXIT_INTERRUPTED = 130

/**
 * The signal that ended a campaign: `runFuzzMain` annotates the main
 * fiber's interruption with it, so the teardown can exit as a shell
 * reports that signal (SIGTERM 143, SIGINT 130) rather than 130 for both.
 */
export class EndingSignal extends Context.Service<EndingSignal, NodeJS.Signals>()("effect-intercom/fuzz/EndingSignal") {}

/** The signals that end a campaign (Ctrl-C; a CI job's timeout, `kill`). */
const ENDING_SIGNALS: ReadonlyArray<NodeJS.Signals> = ["SIGINT", "SIGTERM"]

/** 128 + the signal's number, as a shell reports a process that signal ended. */
const signalExitCode = (signal: NodeJS.Signals): number => 128 + os.constants.signals[signal]

/**
 * `NodeRuntime.runMain`, except that the interruption a signal causes
 * carries the signal (`EndingSignal`, an annotation of the cause): the
 * teardown sees an interruption, and `fuzzTeardown` reads which signal it was.
 * Like `runMain`, a signal interrupts the main fiber (its finalizers stop the
 * broker) and the process exits with the teardown's code once it has ended.
 */
export const runFuzzMain = Runtime.makeRunMain(({ fiber, teardown }) => {
  const listeners = ENDING_SIGNALS.map((signal) => {
    const listener = () => fiber.interruptUnsafe(fiber.id, Context.make(EndingSignal, signal))
    process.on(signal, listener)
    return [signal, listener] as const
  })
  fiber.addObserver((exit) => {
    for (const [signal, listener] of listeners) process.removeListener(signal, listener)
    // A signal's interruption always has a non-zero code; a success leaves the event loop to end by itself.
    teardown(exit, (code) => {
      if (code !== 0) process.exit(code)
    })
  })
})

/**
 * `runFuzzMain` teardown of `npm run fuzz`: like the CLI's, except that a
 * campaign ended by a signal exits 128 + that signal (SIGINT 130, SIGTERM
 * 143; 130 for an interruption without one), not 0 — its exit code is its
 * verdict, and an interrupted campaign checked nothing.
 */
export const fuzzTeardown: Runtime.Teardown = (exit, onExit) => {
  if (Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)) {
    const signal = Context.getOrUndefined(Cause.annotations(exit.cause), EndingSignal)
    return onExit(signal === undefined ? EXIT_INTERRUPTED : signalExitCode(signal))
  }
  return programTeardown(exit, onExit)
}

/**
 * The `fuzz` command: parses the flags into a `FuzzRequest` and hands it to
 * `run`; names it does not know end it with exit code 2 before anything runs.
 */
export const fuzzCommand = <E, R>(run: (request: FuzzRequest) => Effect.Effect<void, E, R>) =>
  Command.make("fuzz", flags, (input): Effect.Effect<void, E | ExitCode, R> => {
    const unknown = unknownNames(input)
    if (unknown.length === 0) return run(fuzzRequest(input))
    return Console.error(
      `fuzz: unknown ${unknown.join(", ")}.\n  attack kinds: ${ATTACKS.map((attack) => attack.kind).join(", ")}\n  categories: ${
        [...new Set(ATTACKS.map((attack) => attack.category))].join(", ")
      }\n  finding kinds: ${Object.keys(FINDING_KINDS).join(", ")}, or "known"`
    ).pipe(Effect.andThen(Effect.fail(new ExitCode({ code: EXIT_USAGE }))))
  }).pipe(
    Command.withDescription(
      "Attack a real broker with malformed, forged and oversized frames while healthy sessions keep working (docs/testing.md, \"The fuzzer\"). Exits 1 on a finding that is not tolerated, 2 on a bad command line (unknown attack or finding names too), 130 when Ctrl-C (SIGINT) ends it and 143 when SIGTERM does."
    )
  )
