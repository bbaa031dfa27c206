/**
 * Where the slowest 1 % of `ask` round trips come from. Runs `ask` as
 * bench/workloads.ts does (two sessions of this process, one question and
 * its answer at a time, `--warmup` unmeasured first) against one target
 * command, stamps each round trip's start and end on the wall clock, and
 * lays the trips at or above the p99 against what else happened then:
 *
 * - the target's garbage collections (its `node` preloads bench/gc-probe.ts,
 *   which this tool adds when the command has none) and this process's own
 *   (the clients' side);
 * - the target's optimizing compiles and deoptimizations, when its `node`
 *   runs with `--trace-opt` / `--trace-deopt`: each trace line is stamped
 *   when it arrives, so the command must make stdout line-buffered
 *   (`stdbuf -oL node …`). A compile's background interval is taken from the
 *   line's `took prepare, execute, finalize ms`, ending at the line;
 * - where the trip falls in the run (first tenth: warm-up).
 *
 * Each cause is also counted over all measured trips, so a slow trip's share
 * can be read against chance. Each run also prints its p99.9 and slowest trip:
 * a rare stall (a WAL checkpoint on the broker's event loop, one per 10,000
 * WAL pages) shows there in a run long enough to reach it (`--rounds 100000`). Opt-in tool, not a workload: the trace flags
 * and the preload cost the target time, so its p99 is not the bench's.
 *
 *   node bench/ask-tail.ts --runs 3 --cmd "stdbuf -oL node --max-semi-space-size=4 --trace-opt --trace-deopt \
 *     dist/bin/intercom.mjs broker --dir {dir} --max-sessions 16384 --durability memory"
 *   node bench/ask-tail.ts --runs 3 --cmd "node bench/raw-relay.ts {sock}"
 */
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { PerformanceObserver } from "node:perf_hooks"
import { eachArg } from "./args.ts"
import { type BenchClient, connectAndRegister, type Frame } from "./client.ts"
import type { GcRecord } from "./gc-probe.ts"
import { makeText, sleep } from "./harness.ts"
import { percentileSorted, sortedCopy } from "./stats.ts"
import { customBrokerSpec, installCleanupHandlers, repoRoot, start, stop, type TargetSpec } from "./targets.ts"
import { addTraceLine, CAUSES, type Cause, causesOf, type Span, type Traces, type Trip } from "./tail-causes.ts"

const usage = `usage: node bench/ask-tail.ts --cmd "<target command with {dir}/{sock}>" [--runs N] [--rounds N] [--warmup N] [--out file.json]
every token "node" in the command is this Node binary; bench/gc-probe.ts is preloaded unless the command names it`

const options = { cmd: "", runs: 3, rounds: 2_000, warmup: 200, out: "" }
eachArg(process.argv.slice(2), usage, (arg) => {
  if (arg.key === "--cmd") options.cmd = arg.value()
  else if (arg.key === "--runs") options.runs = arg.int(1, 50)
  else if (arg.key === "--rounds") options.rounds = arg.int(100, 1_000_000)
  else if (arg.key === "--warmup") options.warmup = arg.int(0, 1_000_000)
  else if (arg.key === "--out") options.out = arg.value()
  else throw new Error(`unknown argument ${arg.raw}\n${usage}`)
})
if (options.cmd === "") throw new Error(usage)

/** Wall-clock ms, the clock gc-probe.ts records with. */
const wall = (): number => performance.timeOrigin + performance.now()

/** The target command with `node` resolved and the GC probe preloaded right after it. */
const targetSpec = (template: string): TargetSpec => {
  const probe = path.join(repoRoot, "bench", "gc-probe.ts")
  const tokens = template.trim().split(/\s+/)
  const nodeAt = tokens.indexOf("node")
  if (nodeAt >= 0 && !template.includes("gc-probe")) tokens.splice(nodeAt + 1, 0, "--import", probe)
  const socketPath = customBrokerSpec(template).socketPath
  return {
    name: "broker",
    argv: (dir) =>
      tokens.map((tok) => (tok === "node" ? process.execPath : tok.replaceAll("{dir}", dir).replaceAll("{sock}", socketPath(dir)))),
    socketPath
  }
}

