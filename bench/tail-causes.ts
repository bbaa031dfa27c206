/**
 * The attribution `bench/ask-tail.ts` makes, apart from its sockets so it
 * can be tested: what a V8 trace line says happened (a compile job's
 * background and main-thread intervals, a deoptimization), and which of the
 * candidate causes a round trip overlapped. Times are wall-clock ms.
 */

/** A time interval on the wall clock (ms). */
export interface Span {
  readonly from: number
  readonly to: number
}

/** One measured round trip: its index among the measured ones, and its span. */
export interface Trip extends Span {
  readonly index: number
}

/** What the target's `--trace-opt` / `--trace-deopt` lines say happened, stamped when each line arrived. */
export interface Traces {
  /** Background compile jobs: the execute ms of `took prepare, execute, finalize ms`, before the finalize ms that end at the line. */
  readonly compiles: Array<Span>
  /** A compile job's finalizing on the main thread: the finalize ms ending at the line. */
  readonly finalizes: Array<Span>
  /** Arrival of each deoptimization's `[bailout …` line. */
  readonly deopts: Array<number>
}

const TOOK = /^\[completed compiling .*took ([\d.]+), ([\d.]+), ([\d.]+) ms\]/

/** Records what `line`, arrived at `at`, says happened (nothing for lines that are neither a completed compile nor a bailout). */
export const addTraceLine = (traces: Traces, line: string, at: number): void => {
  const took = TOOK.exec(line)
  if (took !== null) {
    const execute = Number(took[2])
    const finalize = Number(took[3])
    traces.compiles.push({ from: at - finalize - execute, to: at - finalize })
    traces.finalizes.push({ from: at - finalize, to: at })
  } else if (line.startsWith("[bailout")) traces.deopts.push(at)
}

/** The causes looked for, in the order a slow trip is attributed to the first it had. */
export const CAUSES = ["target GC", "clients' GC", "deopt", "compile finalize", "background compile", "first tenth"] as const
/** One of `CAUSES`. */
export type Cause = (typeof CAUSES)[number]

/** Trace lines arrive after the event: a deopt or compile line up to this long after a trip's end counts as inside it. */
export const LINE_SLACK_MS = 1

const overlaps = (trip: Span, spans: ReadonlyArray<Span>): boolean => spans.some((s) => s.from <= trip.to && s.to >= trip.from)

/** What a run saw besides its trips: the target's and the clients' collections, the trace lines, the measured trip count. */
export interface RunEvents {
  readonly rounds: number
  readonly gcTarget: ReadonlyArray<Span>
  readonly gcClients: ReadonlyArray<Span>
  readonly traces: Traces
}

/** Every cause `trip` overlapped: a collection during it, a trace line during it or within `LINE_SLACK_MS` after, the run's first tenth. */
export const causesOf = (trip: Trip, events: RunEvents): Set<Cause> => {
  const late = { from: trip.from, to: trip.to + LINE_SLACK_MS }
  const found = new Set<Cause>()
  if (overlaps(trip, events.gcTarget)) found.add("target GC")
  if (overlaps(trip, events.gcClients)) found.add("clients' GC")
  if (events.traces.deopts.some((t) => t >= late.from && t <= late.to)) found.add("deopt")
  if (overlaps(late, events.traces.finalizes)) found.add("compile finalize")
  if (overlaps(late, events.traces.compiles)) found.add("background compile")
  if (trip.index < events.rounds / 10) found.add("first tenth")
  return found
}
