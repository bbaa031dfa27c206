/**
 * A target's CPU by thread, from /proc: `/proc/<pid>/task/<tid>/stat` gives
 * each thread's name and its user and kernel time. Owns the parsing of that
 * text and the grouping of threads into what bench/profile.ts reports: the
 * main thread (tid = pid), V8's worker threads (parallel and concurrent GC,
 * the concurrent compilers), libuv's pool, V8's profiler thread (there only
 * under `--cpu-prof`: the instrument's own cost) and any other thread.
 *
 * Resolution is one clock tick (10 ms): bench/profile.ts sums several
 * measured intervals before dividing by the units measured.
 */
import fs from "node:fs"

/** One line of `/proc/<pid>/stat` or `/proc/<pid>/task/<tid>/stat`, in clock ticks. */
export interface StatLine {
  readonly comm: string
  readonly utimeTicks: number
  readonly stimeTicks: number
  /** Minor page faults (field 10): for the process's line, all of its threads. */
  readonly minflt: number
}

/**
 * Parses a stat line. The name (field 2) sits in parentheses and may itself
 * contain spaces or parentheses, so the fields are counted from the last `)`;
 * utime and stime are fields 14 and 15. Undefined when the text is not a stat line.
 */
export const parseStatLine = (text: string): StatLine | undefined => {
  const open = text.indexOf("(")
  const close = text.lastIndexOf(")")
  if (open < 0 || close < open) return undefined
  const fields = text.slice(close + 2).trim().split(" ")
  // fields[0] is field 3 (state): utime is field 14, stime field 15.
  const utimeTicks = Number(fields[11])
  const stimeTicks = Number(fields[12])
  const minflt = Number(fields[7])
  if (!Number.isFinite(utimeTicks) || !Number.isFinite(stimeTicks) || fields.length < 13) return undefined
  return { comm: text.slice(open + 1, close), utimeTicks, stimeTicks, minflt: Number.isFinite(minflt) ? minflt : 0 }
}

/** The groups a thread is counted in. */
export type ThreadGroup = "main" | "v8" | "libuv" | "profiler" | "other"

/** Every group, in report order. */
export const THREAD_GROUPS: ReadonlyArray<ThreadGroup> = ["main", "v8", "libuv", "profiler", "other"]

/**
 * The group of thread `tid` of process `pid` named `comm`. Node 24 names its
 * threads (`MainThread`, `V8Worker`, `libuv-worker`, `DelayedTaskScheduler`,
 * `SignalInspector`, and under `--cpu-prof` the profiler's
 * `v8:ProfEvntProc`); the main thread is recognised by its id, since a
 * process that was just forked still carries its parent's name.
 */
export const threadGroup = (pid: number, tid: number, comm: string): ThreadGroup => {
  if (tid === pid) return "main"
  if (/^V8 ?Worker|^V8 DefaultWorke/.test(comm)) return "v8"
  if (/^libuv-worker/.test(comm)) return "libuv"
  if (/^v8:ProfEvntProc/.test(comm)) return "profiler"
  return "other"
}

/** User and kernel CPU, µs. */
export interface UserSys {
  readonly user: number
  readonly sys: number
}

/** A reading of every thread of a process: tid → group and CPU (µs). */
export type ThreadSnapshot = ReadonlyMap<number, { readonly group: ThreadGroup; readonly cpu: UserSys }>

/** Builds a snapshot from (tid, stat text) pairs; lines that do not parse are skipped. */
export const snapshotFromStats = (
  pid: number,
  stats: ReadonlyArray<readonly [number, string]>,
  ticksPerSecond: number
): ThreadSnapshot => {
  const out = new Map<number, { group: ThreadGroup; cpu: UserSys }>()
  const us = 1e6 / ticksPerSecond
  for (const [tid, text] of stats) {
    const line = parseStatLine(text)
    if (line === undefined) continue
    out.set(tid, { group: threadGroup(pid, tid, line.comm), cpu: { user: line.utimeTicks * us, sys: line.stimeTicks * us } })
  }
  return out
}

