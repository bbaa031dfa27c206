/**
 * The health probe (P21): connect, send `health` with a fresh request id, and
 * accept only a matching `health_ok` for protocol "pi-intercom" version 1.
 * Anything else — no socket, refused, wrong reply, timeout — means "not running".
 */
import { Duration, Effect, Option } from "effect"
import { randomUUID } from "node:crypto"
import { PROTOCOL_NAME, PROTOCOL_VERSION } from "../protocol/constants.ts"
import { dialUnix } from "./UnixSocket.ts"

/**
 * Whether a broker answers `health` on `socketPath` within `timeout` (default
 * 1 s). Never fails: every problem is `false`.
 */
export const probeHealth = (
  socketPath: string,
  timeout: Duration.Input = Duration.seconds(1)
): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    const connection = yield* dialUnix(socketPath)
    const requestId = randomUUID()
    yield* connection.writeAll([JSON.stringify({ type: "health", requestId })])
    const frames = yield* connection.read
    const first: unknown = JSON.parse(frames[0] ?? "null")
    return typeof first === "object" && first !== null &&
      "type" in first && first.type === "health_ok" &&
      "requestId" in first && first.requestId === requestId &&
      "protocol" in first && first.protocol === PROTOCOL_NAME &&
      "version" in first && first.version === PROTOCOL_VERSION
  }).pipe(
    Effect.scoped,
    Effect.timeoutOption(timeout),
    Effect.map(Option.getOrElse(() => false)),
    Effect.catchCause(() => Effect.succeed(false))
  )
