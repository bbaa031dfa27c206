/**
 * Client timings drawn per client process (`--client-timings`, docs/testing.md
 * "Client timings from the seed"): each client a session starts gets its own
 * reconnect backoff, liveness probe, connect, send and list timeouts and
 * rejoin grace, and its session runtime its own connect and ask timeouts,
 * drawn from a PRNG stream of that session and client (`timingStream`).
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
 * span 1–10 s around the fixed 5 s. The session runtime's ask timeout is a
 * positive integer (config/settings.ts), drawn 1–60 s around the fixed 20 s;
 * the rejoin grace (a client option with no bound but a number of
 * milliseconds) 1 ms–20 s around the client's 10 s.
 *
 * A restarted client is a new process that may have other config, so each
 * client draws anew; the first client of a session draws from the stream
 * (and in the order) the per-session draw used, its new timings after the
 * old ones, so those keep their values for every seed.
 *
 * It owns nothing long-lived: `drawClientTimings` is a pure draw from the
 * stream it is given, `formatClientTimings` its line in the trace.
 */
import { Prng } from "../Prng.ts"
import type { SimClientTimings } from "./types.ts"

/** An inclusive range of milliseconds. */
export type MsRange = readonly [number, number]

/** The ranges `--client-timings` draws each client's timings from (`SimulationConfig.clientTimings`). */
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
  /** How long after a reconnect a send whose target is not found is retried. */
  readonly rejoinGraceMs: MsRange
  /** The session runtime's wait for a connection before an action reports `Intercom not connected`. */
  readonly sessionConnectTimeoutMs: MsRange
  /** The session runtime's ask timeout (an ask without its own, and how long a received ask stays pending). */
  readonly askTimeoutMs: MsRange
}

/** One client process's draw: its client's timings and its session runtime's. */
export interface SimProcessTimings {
  /** Its client's (`IntercomClientOptions` of the same names). */
  readonly client: Required<SimClientTimings>
  /** Its session runtime's (`IntercomSessionOptions` of the same names). */
  readonly session: { readonly connectTimeoutMs: number; readonly askTimeoutMs: number }
}

/**
 * What `--client-timings` draws from: reconnect base 5–500 ms with a cap of
 * 1–16 times it, liveness every 1–20 s with a 0.5–5 s timeout (below the
 * interval), connect, send and list timeouts 1–10 s, a rejoin grace of
 * 1 ms–20 s; the session runtime's connect timeout 1–10 s and ask timeout 1–60 s.
 */
export const defaultClientTimingRanges: SimClientTimingRanges = {
  reconnectBaseMs: [5, 500],
  reconnectMaxFactor: [1, 16],
  livenessIntervalMs: [1_000, 20_000],
  livenessTimeoutMs: [500, 5_000],
  connectTimeoutMs: [1_000, 10_000],
  sendTimeoutMs: [1_000, 10_000],
  listTimeoutMs: [1_000, 10_000],
  rejoinGraceMs: [1, 20_000],
  sessionConnectTimeoutMs: [1_000, 10_000],
  askTimeoutMs: [1_000, 60_000]
}

/**
 * The stream a session's `client`-th client (1, 2, …) draws its timings
 * from: the first client's is the one the per-session draw used, so its
 * first seven timings are the same for every seed; each later client has
 * its own.
 */
export const timingStream = (seed: number, sessionId: string, client: number): Prng =>
  Prng.derive(seed, client === 1 ? `${sessionId}/client-timings` : `${sessionId}/client-timings/c${client}`)

/**
 * One client process's timings, drawn from `prng` (its own stream,
 * `timingStream`, so drawing them shifts no other draw). Always in the given
 * ranges, with the liveness timeout below the interval and the reconnect
 * maximum at least the base. The timings the per-session draw had come first,
 * in its order; the later ones after them.
 */
export const drawClientTimings = (ranges: SimClientTimingRanges, prng: Prng): SimProcessTimings => {
  const draw = ([min, max]: MsRange) => prng.int(min, max)
  const reconnectBaseMs = draw(ranges.reconnectBaseMs)
  const reconnectMaxMs = reconnectBaseMs * Math.max(1, draw(ranges.reconnectMaxFactor))
  const livenessIntervalMs = draw(ranges.livenessIntervalMs)
  const [timeoutMin, timeoutMax] = ranges.livenessTimeoutMs
  const livenessTimeoutMs = prng.int(
    Math.min(timeoutMin, livenessIntervalMs - 1),
    Math.min(timeoutMax, livenessIntervalMs - 1)
  )
  const connectTimeoutMs = draw(ranges.connectTimeoutMs)
  const sendTimeoutMs = draw(ranges.sendTimeoutMs)
  const listTimeoutMs = draw(ranges.listTimeoutMs)
  return {
    client: {
      reconnectBaseMs,
      reconnectMaxMs,
      livenessIntervalMs,
      livenessTimeoutMs,
      connectTimeoutMs,
      sendTimeoutMs,
      listTimeoutMs,
      rejoinGraceMs: draw(ranges.rejoinGraceMs)
    },
    session: {
      connectTimeoutMs: draw(ranges.sessionConnectTimeoutMs),
      askTimeoutMs: draw(ranges.askTimeoutMs)
    }
  }
}

/** One line for the trace: a client process's timings. */
export const formatClientTimings = ({ client: t, session }: SimProcessTimings): string =>
  `reconnect ${t.reconnectBaseMs}–${t.reconnectMaxMs} ms, liveness every ${t.livenessIntervalMs} ms (timeout ${t.livenessTimeoutMs} ms), ` +
  `connect ${t.connectTimeoutMs} ms, send ${t.sendTimeoutMs} ms, list ${t.listTimeoutMs} ms, rejoin grace ${t.rejoinGraceMs} ms; ` +
  `session connect ${session.connectTimeoutMs} ms, ask ${session.askTimeoutMs} ms`
