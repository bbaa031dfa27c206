/**
 * The health probe of a fuzz campaign: every 250 ms a fresh connection
 * sends `health` and times the answer, from before the dial to the
 * `health_ok` (what a client that wonders "is a broker running?" waits, P21).
 * Late answers (past the deadline) and missing ones (none within 5 s, or no
 * connection) are findings; the worst latency goes in the summary.
 */
import { Clock, Duration, Effect, Schedule } from "effect"
import { MAX_FRAME_BYTES } from "../protocol/constants.ts"
import type { Findings } from "./Findings.ts"
import { frameOfType, openRaw } from "./RawConnection.ts"
import type { Tally } from "./Tally.ts"

/** How long one probe waits before it counts the broker as not answering. */
const PROBE_TIMEOUT = Duration.seconds(5)

/** How often the campaign probes. */
export const PROBE_INTERVAL = Duration.millis(250)

/** One probe: dial, `health`, `health_ok`; records its latency. */
export const probeOnce = (options: {
  readonly socketPath: string
  readonly deadlineMs: number
  readonly findings: Findings
  readonly tally: Tally
  readonly label: string
  /** Told when (epoch ms) each `health_ok` arrived: the campaign's hung-broker watch. */
  readonly onAnswer?: (atMs: number) => void
}): Effect.Effect<void> =>
  Effect.scoped(Effect.gen(function*() {
    const { deadlineMs, findings, tally } = options
    const started = yield* Clock.currentTimeMillis
    const requestId = `${options.label}-${started}`
    const opened = yield* Effect.result(openRaw(options.socketPath, options.label, (frame) => {
      tally.frameWritten(frame.bytes, options.label)
      findings.check(frame.bytes <= MAX_FRAME_BYTES, "frame-too-large", () => `${frame.bytes}-byte frame to the health probe`)
    }))
    if (opened._tag === "Failure") {
      tally.probed(Duration.toMillis(PROBE_TIMEOUT), true)
      findings.add("health-unanswered", `could not connect: ${opened.failure.message}`)
      return
    }
    const conn = opened.success
    conn.writeNow([JSON.stringify({ type: "health", requestId })])
    const answer = yield* Effect.result(
      conn.next("health_ok", frameOfType("health_ok", (frame) => frame.requestId === requestId), PROBE_TIMEOUT)
    )
    const now = yield* Clock.currentTimeMillis
    const took = now - started
    if (answer._tag === "Failure") {
      tally.probed(took, true)
      findings.add("health-unanswered", `no health_ok after ${took} ms (${answer.failure._tag})`)
      return
    }
    options.onAnswer?.(now)
    const late = took > deadlineMs
    tally.probed(took, late)
    findings.check(!late, "health-late", () => `health answered after ${took} ms (deadline ${deadlineMs} ms)`)
  }))

/** Probes every PROBE_INTERVAL for as long as it runs (fork it, interrupt it). */
export const probeForever = (options: Parameters<typeof probeOnce>[0]): Effect.Effect<void> =>
  probeOnce(options).pipe(Effect.repeat(Schedule.spaced(PROBE_INTERVAL)), Effect.asVoid)
