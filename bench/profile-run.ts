/**
 * One profiled run of a workload against a target: the target started under
 * `--cpu-prof` (and `perf record` with `--perf`), the workload's measured
 * intervals marked through `TargetSpec.measure`, /proc read at both ends,
 * and, once the target has exited, its profile and perf samples counted
 * inside those intervals. Owns the run's temporary directory.
 */
import fs from "node:fs"
import path from "node:path"
import { countSamples, emptyCounts, type Interval, mergeCounts, parseCpuProfile, pidOfProfileFile, type ProfileCounts, sourceMapResolver } from "./profile-cpuprofile.ts"
import type { Options } from "./profile-options.ts"
import { countPerf, emptyPerfCounts, mergePerf, type PerfCounts, perfArgv, perfScript } from "./profile-perf.ts"
import {
  addGroupCpu,
  cpuBetween,
  type GroupCpu,
  type KernelCounts,
  kernelCountsBetween,
  readKernelCounts,
  readThreads,
  type ThreadSnapshot,
  zeroGroupCpu,
  zeroKernelCounts
} from "./profile-proc.ts"
import type { Measured } from "./profile-split.ts"
import { clockTicksPerSecond, makeTempDir, removeTempDir, repoRoot, type TargetSpec } from "./targets.ts"
import type { Workload } from "./workloads.ts"


/** The process's monotonic clock in µs: the clock a `.cpuprofile`'s timestamps use. */
const nowUs = (): number => Number(process.hrtime.bigint() / 1000n)

interface Window {
  readonly pid: number
  readonly interval: Interval
  readonly units: number
  readonly cpu: GroupCpu
  readonly kernel: KernelCounts
  /** Bytes this process (the bench's clients) read in the interval. */
  readonly clientRead: number
}

/** `argv` with `--cpu-prof` options after the Node binary; unchanged when the target is not this Node. */
const withCpuProf = (argv: ReadonlyArray<string>, dir: string, intervalUs: number): ReadonlyArray<string> => {
  const [file, ...rest] = argv
  if (file !== process.execPath) return argv
  return [file, "--cpu-prof", `--cpu-prof-dir=${dir}`, `--cpu-prof-interval=${intervalUs}`, ...rest]
}

/** What one profiled run measured, with the workload's own metrics and notes. */
export interface ProfiledRun {
  readonly measured: Measured
  readonly metrics: Record<string, number>
  readonly notes: Array<string>
}

