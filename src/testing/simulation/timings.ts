/**
 * Client timings drawn per session (`--client-timings`, docs/testing.md
 * "Client timings from the seed"): each session's clients get their own
 * reconnect backoff, liveness probe and connect, send and list timeouts,
 * drawn from the session's own PRNG stream.
 *
 * Why: with one fixed set for every client (world.ts: reconnect 250 ms–4 s,
 * liveness 10 s / 3 s, 5 s timeouts), every race that depends on the order of
 * two timers always resolves the same way; a caller's retry after a lost
 * connection was invisible because the reconnect base equalled its 250 ms
 * sleep.
 *
 * The ranges are legal for the real client (client/options.ts and
 * config/settings.ts): every timing is a positive integer of milliseconds;
 * the liveness timeout is below its interval (the client caps it at the
 * interval anyway); the reconnect maximum is at least the base (the client
 * caps each delay at the maximum). The reconnect base goes well below the
 * fixed 250 ms (down to 5 ms, as a kill -9 test's 10 ms) and the timeouts
 * span 1–10 s around the fixed 5 s.
 *
 * It owns nothing long-lived: `drawClientTimings` is a pure draw from the
 * stream it is given, `formatClientTimings` its line in the trace.
 */
import type { Prng } from "../Prng.ts"
import type { SimClientTimings } from "./types.ts"

/** An inclusive range of milliseconds. */
export type MsRange = readonly [number, number]

/** The ranges `--client-timings` draws each session's client timings from (`SimulationConfig.clientTimings`). */
export interface SimClientTimingRanges {
  /** The first reconnect delay (the backoff's base). */
  readonly reconnectBaseMs: MsRange
  /** The backoff's cap is the base times a factor drawn from this range (at least 1, so max ≥ base). */
  readonly reconnectMaxFactor: readonly [number, number]
  /** How often a registered client probes the broker. */
  readonly livenessIntervalMs: MsRange
  /** How long the probe may take; drawn below the interval drawn with it. */
  readonly livenessTimeoutMs: MsRange
  /** How long one dial and registration may take. */
  readonly connectTimeoutMs: MsRange
  /** How long `send` waits for the broker's answer. */
  readonly sendTimeoutMs: MsRange
  /** How long `list` waits. */
  readonly listTimeoutMs: MsRange
}

/**
 * What `--client-timings` draws from: reconnect base 5–500 ms with a cap of
 * 1–16 times it, liveness every 1–20 s with a 0.5–5 s timeout (below the
 * interval), connect, send and list timeouts 1–10 s.
 */
export const defaultClientTimingRanges: SimClientTimingRanges = {
  reconnectBaseMs: [5, 500],
  reconnectMaxFactor: [1, 16],
  livenessIntervalMs: [1_000, 20_000],
  livenessTimeoutMs: [500, 5_000],
  connectTimeoutMs: [1_000, 10_000],
  sendTimeoutMs: [1_000, 10_000],
  listTimeoutMs: [1_000, 10_000]
}

/**
 * One session's client timings, drawn from `prng` (the session's own stream,
 * so drawing them shifts no other draw). Always in the given ranges, with
 * the liveness timeout below the interval and the reconnect maximum at least
 * the base.
 */
export const drawClientTimings = (ranges: SimClientTimingRanges, prng: Prng): Required<SimClientTimings> => {
  const draw = ([min, max]: MsRange) => prng.int(min, max)
  const reconnectBaseMs = draw(ranges.reconnectBaseMs)
  const reconnectMaxMs = reconnectBaseMs * Math.max(1, draw(ranges.reconnectMaxFactor))
  const livenessIntervalMs = draw(ranges.livenessIntervalMs)
  const [timeoutMin, timeoutMax] = ranges.livenessTimeoutMs
  const livenessTimeoutMs = prng.int(
    Math.min(timeoutMin, livenessIntervalMs - 1),
    Math.min(timeoutMax, livenessIntervalMs - 1)
  )
  return {
    reconnectBaseMs,
    reconnectMaxMs,
    livenessIntervalMs,
    livenessTimeoutMs,
    connectTimeoutMs: draw(ranges.connectTimeoutMs),
    sendTimeoutMs: draw(ranges.sendTimeoutMs),
    listTimeoutMs: draw(ranges.listTimeoutMs)
  }
}

/** One line for the trace: a session's client timings. */
export const formatClientTimings = (t: Required<SimClientTimings>): string =>
  `reconnect ${t.reconnectBaseMs}–${t.reconnectMaxMs} ms, liveness every ${t.livenessIntervalMs} ms (timeout ${t.livenessTimeoutMs} ms), ` +
  `connect ${t.connectTimeoutMs} ms, send ${t.sendTimeoutMs} ms, list ${t.listTimeoutMs} ms`
