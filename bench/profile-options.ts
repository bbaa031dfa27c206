/**
 * bench:profile's command line: its options, their parsing and the targets
 * they select (bench/targets.ts's specs). Kept apart from the run
 * (bench/profile-run.ts) and the report (bench/profile.ts).
 *
 * `--relay-flags a,b` starts the raw relay with those Node flags before its
 * script (the relay otherwise runs with none), e.g.
 * `--relay-flags=--max-semi-space-size=4`, the young generation our broker
 * runs with (`BROKER_NODE_FLAGS`), so a per-function comparison does not mix
 * two GC settings.
 */
import fs from "node:fs"
import path from "node:path"
import { brokerEntryPoint } from "../src/config/install.ts"
import { eachArg, helpOrUnknown, parseTargets } from "./args.ts"
import {
  brokerSpec,
  customBrokerSpec,
  findNatsServer,
  memoryBrokerSpec,
  natsSpec,
  rawSpec,
  repoRoot,
  type TargetName,
  type TargetSpec
} from "./targets.ts"

/** The usage text. */
export const usage = `usage: node bench/profile.ts [--only w64,fanin,ask] [--targets raw,broker,memory] [--reps N]
                             [--broker-cmd "<cmd with {dir}/{sock}>"] [--interval µs] [--no-unprofiled]
                             [--no-cpu-prof] [--keep-profiles dir] [--perf] [--perf-hz N] [--markdown] [--quick] [--out file.json]
                             [--relay-flags <node flags, comma-separated>]
--relay-flags: Node flags for the raw relay, e.g. --relay-flags=--max-semi-space-size=4 (the broker's young generation)
--no-cpu-prof: /proc (and --perf) only: V8 works without its profiler's code logging
--perf:  also \`perf record\` every target's threads in the measured intervals (on-CPU: kernel, SQLite, GC, compiler, JS)
workloads with a measured interval: w1 w64 sustained w64-steady fanin fanin-steady ask payload-100B payload-10KiB payload-500KiB startup
targets: raw, broker (ours, durable, or --broker-cmd), memory (ours, --durability memory), nats (/proc only)`

/** The workloads that mark their measured interval (bench/workloads.ts calls `measure`). */
export const MEASURED = /^(w1|w64|sustained|w64-steady|fanin|fanin-steady|ask|payload-.*|startup)$/

/** The CPU-per-unit metric of a plain run of each workload, in µs. */
export const plainCpuPerUnit = (workload: string, metrics: Record<string, number>): number | undefined => {
  if (workload === "ask") return metrics["cpuUsPerRound"]
  if (workload === "startup") {
    const ms = metrics["healthCpuMs"]
    return ms === undefined ? undefined : ms * 1000
  }
  return metrics["cpuUsPerMsg"]
}

/** What the command line asked for. */
export interface Options {
  only: Array<string>
  targets: Array<TargetName>
  reps: number
  brokerCmd: string | undefined
  intervalUs: number
  /** Run the targets under `--cpu-prof` (off: /proc and perf only, for V8's own work without its profiler). */
  cpuProf: boolean
  unprofiled: boolean
  keep: string | undefined
  /** `perf record` at this rate (Hz) on every target too; undefined: no perf. */
  perfHz: number | undefined
  markdown: boolean
  quick: boolean
  out: string
  /** Node flags the raw relay starts with (before its script); empty: none, as in bench/run.ts. */
  relayFlags: Array<string>
}

/** Parses the command line; throws with the usage on a bad argument. */
export const parseArgs = (argv: ReadonlyArray<string>): Options => {
  const o: Options = {
    only: [],
    targets: ["raw", "broker", "memory"],
    reps: 2,
    brokerCmd: process.env["BENCH_BROKER_CMD"],
    intervalUs: 250,
    cpuProf: true,
    unprofiled: true,
    keep: undefined,
    perfHz: undefined,
    markdown: false,
    quick: false,
    out: path.join(repoRoot, "bench", "results", "profile.json"),
    relayFlags: []
  }
  eachArg(argv, usage, (arg) => {
    const { key, value } = arg
    switch (key) {
      case "--only":
        o.only.push(...arg.list())
        break
      case "--targets":
        o.targets = parseTargets(arg.list())
        break
      case "--reps":
        o.reps = arg.int(1, 20)
        break
      case "--broker-cmd":
        o.brokerCmd = value()
        break
      case "--interval":
        o.intervalUs = arg.int(50, 10_000)
        break
      case "--no-cpu-prof":
        o.cpuProf = false
        break
      case "--no-unprofiled":
        o.unprofiled = false
        break
      case "--keep-profiles":
        o.keep = path.resolve(value())
        break
      case "--perf":
        o.perfHz = 1999
        break
      case "--perf-hz":
        o.perfHz = arg.int(100, 20_000)
        break
      case "--markdown":
        o.markdown = true
        break
      case "--quick":
        o.quick = true
        break
      case "--out":
        o.out = path.resolve(value())
        break
      case "--relay-flags":
        o.relayFlags = arg.list()
        break
      default:
        helpOrUnknown(arg, usage)
    }
  })
  if (o.only.length === 0) o.only = ["w64", "fanin", "ask"]
  return o
}

/** The raw relay started with `flags` after the Node binary (and before `--cpu-prof`'s, which go first). */
const relayWithFlags = (flags: ReadonlyArray<string>): TargetSpec => ({
  ...rawSpec,
  argv: (dir, maxSessions) => {
    const [node, ...rest] = rawSpec.argv(dir, maxSessions)
    return node === undefined ? rest : [node, ...flags, ...rest]
  }
})

/** The specs of the targets asked for (NATS skipped with a note when not found). */
export const resolveSpecs = (opts: Options): Map<TargetName, TargetSpec> => {
  const specs = new Map<TargetName, TargetSpec>()
  const built = fs.existsSync(brokerEntryPoint())
  for (const t of opts.targets) {
    if (t === "raw") specs.set(t, opts.relayFlags.length === 0 ? rawSpec : relayWithFlags(opts.relayFlags))
    else if (t === "broker" && opts.brokerCmd !== undefined) specs.set(t, customBrokerSpec(opts.brokerCmd))
    else if (t === "broker" || t === "memory") {
      if (!built) throw new Error(`${t}: the built CLI was not found (run \`npm run build\`, or give --broker-cmd)`)
      specs.set(t, t === "broker" ? brokerSpec : memoryBrokerSpec)
    } else {
      const binary = findNatsServer()
      if (binary === undefined) process.stderr.write("bench:profile: nats-server not found on the PATH: the NATS column is skipped\n")
      else specs.set(t, natsSpec(binary))
    }
  }
  return specs
}
