/**
 * Picking a running session for an op: the ops that need several sessions
 * in given roles (parked flush, held return, custody hold, a flood) draw an index
 * for each and take the first running session from there that fits, so a
 * drawn session that is stopped gives way to the next one, the same on
 * every run of a seed.
 */
import { Effect } from "effect"
import type { SimSession } from "./types.ts"

/**
 * The first running session from `index` on (wrapping round) that
 * `accept`s, or undefined when none does.
 *
 * @example
 * const recipient = yield* nextRunning(sim.sessions, op.recipient, (session) => session.group === "default")
 */
export const nextRunning = (
  sessions: ReadonlyArray<SimSession>,
  index: number,
  accept: (session: SimSession) => boolean
): Effect.Effect<SimSession | undefined> =>
  Effect.gen(function*() {
    for (let i = 0; i < sessions.length; i++) {
      const session = sessions[(index + i) % sessions.length]
      if (session !== undefined && accept(session) && (yield* session.running)) return session
    }
    return undefined
  })
