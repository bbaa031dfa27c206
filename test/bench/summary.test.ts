/**
 * The bench's pure reporting parts: same-run ratios and medians
 * (bench/summary.ts), the side-by-side table (bench/format.ts), issue 16's
 * target checks (bench/checks.ts) and the open-file limit parser (bench/scale.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { checkNames, issue16Checks } from "../../bench/checks.ts"
import { defaultSizes, quickSizes } from "../../bench/workloads.ts"
import { fmt, fmtRatio, table } from "../../bench/format.ts"
import { parseOpenFileLimit } from "../../bench/scale.ts"
import { comparisonsFor, type RunRecord, summarize, type Summary, tableHeader, tableRows } from "../../bench/summary.ts"
import type { TargetName } from "../../bench/targets.ts"

const run = (rep: number, workload: string, target: TargetName, metrics: Record<string, number>, ok = true): RunRecord => ({
  rep,
  workload,
  target,
  ok,
  metrics,
  notes: [],
  wallMs: 1
})

describe("summarize", () => {
  it("takes medians per target and the median of ratios computed within each rep", () => {
    const runs = [
      run(1, "w64", "raw", { msgPerSec: 100 }),
      run(1, "w64", "broker", { msgPerSec: 50 }),
      run(1, "w64", "memory", { msgPerSec: 80 }),
      run(2, "w64", "raw", { msgPerSec: 200 }),
      run(2, "w64", "broker", { msgPerSec: 160 }),
      run(2, "w64", "memory", { msgPerSec: 180 }),
      run(3, "w64", "raw", { msgPerSec: 40 }),
      run(3, "w64", "broker", { msgPerSec: 36 }),
      run(3, "w64", "memory", { msgPerSec: 40 })
    ]
    const s = summarize(runs, ["w64"], ["raw", "broker", "memory"], 3)["w64"]?.["msgPerSec"]
    assert.deepStrictEqual(s?.values, { raw: 100, broker: 50, memory: 80 })
    // Same-rep ratios 0.5, 0.8, 0.9: the median is 0.8, not 50/100.
    assert.deepStrictEqual(s?.ratios["broker/raw"]?.perRep, [0.5, 0.8, 0.9])
    assert.strictEqual(s?.ratios["broker/raw"]?.median, 0.8)
    assert.strictEqual(s?.ratios["broker/memory"]?.perRep.length, 3)
  })

  it("leaves failed runs and reps missing one side out of the ratios", () => {
    const runs = [
      run(1, "ask", "raw", { p50Us: 100 }),
      run(1, "ask", "broker", { p50Us: 300 }, false),
      run(2, "ask", "raw", { p50Us: 100 }),
      run(2, "ask", "broker", { p50Us: 120 })
    ]
    const s = summarize(runs, ["ask"], ["raw", "broker"], 2)["ask"]?.["p50Us"]
    assert.deepStrictEqual(s?.ratios["broker/raw"]?.perRep, [1.2])
    assert.strictEqual(s?.values.broker, 120)
  })

  it("compares only targets that ran", () => {
    assert.deepStrictEqual(comparisonsFor(["raw", "broker", "nats"]).map((c) => c.label), ["broker/raw", "nats/raw"])
    assert.deepStrictEqual(comparisonsFor(["memory", "broker"]).map((c) => c.label), ["broker/memory"])
  })
})

describe("the side-by-side table", () => {
  it("has a column per target and per ratio, and dashes where a target has no value", () => {
    const targets: Array<TargetName> = ["raw", "broker", "nats"]
    const runs = [
      run(1, "w64", "raw", { msgPerSec: 50_000, cpuUsPerMsg: 10 }),
      run(1, "w64", "broker", { msgPerSec: 20_000, cpuUsPerMsg: 40 }),
      run(1, "startup", "raw", { healthMs: 100 }),
      run(1, "startup", "broker", { healthMs: 150 })
    ]
    const summary = summarize(runs, ["w64", "startup"], targets, 1)
    assert.deepStrictEqual(tableHeader(targets), [
      "workload",
      "metric",
      "raw relay",
      "broker",
      "nats",
      "broker/raw",
      "nats/raw",
      "ok runs (raw broker nats)"
    ])
    const rows = tableRows(summary, runs, ["w64", "startup"], targets, 1)
    assert.deepStrictEqual(rows[0], ["w64", "msg/s", "50,000", "20,000", "–", "0.40", "–", "1/1 1/1 –"])
    assert.deepStrictEqual(rows[1], ["", "CPU µs/msg", "10.0", "40.0", "–", "4.00", "–", ""])
    assert.deepStrictEqual(rows.find((r) => r[0] === "startup")?.slice(0, 6), ["startup", "spawn → health_ok ms", "100", "150", "–", "1.50"])
  })

  it("formats numbers by size and right-aligns the value columns", () => {
    assert.strictEqual(fmt(123_456.7), "123,457")
    assert.strictEqual(fmt(12.34), "12.3")
    assert.strictEqual(fmt(1.234), "1.23")
    assert.strictEqual(fmt(Number.NaN), "–")
    assert.strictEqual(fmtRatio(undefined), "–")
    assert.strictEqual(table(["a", "b", "c"], [["x", "yy", "1"], ["", "y", "100"]]), ["a  b     c", "-  --  ---", "x  yy    1", "   y   100"].join("\n"))
  })
})

/** A summary with one value per target and a ratio by label, for the checks. */
const metric = (values: Partial<Record<TargetName, number>>, ratios: Record<string, number> = {}) => ({
  values,
  ratios: Object.fromEntries(Object.entries(ratios).map(([k, v]) => [k, { median: v, perRep: [v] }]))
})

