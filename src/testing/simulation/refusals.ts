/**
 * Simulated hosts that are not always ready (`--host-refusals`, docs/testing.md
 * "Host refusals"): a pi host refuses a hand-off while it cannot take a
 * message (its session is saving, switching or shutting down), and the session
 * runtime tries again every 100 ms for as long as its generation is current,
 * then makes one last attempt as the generation closes and abandons what the
 * host still refuses (C-DLV-12). With a host journal, a message abandoned after
 * its checkpoint landed is the journal's to hand over again (C-DLV-14).
 *
 * Without this, every simulated host takes every message at once, so the
 * simulation never reaches a refused hand-off, an abandoned message, or "the
 * checkpoint landed but the hand-off did not".
 *
 * It owns one generation's busy spell: plain data touched only by the
 * synchronous code of that generation's hand-off fiber and finalizer.
 */
import { Clock, Data, Effect } from "effect"
import type { Inbound } from "../../session/Host.ts"
import type { Prng } from "../Prng.ts"

/** How often a simulated host is busy, and for how long (`SimulationConfig.hostRefusals`). */
export interface SimHostRefusals {
  /** Chance that a message's first hand-off finds the host busy (it starts a busy spell). */
  readonly chance: number
  /** A busy spell lasts a simulated time drawn uniformly from this range (ms); every hand-off in it is refused. */
  readonly busyMs: readonly [number, number]
}

/**
 * What `--host-refusals` gives every host: a third of the messages find it
 * busy for 0–3 s, longer than the runtime's 100 ms retry and often longer
 * than a generation lives.
 */
export const defaultHostRefusals: SimHostRefusals = { chance: 1 / 3, busyMs: [0, 3000] }

/** A simulated host's refusal: it is busy until the given simulated time. */
export class HostBusy extends Data.TaggedError("HostBusy")<{ readonly message: string }> {}

/** One generation's host readiness: `admit` fails with `HostBusy` while the host is busy. */
export interface HostReadiness {
  /** Runs before the host takes `inbound`; fails when the host refuses it. */
  readonly admit: (inbound: Inbound) => Effect.Effect<void, HostBusy>
}

/**
 * The readiness of one generation's host. Each message's first hand-off draws
 * (from `prng`, the generation's own stream) whether a busy spell starts; a
 * spell refuses every hand-off until it ends, the retried ones included.
 */
export const makeHostReadiness = (
  options: SimHostRefusals,
  prng: Prng,
  note: (text: string) => void,
  alias: (messageId: string) => string
): HostReadiness => {
  const [min, max] = options.busyMs
  /** Messages whose first hand-off was seen, so each draws once. */
  const seen = new Set<string>()
  /** Messages refused at least once, so the trace names each refusal once. */
  const refused = new Set<string>()
  let busyUntil = 0
  return {
    admit: (inbound) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const key = `${inbound.from.id}\u0000${inbound.message.id}`
        if (!seen.has(key)) {
          seen.add(key)
          if (now >= busyUntil && prng.chance(options.chance)) {
            busyUntil = now + prng.int(min, max)
            note(`host busy for ${busyUntil - now} ms at ${alias(inbound.message.id)}`)
          }
        }
        if (now >= busyUntil) return Effect.void
        if (!refused.has(key)) {
          refused.add(key)
          note(`host refused ${alias(inbound.message.id)}: busy for ${busyUntil - now} ms more`)
        }
        return Effect.fail(new HostBusy({ message: `the simulated host is busy for ${busyUntil - now} ms more` }))
      })
  }
}