/** Reads every thread of `pid` now; empty if the process is gone. */
export const readThreads = (pid: number, ticksPerSecond: number): ThreadSnapshot => {
  const stats: Array<readonly [number, string]> = []
  let tids: Array<string> = []
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`)
  } catch {
    return new Map()
  }
  for (const tid of tids) {
    try {
      stats.push([Number(tid), fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8")])
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return snapshotFromStats(pid, stats, ticksPerSecond)
}

/** CPU by thread group, µs. */
export type GroupCpu = Record<ThreadGroup, UserSys>

/** A GroupCpu of zeros. */
export const zeroGroupCpu = (): GroupCpu => ({
  main: { user: 0, sys: 0 },
  v8: { user: 0, sys: 0 },
  libuv: { user: 0, sys: 0 },
  profiler: { user: 0, sys: 0 },
  other: { user: 0, sys: 0 }
})

/**
 * What each group used between two snapshots. A thread that appears only in
 * `after` counts from zero (it started inside the interval); one that ended
 * inside it is not counted (its CPU is no longer listed per thread).
 */
export const cpuBetween = (before: ThreadSnapshot, after: ThreadSnapshot): GroupCpu => {
  const out = zeroGroupCpu()
  for (const [tid, a] of after) {
    const b = before.get(tid)
    const g = out[a.group]
    out[a.group] = {
      user: g.user + Math.max(0, a.cpu.user - (b?.cpu.user ?? 0)),
      sys: g.sys + Math.max(0, a.cpu.sys - (b?.cpu.sys ?? 0))
    }
  }
  return out
}

/** The sum of two GroupCpu. */
export const addGroupCpu = (a: GroupCpu, b: GroupCpu): GroupCpu => {
  const out = zeroGroupCpu()
  for (const g of THREAD_GROUPS) out[g] = { user: a[g].user + b[g].user, sys: a[g].sys + b[g].sys }
  return out
}

/** What a process asked of the kernel: `/proc/<pid>/io`'s syscall counts and bytes, and its minor page faults. */
export interface KernelCounts {
  /** read-like system calls (read, recvmsg, pread, …). */
  readonly syscr: number
  /** write-like system calls (write, writev, pwrite, …). */
  readonly syscw: number
  readonly rchar: number
  readonly wchar: number
  readonly minflt: number
}

/** Zero counts. */
export const zeroKernelCounts = (): KernelCounts => ({ syscr: 0, syscw: 0, rchar: 0, wchar: 0, minflt: 0 })

/** Parses `/proc/<pid>/io` (`key: value` lines) with the process's minor faults; missing keys count 0. */
export const parseProcIo = (text: string, minflt: number): KernelCounts => {
  const get = (key: string): number => {
    const m = new RegExp(`^${key}:\\s+(\\d+)`, "m").exec(text)
    return m === null ? 0 : Number(m[1])
  }
  return { syscr: get("syscr"), syscw: get("syscw"), rchar: get("rchar"), wchar: get("wchar"), minflt }
}

/** Reads `pid`'s kernel counts now (zeros if the process is gone or /proc/<pid>/io is not readable). */
export const readKernelCounts = (pid: number): KernelCounts => {
  try {
    const stat = parseStatLine(fs.readFileSync(`/proc/${pid}/stat`, "utf8"))
    return parseProcIo(fs.readFileSync(`/proc/${pid}/io`, "utf8"), stat?.minflt ?? 0)
  } catch {
    return zeroKernelCounts()
  }
}

/** `after − before`, field by field; `plus` added (several intervals sum up). */
export const kernelCountsBetween = (before: KernelCounts, after: KernelCounts, plus: KernelCounts = zeroKernelCounts()): KernelCounts => ({
  syscr: plus.syscr + after.syscr - before.syscr,
  syscw: plus.syscw + after.syscw - before.syscw,
  rchar: plus.rchar + after.rchar - before.rchar,
  wchar: plus.wchar + after.wchar - before.wchar,
  minflt: plus.minflt + after.minflt - before.minflt
})
