/**
 * `npm run sim -- [options]`: runs simulation seeds and prints a summary.
 *
 *   --seeds N      how many seeds (default 1000)
 *   --from S       first seed (default 1)
 *   --seed S       run one seed and print its workload and trace
 *   --replay JSON  with --seed: run this op list (a failure report prints it) instead of the seed's
 *   --ops N        operations per run (default 40)
 *   --sessions N   sessions per world (default 4)
 *   --scopes N     spread sessions over N pi scopeIds (default 1)
 *   --traffic      no faults, traffic only
 *   --strict       count messages lost in flight to a dying receiver as failures
 *   --frames       with --seed: every frame in the trace
 *   --no-shrink    report failing seeds without shrinking them
 *   --max-failures N  stop after N failing seeds (default 5)
 *   --tolerate K   violation kinds to report without failing, comma-separated
 *                  (default: the known issues, see docs/testing.md; "none" for none)
 *
 * Exits 1 when any seed fails.
 */
import { Effect, Schema } from "effect"
import type { SimulationConfig } from "./Simulation.ts"
import type { ViolationKind } from "./Ledger.ts"
import { formatSummary, KNOWN_ISSUES, soak } from "./Soak.ts"
import {
  formatOp,
  generateWorkload,
  type Op,
  OpSchema,
  runWorkload,
  sessionNames,
  trafficWeights,
  type WorkloadOptions
} from "./Workload.ts"

const parseOps = (json: string): ReadonlyArray<Op> => Schema.decodeUnknownSync(Schema.fromJsonString(Schema.Array(OpSchema)))(json)

const args = process.argv.slice(2)
const flag = (name: string): boolean => args.includes(`--${name}`)
const number = (name: string, fallback: number): number => {
  const index = args.indexOf(`--${name}`)
  if (index < 0) return fallback
  const value = Number(args[index + 1])
  if (!Number.isSafeInteger(value)) {
    console.error(`--${name} needs an integer`)
    process.exit(2)
  }
  return value
}

const text = (name: string): string | undefined => {
  const index = args.indexOf(`--${name}`)
  return index < 0 ? undefined : args[index + 1]
}
const VIOLATION_KINDS: ReadonlyArray<ViolationKind> = [
  "silent-loss",
  "duplicate-delivery",
  "duplicate-on-wire",
  "fifo",
  "misrouted",
  "scope-leak",
  "ask-unsettled",
  "ask-wrong-reply",
  "registry-mismatch",
  "untold-eviction",
  "stranded-mail",
  "fiber-leak",
  "mailbox-not-empty",
  "not-reconnected",
  "lost-in-flight"
]
const tolerateArg = text("tolerate")
const tolerate: ReadonlyArray<ViolationKind> = tolerateArg === undefined
  ? KNOWN_ISSUES
  : tolerateArg === "none"
  ? []
  : VIOLATION_KINDS.filter((kind) => tolerateArg.split(",").includes(kind))

const sessions = number("sessions", 4)
const scopeCount = number("scopes", 1)
const workload: WorkloadOptions = {
  ops: number("ops", 40),
  sessions,
  ...(flag("traffic") ? { weights: trafficWeights } : {})
}
const config: Omit<SimulationConfig, "seed"> = {
  tolerate,
  ...(scopeCount > 1 ? { scopes: Array.from({ length: scopeCount }, (_, i) => `scope-${i + 1}`) } : {}),
  ...(flag("strict") ? { strictInFlight: true } : {}),
  ...(flag("frames") ? { traceFrames: true } : {})
}

const main = Effect.gen(function*() {
  if (args.includes("--seed")) {
    const seed = number("seed", 1)
    const replay = text("replay")
    const ops: ReadonlyArray<Op> = replay === undefined ? generateWorkload(seed, sessions, workload) : parseOps(replay)
    const names = sessionNames(sessions)
    console.log(`seed ${seed}, ${ops.length} ops:`)
    for (const op of ops) console.log(`  ${formatOp(op, names)}`)
    const report = yield* runWorkload({ ...config, seed }, ops, workload)
    console.log(report.trace.join("\n"))
    const { trace: _trace, ...rest } = report
    console.log(JSON.stringify(rest, null, 2))
    return report.ok
  }
  const seeds = number("seeds", 1000)
  const started = performance.now()
  let done = 0
  const summary = yield* soak({
    ...workload,
    from: number("from", 1),
    seeds,
    config,
    shrink: !flag("no-shrink"),
    maxFailures: number("max-failures", 5),
    onSeed: () =>
      Effect.sync(() => {
        done++
        if (process.stderr.isTTY && done % 100 === 0) process.stderr.write(`\r${done}/${seeds}`)
      })
  })
  if (process.stderr.isTTY) process.stderr.write("\r")
  console.log(formatSummary(summary, performance.now() - started))
  return summary.failures.length === 0
})

Effect.runPromise(main).then(
  (ok) => process.exit(ok ? 0 : 1),
  (error: unknown) => {
    console.error(error)
    process.exit(2)
  }
)