const names = checkNames(defaultSizes)

const statusOf = (summary: Summary, name: string): string | undefined =>
  issue16Checks(summary, names).find((c) => c.name.startsWith(name))?.status

describe("issue 16's checks", () => {
  it("passes or fails each bound on the same-run ratio or the broker's own figure", () => {
    const summary: Summary = {
      w64: {
        msgPerSec: metric({}, { "broker/raw": 0.8, "broker/memory": 0.79 }),
        cpuUsPerMsg: metric({ broker: 10.5 })
      },
      fanin: { msgPerSec: metric({}, { "broker/raw": 0.5 }) },
      ask: { p50Us: metric({}, { "broker/raw": 1.25 }), p99Us: metric({}, { "broker/raw": 1.7 }) },
      "storm-1k": { hwmKiB: metric({ broker: 300_000, raw: 100_000 }, { "broker/raw": 3 }) },
      startup: { healthMs: metric({ broker: 119 }) },
      "cli-send": { sendMs: metric({ broker: 201 }) }
    }
    assert.strictEqual(statusOf(summary, "w64 throughput vs raw"), "PASS")
    assert.strictEqual(statusOf(summary, "fan-in"), "FAIL")
    assert.strictEqual(statusOf(summary, "ask round trip p50"), "PASS")
    assert.strictEqual(statusOf(summary, "ask round trip p99"), "FAIL")
    assert.strictEqual(statusOf(summary, "broker CPU per message"), "FAIL")
    assert.strictEqual(statusOf(summary, "peak RSS"), "FAIL")
    assert.strictEqual(statusOf(summary, "spawn → health_ok"), "PASS")
    assert.strictEqual(statusOf(summary, "`intercom send`"), "FAIL")
    assert.strictEqual(statusOf(summary, "durable vs memory"), "FAIL")
  })

  it("is n/a, never PASS, when the measure did not run or held fewer sessions than meant", () => {
    assert.isTrue(issue16Checks({}, names).every((c) => c.status === "n/a"))
    const partial: Summary = { "idle-50k": { rssPerSessionKiB: metric({ broker: 5 }), sessions: metric({ broker: 19_000 }) } }
    const idle = issue16Checks(partial, names).find((c) => c.name.includes("idle-50k"))
    assert.strictEqual(idle?.status, "n/a")
    assert.strictEqual(idle?.value, "5.00 KiB at 19,000")
    const full: Summary = { "idle-50k": { rssPerSessionKiB: metric({ broker: 5 }), sessions: metric({ broker: 50_000 }) } }
    assert.strictEqual(statusOf(full, "idle sessions"), "PASS")
  })

  it("keeps the idle-50k row at --quick and --ci sizes, as not run at this size", () => {
    // Before, sizes without the scale run dropped the row: a --ci table silently had one target fewer.
    const full = issue16Checks({}, checkNames(defaultSizes))
    const quick = issue16Checks({}, checkNames(quickSizes))
    assert.deepStrictEqual(quick.map((c) => c.name), full.map((c) => c.name))
    const idle = quick.find((c) => c.name === "idle sessions held, RSS each (idle-50k)")
    assert.deepStrictEqual(idle, {
      name: "idle sessions held, RSS each (idle-50k)",
      target: "50,000 at ≤ 8 KiB",
      value: "n/a (not run at this size)",
      status: "n/a"
    })
    // At full sizes a scale run that did not happen (--only) is still just unmeasured.
    assert.strictEqual(full.find((c) => c.name.includes("idle-50k"))?.value, "–")
    assert.deepStrictEqual(checkNames(quickSizes).storm, "storm-1k")
  })
})

describe("parseOpenFileLimit", () => {
  it("reads the soft and hard limits of /proc/<pid>/limits", () => {
    const limits = [
      "Limit                     Soft Limit           Hard Limit           Units     ",
      "Max processes             unlimited            unlimited            processes ",
      "Max open files            20000                20000                files     ",
      ""
    ].join("\n")
    assert.deepStrictEqual(parseOpenFileLimit(limits), { soft: 20_000, hard: 20_000 })
    assert.deepStrictEqual(
      parseOpenFileLimit("Max open files            1024                 unlimited            files"),
      { soft: 1024, hard: Number.POSITIVE_INFINITY }
    )
    assert.strictEqual(parseOpenFileLimit("Max processes 1 1 processes"), undefined)
  })
})
