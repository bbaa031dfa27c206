/**
 * The arithmetic of bench/profile.ts: one target's CPU per unit (message or
 * round trip) split into kernel, V8, Node, effect and our code, and the gap
 * between two targets. Owns the rule that joins the two instruments:
 *
 * - /proc is the CPU: kernel = every thread's stime; V8's worker threads,
 *   libuv's pool and other threads by their utime; the main thread's
 *   utime + stime is M. V8's profiler thread is the instrument's own cost:
 *   reported on its own, outside the total.
 * - the `--cpu-prof` samples split M: each owner gets its share of the busy
 *   samples times M. The sampler counts time on the stack, not CPU, and the
 *   kernel's work is done inside native code (a write inside `writeBuffer`,
 *   a read or epoll inside `(program)`), so the main thread's stime is taken
 *   out of the native and `(program)` shares, whose remainder is their user
 *   time. When the kernel time is larger than those shares, they get 0 and
 *   the other owners are scaled to the main thread's utime (a note says so).
 *
 * The parts sum to the total CPU per unit.
 */
import { fmt } from "./format.ts"
import { busySamples, type Owner, type ProfileCounts } from "./profile-cpuprofile.ts"
import { PERF_KINDS, type PerfCounts, type PerfKind, zeroPerfKinds } from "./profile-perf.ts"
import type { GroupCpu, KernelCounts, ThreadGroup } from "./profile-proc.ts"

/** What was measured for one workload on one target, summed over its profiled runs. */
export interface Measured {
  /** Messages or round trips (or startups) inside the measured intervals. */
  readonly units: number
  /** CPU by thread group inside the intervals, µs. */
  readonly cpu: GroupCpu
  /** Samples inside the intervals; undefined when the target was not profiled (not a Node process). */
  readonly counts: ProfileCounts | undefined
  /** `perf` samples inside the intervals (`--perf`), by thread group and kind. */
  readonly perf?: PerfCounts | undefined
  /** System calls, bytes and page faults inside the intervals (/proc/<pid>/io and stat). */
  readonly kernel?: KernelCounts | undefined
  /**
   * Bytes the bench process itself read inside the intervals (its own
   * /proc/self/io `rchar`): for the workloads whose only clients are the
   * bench's own, what the target wrote to its sockets, so the rest of
   * `kernel.wchar` went to files (a durable broker's WAL).
   */
  readonly clientRead?: number | undefined
}

/** A target's CPU per unit, µs, by part. The parts sum to `total`. */
export interface Breakdown {
  /** Every thread but the profiler's. */
  readonly total: number
  /** stime of every thread. */
  readonly kernel: number
  /** The main thread's utime, split below. */
  readonly mainUser: number
  readonly gc: number
  /** Native bindings and `(program)`, after the main thread's kernel time is taken out. */
  readonly nativeUser: number
  readonly node: number
  readonly effect: number
  readonly deps: number
  readonly ours: number
  readonly otherJs: number
  /** The main thread's utime when there were no busy samples to split it by. */
  readonly unsplit: number
  readonly v8Workers: number
  readonly libuv: number
  readonly otherThreads: number
  /** V8's profiler thread (user + sys): not in `total`. */
  readonly profilerThread: number
  /** M / busy samples: what one sample stands for, µs of main-thread CPU per unit. */
  readonly perSample: number
  readonly notes: ReadonlyArray<string>
}

const JS_OWNERS: ReadonlyArray<Exclude<Owner, "program" | "native">> = ["gc", "node", "effect", "deps", "ours", "other"]

