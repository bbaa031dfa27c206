/**
 * What every workload module shares: a run's result type, the fresh-instance
 * wrapper (start, body, stop, stderr notes), bounded waits, the text filler
 * and the wait for a quiet target. Kept apart from the workload registry
 * (workloads.ts) so the workload modules do not import each other.
 */
import type { BenchClient } from "./client.ts"
import { maxOf, percentileSorted, sortedCopy } from "./stats.ts"
import { cpuMicros, type Instance, type MeasureHooks, start, stop, type TargetSpec } from "./targets.ts"

/** A run's measured values by name (the JSON keeps all; `format.ts` picks the headline ones). */
export type Metrics = Record<string, number>

/** What a workload returns for one run: its metrics and any notes worth printing. */
export interface RunResult {
  readonly metrics: Metrics
  readonly notes: Array<string>
}

const FILLER = "The quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs. 0123456789 "

/** ASCII text of exactly `bytes` bytes. */
export const makeText = (bytes: number): string => {
  let s = ""
  while (s.length < bytes) s += FILLER
  return s.slice(0, bytes)
}

/** `p`, or a rejection naming `what` after `ms`. */
export const withTimeout = <A>(p: Promise<A>, ms: number, what: string): Promise<A> =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what}: timed out after ${ms} ms`)), ms)
    p.then(
      (a) => {
        clearTimeout(timer)
        resolve(a)
      },
      (e: unknown) => {
        clearTimeout(timer)
        reject(e instanceof Error ? e : new Error(String(e)))
      }
    )
  })

/** Resolves after `ms` (the bench is plain Node, outside the Effect runtime). */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** Runs `body` against a fresh instance; always stops it; reports an unexpected exit. */
export const withInstance = async (
  spec: TargetSpec,
  maxSessions: number | undefined,
  body: (inst: Instance) => Promise<RunResult>
): Promise<RunResult> => {
  const inst = await start(spec, maxSessions === undefined ? {} : { maxSessions })
  try {
    const result = await body(inst)
    // Only unusual output is worth a note (the broker logs INFO lines per session).
    const bad = inst.unusualStderr()
    if (bad.length > 0) result.notes.push(`stderr: ${bad.slice(-3).join(" | ").slice(-400)}`)
    result.metrics["stderrLines"] = inst.stderrLines()
    return result
  } catch (e) {
    const exit = inst.unexpectedExit()
    const msg = e instanceof Error ? e.message : String(e)
    throw new Error(exit === undefined ? msg : `${msg} [${spec.name} died: ${exit}; stderr: ${inst.stderr().slice(-600)}]`)
  } finally {
    await stop(inst)
  }
}

/** Closes every client's socket. */
export const closeAll = (clients: ReadonlyArray<BenchClient>): void => {
  for (const c of clients) c.close()
}

/** Waits until the process has used no CPU for two consecutive 100 ms polls (max `maxMs`). */
export const settle = async (pid: number, maxMs = 5000): Promise<void> => {
  const deadline = performance.now() + maxMs
  let last = cpuMicros(pid)
  let quiet = 0
  while (quiet < 2 && performance.now() < deadline) {
    await sleep(100)
    const now = cpuMicros(pid)
    quiet = now === last ? quiet + 1 : 0
    last = now
  }
}

/** What an ask workload's handlers get: the round in flight, and how to end it or the run. */
export interface RoundTrip {
  /** The round in flight (0-based, warm-up rounds included). */
  readonly round: () => number
  /** The answer to the round in flight arrived: its time is recorded and the next round starts (or the run ends). */
  readonly answered: () => void
  /** Ends the run with `error`; the first end wins. */
  readonly fail: (error: Error) => void
}

/**
 * Runs `warmup + rounds` round trips one at a time against the target `pid`:
 * `setup` installs the workload's handlers (which call `answered` or `fail`)
 * and returns how to start round `i`. Reports latency percentiles (µs) of
 * the measured rounds and the target's CPU per measured round trip. Bounded
 * by 30 s plus 10 ms a round. `hooks` (the profiler's) are told where the
 * measured rounds start and end.
 */
export const runRoundTrips = async (
  pid: number,
  rounds: number,
  warmup: number,
  setup: (trip: RoundTrip) => (round: number) => void,
  hooks?: MeasureHooks
): Promise<RunResult> => {
  const total = rounds + warmup
  const latenciesUs = new Array<number>(rounds)
  const cpuUs = await withTimeout(
    new Promise<number>((resolve, reject) => {
      let i = 0
      let t0 = 0
      let cpu0 = 0
      let done = false
      const trip: RoundTrip = {
        round: () => i,
        fail: (error) => {
          if (done) return
          done = true
          reject(error)
        },
        answered: () => {
          if (done) return
          if (i >= warmup) latenciesUs[i - warmup] = (performance.now() - t0) * 1000
          i++
          if (i < total) begin()
          else {
            done = true
            const cpu = cpuMicros(pid) - cpu0
            hooks?.end(pid, rounds)
            resolve(cpu)
          }
        }
      }
      const send = setup(trip)
      const begin = (): void => {
        if (i === warmup) {
          hooks?.begin(pid)
          cpu0 = cpuMicros(pid)
        }
        t0 = performance.now()
        send(i)
      }
      begin()
    }),
    30_000 + total * 10,
    "ask"
  )
  const sorted = sortedCopy(latenciesUs)
  return {
    metrics: {
      p50Us: percentileSorted(sorted, 50),
      p90Us: percentileSorted(sorted, 90),
      p99Us: percentileSorted(sorted, 99),
      maxUs: maxOf(sorted),
      cpuUsPerRound: cpuUs / rounds
    },
    notes: []
  }
}
