/**
 * `stats-v1` from the client side: one short connection that registers
 * (asking for `stats-v1` and `stats-rows-cut-v1` only), asks for the broker's
 * metrics snapshot with `stats`, reads the `stats_result`, and unregisters.
 * What `intercom broker stats` uses; it never spawns a broker.
 *
 * The connection is a session while it lasts (unnamed, model
 * `intercom-stats`): the snapshot counts it among the live sessions.
 */
import { Clock, Data, Duration, Effect, type Scope } from "effect"
import { randomUUID } from "node:crypto"
import { decodeBrokerFrameText, isFrameDecodeError } from "../protocol/decode.ts"
import { STATS_ROWS_CUT_V1, STATS_V1 } from "../protocol/features.ts"
import type { BrokerStatsSnapshot } from "../protocol/stats.ts"
import type { Connection } from "../transport/Connection.ts"
import { dialUnix } from "../transport/UnixSocket.ts"
import { causeText } from "../protocol/causeText.ts"

/** Why no statistics could be read from the broker, in words for the person who asked. */
export class BrokerStatsFailed extends Data.TaggedError("BrokerStatsFailed")<{
  readonly socketPath: string
  readonly reason: string
}> {
  override get message(): string {
    return `Could not read the broker's statistics on ${this.socketPath}: ${causeText(this.reason)}`
  }
}

/** How to reach the broker. */
export interface BrokerStatsOptions {
  readonly socketPath: string
  /** How long the whole exchange may take (default 5 s). */
  readonly timeoutMs?: number
  /** Dials the broker (default: its Unix socket); for tests with another transport. */
  readonly dial?: (socketPath: string) => Effect.Effect<Connection, unknown, Scope.Scope>
}

/**
 * The broker's metrics now (`stats-v1`). Its `sessions.byGroupStatus` holds
 * the rows that fit the broker's answer, most sessions first;
 * `sessions.byGroupStatusOmitted` says how many rows and sessions were left
 * out (absent from a broker without `stats-rows-cut-v1`).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { fetchBrokerStats } from "effect-intercom/client"
 *
 * const program = Effect.map(fetchBrokerStats({ socketPath: "/tmp/agent/intercom/broker.sock" }), (stats) =>
 *   `${stats.sessions.live} sessions, ${stats.routed.delivered} messages delivered`)
 * ```
 */
export const fetchBrokerStats = (options: BrokerStatsOptions): Effect.Effect<BrokerStatsSnapshot, BrokerStatsFailed> => {
  const failed = (reason: string) => new BrokerStatsFailed({ socketPath: options.socketPath, reason })
  return Effect.gen(function*() {
    const dial = options.dial ?? dialUnix
    const connection = yield* dial(options.socketPath).pipe(
      Effect.mapError(() => failed("no broker answers there (is one running? `intercom broker status` tells)"))
    )
    const pending: Array<string> = []
    /** The next frame, reading more when none is buffered. */
    const next = Effect.gen(function*() {
      while (pending.length === 0) {
        pending.push(...yield* connection.read.pipe(Effect.mapError(() => failed("the broker closed the connection"))))
      }
      return pending.shift() ?? ""
    })
    const write = (frame: object) =>
      connection.writeAll([JSON.stringify(frame)]).pipe(Effect.mapError(() => failed("the broker closed the connection")))
    const startedAt = yield* Clock.currentTimeMillis
    yield* write({
      type: "register",
      sessionId: `stats-${randomUUID()}`,
      session: { cwd: process.cwd(), model: "intercom-stats", pid: process.pid, startedAt, lastActivity: startedAt },
      features: [STATS_V1, STATS_ROWS_CUT_V1]
    })
    const requestId = randomUUID()
    while (true) {
      const frame = decodeBrokerFrameText(yield* next)
      if (isFrameDecodeError(frame)) return yield* failed(`the broker sent a frame this client cannot read: ${frame.message}`)
      if (frame.type === "error") return yield* failed(frame.error)
      if (frame.type === "registration_failed") return yield* failed(frame.reason)
      if (frame.type === "registered") {
        if (!(frame.features ?? []).includes(STATS_V1)) {
          return yield* failed(`the broker does not offer ${STATS_V1} (an older version?); update it and restart it`)
        }
        yield* write({ type: "stats", requestId })
        continue
      }
      if (frame.type === "stats_result" && frame.requestId === requestId) {
        yield* write({ type: "unregister" }).pipe(Effect.ignore)
        return frame.stats
      }
    }
  }).pipe(
    Effect.scoped,
    Effect.timeoutOrElse({
      duration: Duration.millis(options.timeoutMs ?? 5_000),
      orElse: () => Effect.fail(failed(`the broker did not answer within ${options.timeoutMs ?? 5_000} ms`))
    })
  )
}
