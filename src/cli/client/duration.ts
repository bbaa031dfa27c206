/**
 * `--timeout` values: a plain number is milliseconds (`90000`); a number with
 * a unit is that much time (`500ms`, `30s`, `2m`, `1h`, `3d`, also `30 seconds`,
 * `2 minutes`, `1.5m`). The result is a positive whole number of milliseconds.
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

/** Milliseconds, or `undefined` when `text` is not a positive duration. */
export const parseTimeout = (text: string): number | undefined => {
  const match = PATTERN.exec(text.trim().toLowerCase())
  if (match === null) return undefined
  const [, amount = "", unit = ""] = match
  const scale = unit === "" ? 1 : UNIT_MS[unit]
  if (scale === undefined) return undefined
  const ms = Math.round(Number(amount) * scale)
  return Number.isSafeInteger(ms) && ms > 0 ? ms : undefined
}