/** Splits a target's measured CPU per unit (see the module header for the rule). */
export const breakdown = (m: Measured): Breakdown => {
  const per = (x: number): number => (m.units > 0 ? x / m.units : Number.NaN)
  const { main, v8, libuv, other } = m.cpu
  const kernel = per(main.sys + v8.sys + libuv.sys + other.sys)
  const mainAll = per(main.user + main.sys)
  const mainSys = per(main.sys)
  const mainUser = per(main.user)
  const busy = m.counts === undefined ? 0 : busySamples(m.counts)
  const notes: Array<string> = []
  const parts: Record<Exclude<Owner, "program" | "native">, number> = { gc: 0, node: 0, effect: 0, deps: 0, ours: 0, other: 0 }
  let nativeUser = 0
  let unsplit = 0
  if (m.counts === undefined || busy === 0) {
    unsplit = mainUser
  } else {
    const share = (o: Owner): number => (m.counts?.byOwner[o] ?? 0) / busy
    const nativeAll = (share("program") + share("native")) * mainAll
    if (nativeAll >= mainSys) {
      nativeUser = nativeAll - mainSys
      for (const o of JS_OWNERS) parts[o] = share(o) * mainAll
    } else {
      const js = JS_OWNERS.reduce((s, o) => s + share(o), 0)
      const scale = js > 0 ? mainUser / (js * mainAll) : 0
      for (const o of JS_OWNERS) parts[o] = share(o) * mainAll * scale
      if (js === 0) unsplit = mainUser
      notes.push(
        `the main thread's kernel time (${fmt(mainSys)} µs) exceeds the native and (program) samples' share (${fmt(nativeAll)} µs): ` +
          `those count 0 and the other owners are scaled by ${scale.toFixed(2)}`
      )
    }
  }
  return {
    total: per(main.user + main.sys + v8.user + v8.sys + libuv.user + libuv.sys + other.user + other.sys),
    kernel,
    mainUser,
    gc: parts.gc,
    nativeUser,
    node: parts.node,
    effect: parts.effect,
    deps: parts.deps,
    ours: parts.ours,
    otherJs: parts.other,
    unsplit,
    v8Workers: per(v8.user),
    libuv: per(libuv.user),
    otherThreads: per(other.user),
    profilerThread: per(m.cpu.profiler.user + m.cpu.profiler.sys),
    perSample: busy > 0 ? mainAll / busy : Number.NaN,
    notes
  }
}

/** The gap's groups: what issue 16's "Done when" asks to tell apart. */
export interface Groups {
  readonly kernel: number
  /** GC on the main thread and V8's worker threads (GC helpers, concurrent compilers). */
  readonly v8: number
  /** Node's JavaScript internals, native bindings and `(program)` (user), libuv's pool. */
  readonly node: number
  readonly effect: number
  readonly ours: number
  /** Other dependencies, other JavaScript, other threads, and a main thread that could not be split. */
  readonly other: number
  readonly total: number
}

/** A breakdown in the gap's groups. */
export const groups = (b: Breakdown): Groups => ({
  kernel: b.kernel,
  v8: b.gc + b.v8Workers,
  node: b.node + b.nativeUser + b.libuv,
  effect: b.effect,
  ours: b.ours,
  other: b.deps + b.otherJs + b.otherThreads + b.unsplit,
  total: b.total
})

/** `a − b`, group by group. */
export const gapOf = (a: Groups, b: Groups): Groups => ({
  kernel: a.kernel - b.kernel,
  v8: a.v8 - b.v8,
  node: a.node - b.node,
  effect: a.effect - b.effect,
  ours: a.ours - b.ours,
  other: a.other - b.other,
  total: a.total - b.total
})

/** One column of a workload's table. */
export interface Column {
  readonly label: string
  readonly measured: Measured
  /** CPU per unit of the same target's runs without the profiler (median), for the overhead. */
  readonly unprofiled: number | undefined
}

type Row = readonly [string, (b: Breakdown) => number]

const ROWS: ReadonlyArray<Row> = [
  ["CPU total (/proc, all threads)", (b) => b.total],
  ["  kernel (stime, all threads)", (b) => b.kernel],
  ["  main thread, user", (b) => b.mainUser],
  ["    GC (main thread)", (b) => b.gc],
  ["    native and (program), user", (b) => b.nativeUser],
  ["    Node internals (node:*)", (b) => b.node],
  ["    effect", (b) => b.effect],
  ["    ours (src/… or the relay's script)", (b) => b.ours],
  ["    other dependencies", (b) => b.deps],
  ["    other JS", (b) => b.otherJs],
  ["    not split (no samples)", (b) => b.unsplit],
  ["  V8 worker threads (GC helpers, compiler)", (b) => b.v8Workers],
  ["  libuv pool", (b) => b.libuv],
  ["  other threads", (b) => b.otherThreads],
  ["profiler's own thread (not in the total)", (b) => b.profilerThread]
]

const GROUP_ROWS: ReadonlyArray<readonly [string, (g: Groups) => number]> = [
  ["kernel", (g) => g.kernel],
  ["V8 (GC + worker threads)", (g) => g.v8],
  ["Node (internals, native, libuv)", (g) => g.node],
  ["effect", (g) => g.effect],
  ["ours", (g) => g.ours],
  ["other", (g) => g.other],
  ["total", (g) => g.total]
]

