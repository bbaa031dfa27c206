/**
 * `node bench/alloc.ts` — what the broker allocates per message, and by whom:
 * the garbage behind the collector's share and most of the page faults of
 * issue 16's profile (docs/performance.md, "Garbage, third stop").
 *
 *   node bench/alloc.ts [--only w64,fanin,ask] [--broker-cmd "<cmd>"] [--interval bytes] [--top N] [--faults-only]
 *
 * Runs bench/workloads.ts's workloads against one broker (default: this
 * tree's build in memory mode) with bench/alloc-hook.mjs preloaded. The
 * workload's measured interval (after its warm-up; `TargetSpec.measure`)
 * starts and stops V8's sampling heap profiler in the broker (SIGUSR2), which
 * keeps the objects the collectors freed, so the profile counts every
 * allocation. Printed per workload: bytes allocated per unit (message, or
 * ask round trip) and minor page faults per unit (/proc) in the interval;
 * the functions that allocated most, through the bundle's source map (as
 * bench/profile.ts names them), by self and by the innermost frame of our own
 * code (`src/…`) on the stack. `--faults-only` leaves the profiler off, so
 * page faults are counted without its own allocations. A measurement, never
 * a test; not part of CI.
 */
import fs from "node:fs"
import path from "node:path"
import { eachArg } from "./args.ts"
import { sourceMapResolver } from "./profile-cpuprofile.ts"
import { readKernelCounts } from "./profile-proc.ts"
import { customBrokerSpec, makeTempDir, removeTempDir, repoRoot, type TargetSpec } from "./targets.ts"
import { defaultSizes, workloads } from "./workloads.ts"

const usage = `usage: node bench/alloc.ts [--only w64,fanin,ask] [--broker-cmd "<cmd with {dir}>"] [--interval bytes] [--top N] [--faults-only]
default broker: node dist/bin/intercom.mjs broker --dir {dir} --max-sessions 16384 --durability memory`

/** A node of V8's sampling heap profile. */
interface ProfileNode {
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number; readonly columnNumber: number }
  readonly selfSize: number
  readonly children: ReadonlyArray<ProfileNode>
}

const options = { only: ["w64", "fanin", "ask"], brokerCmd: "", interval: 256, top: 20, faultsOnly: false }
eachArg(process.argv.slice(2), usage, (arg) => {
  if (arg.key === "--only") options.only = arg.list()
  else if (arg.key === "--broker-cmd") options.brokerCmd = arg.value()
  else if (arg.key === "--interval") options.interval = arg.int(1, 1 << 20)
  else if (arg.key === "--top") options.top = arg.int(1, 1000)
  else if (arg.key === "--faults-only") options.faultsOnly = true
  else throw new Error(`unknown argument ${arg.raw}\n${usage}`)
})

const hook = path.join(repoRoot, "bench", "alloc-hook.mjs")
const command = options.brokerCmd !== ""
  ? options.brokerCmd
  : `node ${path.join(repoRoot, "dist", "bin", "intercom.mjs")} broker --dir {dir} --max-sessions 16384 --durability memory`
const [first, ...rest] = command.trim().split(/\s+/)
if (first !== "node") throw new Error(`--broker-cmd must start with node (the hook is preloaded with --import)\n${usage}`)
const base = customBrokerSpec(["node", "--import", hook, ...rest].join(" "))
const resolve = sourceMapResolver(repoRoot)

