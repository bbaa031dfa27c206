/**
 * Issue 16's targets, evaluated on one run's summary: each is a same-run
 * ratio (broker against the raw relay or against itself in memory mode) or an
 * absolute bound on the broker's own figure. A target whose measure did not
 * run (or could not run in full) is `n/a`, never PASS. Printed by `run.ts`,
 * never asserted by a test: the machine is shared and noisy.
 */
import { fmt, fmtRatio } from "./format.ts"
import type { Summary } from "./summary.ts"
import { defaultSizes, kLabel, type Sizes } from "./workloads.ts"

/** `n/a`: the measure is missing or partial. */
export type CheckStatus = "PASS" | "FAIL" | "n/a"

/** One target as printed: its name, bound, measured value and status. */
export interface Check {
  readonly name: string
  readonly target: string
  readonly value: string
  readonly status: CheckStatus
}

/** Which workload names carry the scale targets (their names follow the sizes). */
export interface CheckNames {
  /** The registration storm (`storm-1k`). */
  readonly storm: string
  /**
   * The idle-session scale run (`idle-50k`) and the session count it is
   * meant to hold; `atThisSize` false when the run's sizes (`--quick`,
   * `--ci`) have no such workload, so its target row says so.
   */
  readonly idleScale: { readonly name: string; readonly sessions: number; readonly atThisSize: boolean } | undefined
}

/** What a target row's value says when its workload is not part of the run's sizes. */
export const NOT_RUN_AT_THIS_SIZE = "n/a (not run at this size)"

/**
 * The workload names the targets read, at `sizes`: the scale target is the
 * full sizes' idle-session scale run (`defaultSizes`), marked not at this
 * size where `sizes` have none.
 */
export const checkNames = (sizes: Sizes): CheckNames => {
  const scale = sizes.idle.find((c) => c.scale === true)
  const target = scale ?? defaultSizes.idle.find((c) => c.scale === true)
  return {
    storm: `storm-${kLabel(sizes.stormSessions)}`,
    idleScale: target === undefined
      ? undefined
      : { name: `idle-${kLabel(target.k)}`, sessions: target.k, atThisSize: scale !== undefined }
  }
}

const within = (value: number, op: ">=" | "<=", bound: number): CheckStatus =>
  (op === ">=" ? value >= bound : value <= bound) ? "PASS" : "FAIL"

const MiB = (kib: number | undefined): string => (kib === undefined ? "–" : `${fmt(kib / 1024)} MiB`)

/** Issue 16's targets on `summary`, in the order of the issue's table. */
export const issue16Checks = (summary: Summary, names: CheckNames): Array<Check> => {
  const checks: Array<Check> = []
  const ratioCheck = (
    name: string,
    workload: string,
    metric: string,
    comparison: string,
    op: ">=" | "<=",
    bound: number,
    detail: (workloadSummary: Summary[string] | undefined) => string = () => ""
  ): void => {
    const r = summary[workload]?.[metric]?.ratios[comparison]?.median
    checks.push({
      name,
      target: `${comparison} ${op === ">=" ? "≥" : "≤"} ${bound}`,
      value: r === undefined ? "–" : `${fmtRatio(r)}${detail(summary[workload])}`,
      status: r === undefined ? "n/a" : within(r, op, bound)
    })
  }
  const absCheck = (name: string, workload: string, metric: string, bound: number, unit: string): void => {
    const v = summary[workload]?.[metric]?.values.broker
    checks.push({
      name,
      target: `broker ≤ ${bound} ${unit}`,
      value: v === undefined ? "–" : `${fmt(v)} ${unit}`,
      status: v === undefined ? "n/a" : within(v, "<=", bound)
    })
  }
  ratioCheck("w64 throughput vs raw relay", "w64", "msgPerSec", "broker/raw", ">=", 0.8)
  ratioCheck("fan-in 16→1 vs raw relay", "fanin", "msgPerSec", "broker/raw", ">=", 0.8)
  ratioCheck("ask round trip p50 vs raw relay", "ask", "p50Us", "broker/raw", "<=", 1.25)
  ratioCheck("ask round trip p99 vs raw relay", "ask", "p99Us", "broker/raw", "<=", 1.6)
  absCheck("broker CPU per message, w64", "w64", "cpuUsPerMsg", 10, "µs")
  ratioCheck(
    `peak RSS, ${names.storm} registration storm`,
    names.storm,
    "hwmKiB",
    "broker/raw",
    "<=",
    1.5,
    (w) => ` (${MiB(w?.["hwmKiB"]?.values.broker)} vs ${MiB(w?.["hwmKiB"]?.values.raw)})`
  )
  if (names.idleScale !== undefined && !names.idleScale.atThisSize) {
    const { name, sessions } = names.idleScale
    checks.push({
      name: `idle sessions held, RSS each (${name})`,
      target: `${sessions.toLocaleString("en-US")} at ≤ 8 KiB`,
      value: NOT_RUN_AT_THIS_SIZE,
      status: "n/a"
    })
  } else if (names.idleScale !== undefined) {
    const { name, sessions } = names.idleScale
    const perSession = summary[name]?.["rssPerSessionKiB"]?.values.broker
    const held = summary[name]?.["sessions"]?.values.broker
    const full = held !== undefined && held >= sessions
    checks.push({
      name: `idle sessions held, RSS each (${name})`,
      target: `${sessions.toLocaleString("en-US")} at ≤ 8 KiB`,
      value: perSession === undefined || held === undefined
        ? "–"
        : `${fmt(perSession)} KiB at ${held.toLocaleString("en-US")}`,
      // Fewer sessions than meant (a refusal or the open-file limit) cannot show the target either way.
      status: perSession === undefined || !full ? "n/a" : within(perSession, "<=", 8)
    })
  }
  absCheck("spawn → health_ok", "startup", "healthMs", 120, "ms")
  absCheck("`intercom send` as a process, broker running", "cli-send", "sendMs", 200, "ms")
  ratioCheck("durable vs memory mode, w64", "w64", "msgPerSec", "broker/memory", ">=", 0.8)
  return checks
}