const collectTraces = (stream: NodeJS.ReadableStream, traces: Traces): void => {
  let partial = ""
  stream.on("data", (d: Buffer) => {
    const at = wall()
    const lines = (partial + d.toString("utf8")).split("\n")
    partial = lines.pop() ?? ""
    for (const line of lines) addTraceLine(traces, line, at)
  })
}

const askTrips = (a: BenchClient, b: BenchClient, rounds: number, warmup: number): Promise<Array<Trip>> =>
  new Promise((resolve, reject) => {
    const text = makeText(100)
    const trips: Array<Trip> = []
    let i = 0
    let t0 = 0
    const begin = (): void => {
      t0 = wall()
      a.send(b.sessionId ?? "", `q-${i}`, text, { expectsReply: true })
    }
    b.onFrame = (frame: Frame) => {
      if (frame["type"] !== "message") return
      const msg = frame["message"]
      const id = typeof msg === "object" && msg !== null && "id" in msg && typeof msg.id === "string" ? msg.id : undefined
      if (id === undefined) reject(new Error(`answerer: unexpected frame ${JSON.stringify(frame).slice(0, 200)}`))
      else b.send(a.sessionId ?? "", `r-${id}`, text, { replyTo: id })
    }
    a.onFrame = (frame: Frame) => {
      if (frame["type"] === "delivery_failed") reject(new Error(`ask failed: ${JSON.stringify(frame).slice(0, 200)}`))
      if (frame["type"] !== "message") return
      if (i >= warmup) trips.push({ index: i - warmup, from: t0, to: wall() })
      i++
      if (i < rounds + warmup) begin()
      else resolve(trips)
    }
    a.closed.then((e) => reject(e), () => {})
    b.closed.then((e) => reject(e), () => {})
    begin()
  })

const gcSpans = (records: ReadonlyArray<GcRecord>): Array<Span> => records.map((r) => ({ from: r.at, to: r.at + r.ms }))

const isGcRecord = (x: unknown): x is GcRecord =>
  typeof x === "object" && x !== null && "at" in x && typeof x.at === "number" && "ms" in x && typeof x.ms === "number"

const readProbe = async (file: string, pid: number): Promise<Array<GcRecord>> => {
  process.kill(pid, "SIGWINCH")
  for (let waited = 0; waited < 3_000; waited += 20) {
    if (fs.existsSync(file)) {
      await sleep(20)
      const parsed: unknown = JSON.parse(fs.readFileSync(file, "utf8"))
      return Array.isArray(parsed) ? parsed.filter(isGcRecord) : []
    }
    await sleep(20)
  }
  process.stderr.write("ask-tail: the target wrote no GC records (no gc-probe preload?)\n")
  return []
}

/** One run's summary: the percentiles, and for the trips at or above the p99 how many had each cause (and the share of all trips that had it). */
interface RunSummary {
  readonly load: number
  readonly p50: number
  readonly p99: number
  /** The 99.9th percentile and the slowest trip, µs: where a rare stall (a WAL checkpoint on the event loop) shows. */
  readonly p999: number
  readonly max: number
  readonly slow: number
  /** Per cause: slow trips that had it, and the share (%) of all measured trips that had it. */
  readonly causes: Map<Cause, { slow: number; allPercent: number }>
  /** Slow trips by their first cause in `CAUSES`' order, or "none". */
  readonly attributed: Map<Cause | "none", number>
  readonly slowQuartiles: ReadonlyArray<number>
  readonly targetGcs: number
  readonly compiles: number
  readonly deopts: number
}

