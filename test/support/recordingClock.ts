/**
 * A Clock that is another one (the test's TestClock) and records every sleep
 * asked of it, in ms: given to the broker alone (`memoryWorld`'s
 * `brokerClock`), it shows how its timer fibers sleep — a fiber that spins
 * on a deadline a fraction of a millisecond away asks for sleeps that do not
 * move the clock, over and over.
 */
import { Clock, Duration } from "effect"

/** A clock and the sleeps asked of it. */
export interface RecordingClock {
  readonly clock: Clock.Clock
  /** Every sleep asked of `clock`, in ms, oldest first. */
  readonly sleeps: ReadonlyArray<number>
}

/** A clock that is `inner`, recording the sleeps asked of it. */
export const recordingClock = (inner: Clock.Clock): RecordingClock => {
  const sleeps: Array<number> = []
  const clock: Clock.Clock = {
    currentTimeMillisUnsafe: () => inner.currentTimeMillisUnsafe(),
    currentTimeMillis: inner.currentTimeMillis,
    currentTimeNanosUnsafe: () => inner.currentTimeNanosUnsafe(),
    currentTimeNanos: inner.currentTimeNanos,
    monotonicTimeNanosUnsafe: () => inner.monotonicTimeNanosUnsafe(),
    monotonicTimeNanos: inner.monotonicTimeNanos,
    sleep: (duration) => {
      sleeps.push(Duration.toMillis(duration))
      return inner.sleep(duration)
    }
  }
  return { clock, sleeps }
}
