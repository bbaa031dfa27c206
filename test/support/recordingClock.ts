/**
 * A Clock that is another one (the test's TestClock) and records every sleep
 * asked of it, in ms: given to the broker alone (`memoryWorld`'s
 * `brokerClock`), it shows how its timer fibers sleep — a fiber that spins
 * on a deadline a fraction of a millisecond away asks for sleeps that do not
 * move the clock, over and over. Past `SPIN_GUARD` sleeps under a
 * millisecond it makes each further one a millisecond long, so that such a
 * fiber stops spinning and its test fails on the count instead of hanging.
 */
import { Clock, Duration } from "effect"

/** How many sleeps under a millisecond are slept as asked; later ones last a millisecond. */
export const SPIN_GUARD = 10_000

/** A clock and the sleeps asked of it. */
export interface RecordingClock {
  readonly clock: Clock.Clock
  /** Every sleep asked of `clock`, in ms, oldest first. */
  readonly sleeps: ReadonlyArray<number>
}

/** A clock that is `inner`, recording the sleeps asked of it (past `SPIN_GUARD` short ones, stretching them). */
export const recordingClock = (inner: Clock.Clock): RecordingClock => {
  const sleeps: Array<number> = []
  let short = 0
  const clock: Clock.Clock = {
    currentTimeMillisUnsafe: () => inner.currentTimeMillisUnsafe(),
    currentTimeMillis: inner.currentTimeMillis,
    currentTimeNanosUnsafe: () => inner.currentTimeNanosUnsafe(),
    currentTimeNanos: inner.currentTimeNanos,
    monotonicTimeNanosUnsafe: () => inner.monotonicTimeNanosUnsafe(),
    monotonicTimeNanos: inner.monotonicTimeNanos,
    sleep: (duration) => {
      const ms = Duration.toMillis(duration)
      sleeps.push(ms)
      if (ms < 1 && ++short > SPIN_GUARD) return inner.sleep(Duration.millis(1))
      return inner.sleep(duration)
    }
  }
  return { clock, sleeps }
}