/**
 * A workload's table (header and rows): a column per target (µs per unit),
 * then the gap of every other column to the first (the raw relay), by part
 * and by group.
 */
export const workloadTable = (
  columns: ReadonlyArray<Column>
): { readonly header: Array<string>; readonly rows: Array<Array<string>> } => {
  const bs = columns.map((c) => breakdown(c.measured))
  const [base, ...rest] = columns
  const b0 = bs[0]
  if (base === undefined || b0 === undefined) return { header: [], rows: [] }
  const gapLabels = rest.map((c) => `${c.label} − ${base.label}`)
  const header = ["", ...columns.map((c) => c.label), ...gapLabels]
  const rows: Array<Array<string>> = []
  for (const [label, get] of ROWS) {
    if (label.includes("not split") && bs.every((b) => b.unsplit === 0)) continue
    // Without --cpu-prof samples the owners' rows are all zero: only "not split" is shown.
    if (label.startsWith("    ") && !label.includes("not split") && columns.every((c) => c.measured.counts === undefined)) continue
    if (label.startsWith("gap") || label.startsWith("profiler")) {
      rows.push([label, ...bs.map((b) => fmt(get(b))), ...rest.map(() => "")])
      continue
    }
    rows.push([label, ...bs.map((b) => fmt(get(b))), ...bs.slice(1).map((b) => fmt(get(b) - get(b0)))])
  }
  rows.push(["gap by group:", ...columns.map(() => ""), ...rest.map(() => "")])
  const g0 = groups(b0)
  for (const [label, get] of GROUP_ROWS) {
    rows.push([`  ${label}`, ...bs.map((b) => fmt(get(groups(b)))), ...bs.slice(1).map((b) => {
      const gap = gapOf(groups(b), g0)
      const share = gap.total !== 0 ? ` (${Math.round((get(gap) / gap.total) * 100)} %)` : ""
      return `${fmt(get(gap))}${label === "total" ? "" : share}`
    })])
  }
  rows.push([
    "busy samples (idle) in the intervals",
    ...columns.map((c) => (c.measured.counts === undefined ? "–" : `${busySamples(c.measured.counts)} (${c.measured.counts.idle})`)),
    ...rest.map(() => "")
  ])
  rows.push(["units measured", ...columns.map((c) => String(c.measured.units)), ...rest.map(() => "")])
  // Write calls and bytes count sockets and files together (a durable broker's WAL writes are `pwrite`s);
  // what the bench's own clients read tells the socket bytes apart.
  const KERNEL_ROWS: ReadonlyArray<readonly [string, (m: Measured, k: KernelCounts) => number]> = [
    ["read syscalls per unit", (_, k) => k.syscr],
    ["write syscalls per unit (sockets and files)", (_, k) => k.syscw],
    ["bytes written per unit (sockets and files)", (_, k) => k.wchar],
    ["  of them read by the bench's clients", (m) => m.clientRead ?? Number.NaN],
    ["minor page faults per unit", (_, k) => k.minflt]
  ]
  if (columns.some((c) => c.measured.kernel !== undefined)) {
    for (const [label, get] of KERNEL_ROWS) {
      if (label.includes("bench's clients") && columns.every((c) => c.measured.clientRead === undefined)) continue
      const v = columns.map((c) =>
        c.measured.kernel === undefined || c.measured.units <= 0 ? Number.NaN : get(c.measured, c.measured.kernel) / c.measured.units
      )
      const v0 = v[0] ?? Number.NaN
      rows.push([label, ...v.map((x) => fmt(x)), ...v.slice(1).map((x) => fmt(x - v0))])
    }
  }
  rows.push([
    "CPU/unit without the profiler (overhead)",
    ...columns.map((c, i) => {
      const t = bs[i]?.total ?? Number.NaN
      if (c.unprofiled === undefined || !Number.isFinite(c.unprofiled)) return "–"
      return `${fmt(c.unprofiled)} (${t >= c.unprofiled ? "+" : ""}${Math.round(((t - c.unprofiled) / c.unprofiled) * 100)} %)`
    }),
    ...rest.map(() => "")
  ])
  return { header, rows }
}

