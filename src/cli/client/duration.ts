/**
 * Duration values of the client commands' flags: `--timeout` (how long an
 * ask waits) and `--rejoin-grace` (how long a watch waits for a session to
 * come back after a reconnect). A plain number is milliseconds (`90000`); a
 * number with a unit is that much time (`500ms`, `30s`, `2m`, `1h`, `3d`,
 * also `30 seconds`, `2 minutes`, `1.5m`). Results are whole milliseconds.
 */

const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  milli: 1,
  millis: 1,
  millisecond: 1,
  milliseconds: 1,
  s: 1_000,
  sec: 1_000,
  secs: 1_000,
  second: 1_000,
  seconds: 1_000,
  m: 60_000,
  min: 60_000,
  mins: 60_000,
  minute: 60_000,
  minutes: 60_000,
  h: 3_600_000,
  hour: 3_600_000,
  hours: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
  days: 86_400_000
}

const PATTERN = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/

/** Whole milliseconds (zero included), or `undefined` when `text` is not a duration. */
const parseDurationMs = (text: string): number | undefined => {
  const match = PATTERN.exec(text.trim().toLowerCase())
  if (match === null) return undefined
  const [, amount = "", unit = ""] = match
  const scale = unit === "" ? 1 : UNIT_MS[unit]
  if (scale === undefined) return undefined
  const ms = Math.round(Number(amount) * scale)
  return Number.isSafeInteger(ms) ? ms : undefined
}

/** Milliseconds, or `undefined` when `text` is not a positive duration (`--timeout`). */
export const parseTimeout = (text: string): number | undefined => {
  const ms = parseDurationMs(text)
  return ms !== undefined && ms > 0 ? ms : undefined
}

/**
 * The longest `--rejoin-grace`: 10 minutes. Until the grace after a
 * reconnect is over the watch does not learn who left while it was away, so
 * a longer one would keep a departure from it longer than an ask waits by
 * default.
 */
export const MAX_REJOIN_GRACE_MS = 600_000

/**
 * A `--rejoin-grace` value in milliseconds (0 to {@link MAX_REJOIN_GRACE_MS}),
 * or `undefined` when it is not one ({@link rejoinGraceProblem} says why). 0
 * reconciles at once after a reconnect: a session still on its way back
 * (after a broker restart) is then shown as left, and joined again when it
 * registers.
 *
 * @example
 * parseRejoinGrace("2s") // 2000
 * parseRejoinGrace("0") // 0
 * parseRejoinGrace("1h") // undefined: longer than 10 minutes
 */
export const parseRejoinGrace = (text: string): number | undefined => {
  const ms = parseDurationMs(text)
  return ms !== undefined && ms <= MAX_REJOIN_GRACE_MS ? ms : undefined
}

/**
 * What is wrong with a `--rejoin-grace` value {@link parseRejoinGrace}
 * refuses, and what it takes: the error effect/cli prints.
 */
export const rejoinGraceProblem = (text: string): string =>
  parseDurationMs(text) === undefined
    ? `--rejoin-grace must be a duration such as 3s, 500ms or 0 (milliseconds when no unit is given), got ${JSON.stringify(text)}`
    : `--rejoin-grace must be at most 10m (${MAX_REJOIN_GRACE_MS} ms), got ${JSON.stringify(text)}`