/** Runs `w` once against `spec` under the profiler (see the module header). */
export const runProfiled = async (
  w: Workload,
  spec: TargetSpec,
  opts: Options,
  label: string,
  perf: string | undefined
): Promise<ProfiledRun> => {
  const profDir = makeTempDir()
  let perfFiles = 0
  const windows: Array<Window> = []
  const open = new Map<number, { from: number; before: ThreadSnapshot; kernel: KernelCounts; clientRead: number }>()
  const ticks = clockTicksPerSecond()
  const profiled: TargetSpec = {
    ...spec,
    argv: (dir, maxSessions) => {
      const plainArgv = spec.argv(dir, maxSessions)
      const argv = opts.cpuProf ? withCpuProf(plainArgv, profDir, opts.intervalUs) : plainArgv
      if (perf === undefined || opts.perfHz === undefined || argv[0] !== process.execPath) return argv
      return perfArgv(perf, path.join(profDir, `run-${perfFiles++}.perf`), opts.perfHz, argv)
    },
    measure: {
      begin: (pid) => {
        // This process's own reads (its clients'), taken outside the /proc reads below.
        const clientRead = readKernelCounts(process.pid).rchar
        const kernel = readKernelCounts(pid)
        const before = readThreads(pid, ticks)
        open.set(pid, { from: nowUs(), before, kernel, clientRead })
      },
      end: (pid, units) => {
        const to = nowUs()
        const after = readThreads(pid, ticks)
        const kernel = readKernelCounts(pid)
        const clientRead = readKernelCounts(process.pid).rchar
        const b = open.get(pid)
        open.delete(pid)
        if (b === undefined) return
        windows.push({
          pid,
          interval: { from: b.from, to },
          units,
          cpu: cpuBetween(b.before, after),
          kernel: kernelCountsBetween(b.kernel, kernel),
          clientRead: clientRead - b.clientRead
        })
      }
    }
  }
  const notes: Array<string> = []
  try {
    const r = await w.run(profiled)
    notes.push(...r.notes)
    let counts: ProfileCounts | undefined
    const files = fs.readdirSync(profDir).filter((f) => f.endsWith(".cpuprofile"))
    if (opts.cpuProf && withCpuProf(spec.argv("/x", undefined), profDir, opts.intervalUs).includes("--cpu-prof")) {
      // Written by the target at exit: stop() has waited for it.
      counts = emptyCounts()
      const resolve = sourceMapResolver(repoRoot)
      for (const pid of new Set(windows.map((x) => x.pid))) {
        const file = files.find((f) => pidOfProfileFile(f) === pid)
        if (file === undefined) {
          notes.push(`no profile from pid ${pid} (did it exit on SIGTERM?)`)
          continue
        }
        const parsed = parseCpuProfile(JSON.parse(fs.readFileSync(path.join(profDir, file), "utf8")))
        if (parsed instanceof Error) {
          notes.push(`${file}: ${parsed.message}`)
          continue
        }
        countSamples(parsed, windows.filter((x) => x.pid === pid).map((x) => x.interval), resolve, counts)
      }
      if (opts.keep !== undefined) {
        fs.mkdirSync(opts.keep, { recursive: true })
        for (const f of files) fs.copyFileSync(path.join(profDir, f), path.join(opts.keep, `${w.name}.${label}.${f}`))
      }
    }
    if (windows.length === 0) notes.push("the workload marked no measured interval")
    let perfCounts: PerfCounts | undefined
    if (perf !== undefined && perfFiles > 0) {
      perfCounts = emptyPerfCounts()
      const perfWindows = windows.map((x) => ({ pid: x.pid, from: x.interval.from, to: x.interval.to }))
      for (const f of fs.readdirSync(profDir).filter((x) => x.endsWith(".perf"))) {
        try {
          countPerf(perfScript(perf, path.join(profDir, f)), perfWindows, perfCounts)
        } catch (e) {
          notes.push(`perf script ${f}: ${e instanceof Error ? e.message.split("\n")[0] : String(e)}`)
        }
        // Kept for `perf report` (--keep-profiles), like the V8 profiles.
        if (opts.keep !== undefined) {
          fs.mkdirSync(opts.keep, { recursive: true })
          fs.copyFileSync(path.join(profDir, f), path.join(opts.keep, `${w.name}.${label}.${f}`))
        }
      }
    }
    return {
      measured: {
        units: windows.reduce((s, x) => s + x.units, 0),
        cpu: windows.reduce((s, x) => addGroupCpu(s, x.cpu), zeroGroupCpu()),
        counts,
        perf: perfCounts,
        kernel: windows.reduce((sum, x) => kernelCountsBetween(zeroKernelCounts(), x.kernel, sum), zeroKernelCounts()),
        clientRead: windows.reduce((sum, x) => sum + x.clientRead, 0)
      },
      metrics: r.metrics,
      notes
    }
  } finally {
    removeTempDir(profDir)
  }
}

/** Sums two runs' measurements. */
export const addMeasured = (a: Measured, b: Measured): Measured => ({
  units: a.units + b.units,
  cpu: addGroupCpu(a.cpu, b.cpu),
  counts: b.counts === undefined ? a.counts : mergeCounts(a.counts ?? emptyCounts(), b.counts),
  perf: b.perf === undefined ? a.perf : mergePerf(a.perf ?? emptyPerfCounts(), b.perf),
  kernel: kernelCountsBetween(zeroKernelCounts(), b.kernel ?? zeroKernelCounts(), a.kernel ?? zeroKernelCounts()),
  clientRead: a.clientRead === undefined || b.clientRead === undefined ? a.clientRead ?? b.clientRead : a.clientRead + b.clientRead
})