/** The `n` largest entries of a file or function map with owner `owner` (any when undefined), in µs per unit. */
export const topEntries = (
  m: Measured,
  key: "byFile" | "byFunction",
  n: number,
  owner?: Owner
): Array<{ readonly name: string; readonly owner: Owner; readonly samples: number; readonly usPerUnit: number }> => {
  const counts = m.counts
  if (counts === undefined) return []
  const b = breakdown(m)
  return [...counts[key].entries()]
    .filter(([, e]) => owner === undefined || e.owner === owner)
    .sort((x, y) => y[1].count - x[1].count)
    .slice(0, n)
    .map(([name, e]) => ({ name, owner: e.owner, samples: e.count, usPerUnit: e.count * b.perSample }))
}

/** The thread groups whose CPU perf's shares split (the profiler's thread is left out, as in the total). */
const PERF_GROUPS: ReadonlyArray<Exclude<ThreadGroup, "profiler">> = ["main", "v8", "libuv", "other"]

/** What perf says of one target, µs per unit: each thread group's /proc CPU split by its samples' kinds. */
export interface PerfSplit {
  /** By kind, every group but the profiler's. */
  readonly byKind: Record<PerfKind, number>
  /** V8's worker threads alone, by kind. */
  readonly v8Workers: Record<PerfKind, number>
  /** CPU of groups perf has no sample of (not split). */
  readonly unsampled: number
  readonly samples: number
}

/** Splits each thread group's CPU per unit by the kinds of its perf samples; undefined without perf samples. */
export const perfSplit = (m: Measured): PerfSplit | undefined => {
  const perf = m.perf
  if (perf === undefined || m.units <= 0) return undefined
  const byKind = zeroPerfKinds()
  const v8Workers = zeroPerfKinds()
  let unsampled = 0
  let samples = 0
  for (const g of PERF_GROUPS) {
    const cpu = (m.cpu[g].user + m.cpu[g].sys) / m.units
    const counts = perf.byGroup[g]
    const n = PERF_KINDS.reduce((s, k) => s + counts[k], 0)
    samples += n
    if (n === 0) {
      unsampled += cpu
      continue
    }
    for (const k of PERF_KINDS) {
      const us = (cpu * counts[k]) / n
      byKind[k] += us
      if (g === "v8") v8Workers[k] += us
    }
  }
  return samples === 0 ? undefined : { byKind, v8Workers, unsampled, samples }
}

const PERF_LABEL: Readonly<Record<PerfKind, string>> = {
  kernel: "kernel",
  sqlite: "SQLite (C, in the node binary)",
  gc: "garbage collector (any thread)",
  compiler: "compilers and parser (any thread)",
  js: "JavaScript (JIT code, builtins)",
  strings: "JSON and strings (V8 C++ for JavaScript)",
  v8: "V8 runtime (other C++: allocation, ICs, …)",
  node: "Node (C++)",
  libuv: "libuv",
  libc: "libc, libstdc++ (malloc, memcpy, …)",
  other: "other"
}

/** The perf table of a workload (header and rows), or undefined when no column has perf samples. */
export const perfTable = (
  columns: ReadonlyArray<Column>
): { readonly header: Array<string>; readonly rows: Array<Array<string>> } | undefined => {
  const ps = columns.map((c) => perfSplit(c.measured))
  const p0 = ps[0]
  const [base, ...rest] = columns
  if (base === undefined || ps.every((p) => p === undefined)) return undefined
  const cell = (x: number | undefined): string => (x === undefined ? "–" : fmt(x))
  const header = ["", ...columns.map((c) => c.label), ...rest.map((c) => `${c.label} − ${base.label}`)]
  const rows: Array<Array<string>> = []
  const row = (label: string, get: (p: PerfSplit) => number): void => {
    rows.push([
      label,
      ...ps.map((p) => cell(p === undefined ? undefined : get(p))),
      ...ps.slice(1).map((p) => (p === undefined || p0 === undefined ? "–" : fmt(get(p) - get(p0))))
    ])
  }
  for (const k of PERF_KINDS) row(PERF_LABEL[k], (p) => p.byKind[k])
  row("  of which on V8's worker threads: GC", (p) => p.v8Workers.gc)
  row("  of which on V8's worker threads: compilers", (p) => p.v8Workers.compiler)
  if (ps.some((p) => p !== undefined && p.unsampled > 0)) row("no perf sample (not split)", (p) => p.unsampled)
  rows.push(["perf samples", ...ps.map((p) => (p === undefined ? "–" : String(p.samples))), ...rest.map(() => "")])
  return { header, rows }
}