/** `file:line function` for a profile node, through the source map when the script has one. */
const nameOf = (node: ProfileNode): string => {
  const { url, lineNumber, columnNumber, functionName } = node.callFrame
  const mapped = url === "" ? undefined : resolve(url, lineNumber, columnNumber)
  if (mapped !== undefined) return `${mapped.source}:${mapped.line} ${mapped.name ?? functionName}`
  const file = url.replace(/^.*node_modules\//, "").replace(/^file:\/\/.*\//, "")
  return `${file === "" ? "(builtin)" : file}:${lineNumber + 1} ${functionName === "" ? "(anonymous)" : functionName}`
}

/** Profiles the broker has written to `dir` so far. */
const profilesIn = (dir: string): number => fs.readdirSync(dir).filter((f) => f.endsWith(".heapprofile")).length

/**
 * Waits (synchronously: the measure hooks are) until the broker has written its
 * `count`-th profile. The hook writes it from the signal's handler, on the
 * broker's event loop; a workload that stops the broker right after the
 * interval used to lose it, and the run printed 0 bytes.
 */
const awaitProfiles = (dir: string, count: number): void => {
  const pause = new Int32Array(new SharedArrayBuffer(4))
  for (let waited = 0; profilesIn(dir) < count; waited += 20) {
    if (waited >= 30_000) throw new Error(`the broker wrote no heap profile within 30 s (${dir}): was bench/alloc-hook.mjs loaded?`)
    Atomics.wait(pause, 0, 0, 20)
  }
}

/** Adds `bytes` under `key`. */
const add = (map: Map<string, number>, key: string, bytes: number): void => {
  map.set(key, (map.get(key) ?? 0) + bytes)
}

/** The `n` largest entries as lines of bytes per unit. */
const largest = (map: Map<string, number>, units: number, n: number): Array<string> =>
  [...map].sort((a, b) => b[1] - a[1]).slice(0, n).map(([key, bytes]) => `  ${(bytes / units).toFixed(0).padStart(7)}  ${key}`)

const selected = workloads(defaultSizes).filter((w) => options.only.includes(w.name))
for (const name of options.only) {
  if (!selected.some((w) => w.name === name)) throw new Error(`--only: unknown workload ${name}\n${usage}`)
}

for (const w of selected) {
  const dir = makeTempDir()
  process.env["ALLOC_PROFILE_PREFIX"] = path.join(dir, "alloc")
  process.env["ALLOC_SAMPLING_INTERVAL"] = String(options.interval)
  let units = 0
  let intervals = 0
  let faults = 0
  let faultsAtBegin = 0
  const spec: TargetSpec = {
    ...base,
    measure: {
      begin: (pid) => {
        faultsAtBegin = readKernelCounts(pid).minflt
        if (!options.faultsOnly) process.kill(pid, "SIGUSR2")
      },
      end: (pid, measured) => {
        faults += readKernelCounts(pid).minflt - faultsAtBegin
        units += measured
        if (options.faultsOnly) return
        process.kill(pid, "SIGUSR2")
        awaitProfiles(dir, ++intervals)
      }
    }
  }
  try {
    const result = await w.run(spec)
    const bySelf = new Map<string, number>()
    const byOurs = new Map<string, number>()
    let total = 0
    const walk = (node: ProfileNode, stack: ReadonlyArray<string>): void => {
      const here = [...stack, nameOf(node)]
      if (node.selfSize > 0) {
        total += node.selfSize
        add(bySelf, here[here.length - 1]!, node.selfSize)
        add(byOurs, here.findLast((frame) => frame.startsWith("src/")) ?? "(no frame of ours)", node.selfSize)
      }
      for (const child of node.children) walk(child, here)
    }
    for (const file of fs.readdirSync(dir).filter((f) => f.endsWith(".heapprofile"))) { // written whole (renamed)
      const profile: { readonly head: ProfileNode } = JSON.parse(fs.readFileSync(path.join(dir, file), "utf8"))
      walk(profile.head, [])
    }
    const per = units === 0 ? Number.NaN : 1 / units
    console.log(
      `${w.name}: ${units} units; ${options.faultsOnly ? "" : `${(total * per).toFixed(0)} bytes allocated per unit; `}` +
        `${(faults * per).toFixed(3)} minor page faults per unit${result.notes.length > 0 ? `; notes: ${result.notes.join("; ")}` : ""}`
    )
    if (!options.faultsOnly && units > 0) {
      console.log("  bytes/unit, by function (self):", "\n" + largest(bySelf, units, options.top).join("\n"))
      console.log("  bytes/unit, by the innermost function of ours on the stack:", "\n" + largest(byOurs, units, options.top).join("\n"))
    }
  } finally {
    removeTempDir(dir)
  }
}