const runOnce = async (spec: TargetSpec): Promise<RunSummary> => {
  const load = os.loadavg()[0] ?? 0
  const probeFile = path.join(os.tmpdir(), `ask-tail-gc-${process.pid}-${Math.floor(wall())}.json`)
  process.env["GC_PROBE_OUT"] = probeFile
  const clientGcs: Array<Span> = []
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) clientGcs.push({ from: performance.timeOrigin + e.startTime, to: performance.timeOrigin + e.startTime + e.duration })
  })
  observer.observe({ entryTypes: ["gc"] })
  const inst = await start(spec)
  const traces: Traces = { compiles: [], finalizes: [], deopts: [] }
  if (inst.child.stdout !== null) collectTraces(inst.child.stdout, traces)
  try {
    const { client: a } = await connectAndRegister(inst.socketPath, "tail-asker")
    const { client: b } = await connectAndRegister(inst.socketPath, "tail-answerer")
    const trips = await askTrips(a, b, options.rounds, options.warmup)
    a.close()
    b.close()
    await sleep(50) // lets the last trace lines and GC entries arrive
    const gcTarget = gcSpans(await readProbe(probeFile, inst.pid))
    observer.disconnect()
    const sorted = sortedCopy(trips.map((t) => (t.to - t.from) * 1000))
    const p99 = percentileSorted(sorted, 99)
    const slow = trips.filter((t) => (t.to - t.from) * 1000 >= p99)
    const first = trips[0]?.from ?? 0
    const last = trips[trips.length - 1]?.to ?? 0
    const inRun = (s: Span): boolean => s.to >= first && s.from <= last
    const causes = new Map(CAUSES.map((c) => [c, { slow: 0, allPercent: 0 }]))
    const attributed = new Map<Cause | "none", number>()
    for (const t of trips) {
      const found = causesOf(t, { rounds: options.rounds, gcTarget, gcClients: clientGcs, traces })
      for (const c of found) {
        const entry = causes.get(c)
        if (entry === undefined) continue
        entry.allPercent += 100 / trips.length
        if (slow.includes(t)) entry.slow++
      }
      if (!slow.includes(t)) continue
      const firstCause = CAUSES.find((c) => found.has(c)) ?? "none"
      attributed.set(firstCause, (attributed.get(firstCause) ?? 0) + 1)
    }
    const quarterOf = (t: Trip): number => Math.min(3, Math.floor((t.index * 4) / options.rounds))
    const slowQuartiles = [0, 1, 2, 3].map((q) => slow.filter((t) => quarterOf(t) === q).length)
    return {
      load,
      p50: percentileSorted(sorted, 50),
      p99,
      p999: percentileSorted(sorted, 99.9),
      max: sorted[sorted.length - 1] ?? 0,
      slow: slow.length,
      causes,
      attributed,
      slowQuartiles,
      targetGcs: gcTarget.filter(inRun).length,
      compiles: traces.compiles.filter(inRun).length,
      deopts: traces.deopts.filter((t) => t >= first && t <= last).length
    }
  } finally {
    observer.disconnect()
    await stop(inst)
    fs.rmSync(probeFile, { force: true })
  }
}

const main = async (): Promise<void> => {
  installCleanupHandlers()
  const spec = targetSpec(options.cmd)
  const runs: Array<RunSummary> = []
  for (let r = 1; r <= options.runs; r++) {
    const s = await runOnce(spec)
    runs.push(s)
    const causeText = CAUSES.map((c) => `${c} ${s.causes.get(c)?.slow ?? 0} (all ${(s.causes.get(c)?.allPercent ?? 0).toFixed(1)} %)`).join(", ")
    const attrText = [...CAUSES, "none" as const].map((c) => `${c} ${s.attributed.get(c) ?? 0}`).join(", ")
    process.stdout.write(
      `run ${r} load ${s.load.toFixed(2)}: p50 ${s.p50.toFixed(0)} µs, p99 ${s.p99.toFixed(0)} µs, p99.9 ${s.p999.toFixed(0)} µs, max ${s.max.toFixed(0)} µs; ${s.slow} trips ≥ p99; ` +
        `in the run: target GCs ${s.targetGcs}, compiles ${s.compiles}, deopts ${s.deopts}\n` +
        `  slow trips with: ${causeText}\n  attributed (first cause in that order): ${attrText}\n` +
        `  slow trips by quarter of the run: ${s.slowQuartiles.join(", ")}\n`
    )
  }
  const plain = runs.map((s) => ({ ...s, causes: Object.fromEntries(s.causes), attributed: Object.fromEntries(s.attributed) }))
  if (options.out !== "") fs.writeFileSync(options.out, `${JSON.stringify({ options, runs: plain }, null, 2)}\n`)
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`)
    process.exit(1)
  }
)
