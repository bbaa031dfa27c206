/**
 * Scale workloads and what they need from the machine:
 *
 * - `storm-1k`: a registration storm: 1,000 sessions in one scope register as
 *   fast as the admission cap lets them (32 in flight, P15); reported are the
 *   time to register all and the target's peak RSS (VmHWM) once it has gone
 *   quiet, so the K²/2 `session_joined` broadcasts are inside the peak.
 * - the open-file limit: every session is one socket in this process and one
 *   in the target, so `idle-50k` needs more than 50,000 descriptors per
 *   process. `ensureOpenFiles` raises the limit when it can (`prlimit` on
 *   this process; children inherit it) and says how many sessions fit when it
 *   cannot.
 */
import { execFileSync } from "node:child_process"
import fs from "node:fs"
import { type BenchClient, connectAndRegister } from "./client.ts"
import { procStatusKiB, type TargetSpec } from "./targets.ts"
import { closeAll, type RunResult, settle, withInstance, withTimeout } from "./harness.ts"

// ---------------------------------------------------------------- open files

/** A process's open-file limit (`Infinity` for unlimited). */
export interface OpenFileLimit {
  readonly soft: number
  readonly hard: number
}

const limitValue = (token: string | undefined): number =>
  token === "unlimited" ? Number.POSITIVE_INFINITY : token !== undefined && /^\d+$/.test(token) ? Number(token) : Number.NaN

/** The "Max open files" line of a `/proc/<pid>/limits` text. */
export const parseOpenFileLimit = (limits: string): OpenFileLimit | undefined => {
  const line = limits.split("\n").find((l) => l.startsWith("Max open files"))
  if (line === undefined) return undefined
  const [soft, hard] = line.slice("Max open files".length).trim().split(/\s+/)
  const s = limitValue(soft)
  const h = limitValue(hard)
  return Number.isNaN(s) || Number.isNaN(h) ? undefined : { soft: s, hard: h }
}

const ownLimit = (): OpenFileLimit | undefined => {
  try {
    return parseOpenFileLimit(fs.readFileSync("/proc/self/limits", "utf8"))
  } catch {
    return undefined
  }
}

/** Descriptors a process keeps besides the sessions' sockets (store files, the listener, stdio, Node's own). */
const SLACK = 1_000

/** The answer of `ensureOpenFiles`. */
export interface OpenFiles {
  /** How many sessions fit under the limit after any raise (≥ `sessions` when all fit). */
  readonly sessions: number
  /** Set when the limit had to be raised or could not be: what happened. */
  readonly note: string | undefined
}

const fmtLimit = (n: number): string => (Number.isFinite(n) ? n.toLocaleString("en-US") : "unlimited")

/**
 * Makes room for `sessions` sockets in this process and in the targets it
 * spawns (they inherit the limit). Node already raises its soft limit to the
 * hard one at start; above the hard limit only a process with
 * CAP_SYS_RESOURCE can go, which `prlimit` tries.
 */
export const ensureOpenFiles = (sessions: number): OpenFiles => {
  const need = sessions + SLACK
  const before = ownLimit()
  if (before === undefined) return { sessions, note: "could not read /proc/self/limits: the open-file limit is unknown" }
  if (before.soft >= need) return { sessions, note: undefined }
  // Soft up to what is needed; hard at least that (a hard limit is only raised with CAP_SYS_RESOURCE).
  const hard = Number.isFinite(before.hard) ? String(Math.max(need, before.hard)) : "unlimited"
  let error = ""
  try {
    execFileSync("prlimit", ["--pid", String(process.pid), `--nofile=${need}:${hard}`], {
      stdio: ["ignore", "ignore", "pipe"]
    })
  } catch (e) {
    const stderr = typeof e === "object" && e !== null && "stderr" in e ? String(e.stderr).trim() : ""
    error = stderr !== "" ? stderr : e instanceof Error ? e.message : String(e)
  }
  const after = ownLimit() ?? before
  if (after.soft >= need) {
    return { sessions, note: `open-file limit raised from ${fmtLimit(before.soft)} to ${fmtLimit(after.soft)}` }
  }
  const fit = Math.max(0, Math.floor((after.soft - SLACK) / 1_000) * 1_000)
  return {
    sessions: Math.min(sessions, fit),
    note: `the open-file limit is ${fmtLimit(after.soft)} (hard ${fmtLimit(after.hard)}) and could not be raised to ${
      fmtLimit(need)
    }${error === "" ? "" : ` (${error.split("\n")[0]})`}: each session is a socket here and in the target, so ${
      fit.toLocaleString("en-US")
    } sessions were held instead of ${sessions.toLocaleString("en-US")}; raise \`ulimit -Hn\` (as root, or with CAP_SYS_RESOURCE) to run it in full`
  }
}

// ---------------------------------------------------------------- storm

/** `sessions` sessions in one scope register, `concurrency` at a time; peak RSS once the target is quiet. */
export const stormRun = async (spec: TargetSpec, sessions: number, concurrency: number): Promise<RunResult> => {
  // Closed only after the target is stopped, so it does not spend the stop broadcasting session_left.
  const clients: Array<BenchClient> = []
  try {
    return await withInstance(spec, sessions + 16, async (inst) => {
      await settle(inst.pid, 2000)
      const rssBefore = procStatusKiB(inst.pid, "VmRSS")
      const hwmBefore = procStatusKiB(inst.pid, "VmHWM")
      let next = 0
      let retries = 0
      const t0 = performance.now()
      const worker = async (): Promise<void> => {
        while (next < sessions) {
          const i = next++
          const r = await connectAndRegister(inst.socketPath, `storm-${i}`)
          r.client.discard()
          retries += r.retries
          clients.push(r.client)
        }
      }
      await withTimeout(
        Promise.all(Array.from({ length: Math.min(concurrency, sessions) }, worker)).then(() => undefined),
        60_000 + sessions * 20,
        `registering ${sessions} sessions`
      )
      const registerMs = performance.now() - t0
      await settle(inst.pid, 20_000)
      const quietMs = performance.now() - t0
      const dropped = clients.filter((c) => c.isClosed).length
      const notes: Array<string> = []
      if (retries > 0) notes.push(`${retries} registrations retried (connection dropped before registered)`)
      if (dropped > 0) notes.push(`${dropped} sessions were disconnected by the target`)
      return {
        metrics: {
          registerMs,
          quietMs,
          rssBeforeKiB: rssBefore,
          hwmBeforeKiB: hwmBefore,
          hwmKiB: procStatusKiB(inst.pid, "VmHWM"),
          rssAfterKiB: procStatusKiB(inst.pid, "VmRSS"),
          retries,
          dropped
        },
        notes
      }
    })
  } finally {
    closeAll(clients)
  }
}
