/**
 * A simulated host journal (`--host-journal`, docs/testing.md "Host
 * journal"): what a pi host keeps in its saved session, for one simulated
 * session across all its clients and generations (a resumed process finds
 * it), so that the session runtime's checkpoint and restore (C-DLV-14,
 * `session/InboundJournal.ts`) run in the simulation as they do over pi.
 *
 * It owns the session's checkpointed records and its agent's history (the
 * messages any of its generations' hosts were handed): plain data touched
 * only by synchronous code of that session's fibers.
 *
 * A checkpoint waits a seeded stretch of simulated time before it lands,
 * like a host writing its session file: a generation that closes meanwhile
 * is interrupted in the middle of a message (known issue 15's window), and
 * an interrupted checkpoint never lands.
 */
import { Effect } from "effect"
import type { HandledMessage, InboundJournal, JournalRecord } from "../../session/Host.ts"
import type { Prng } from "../Prng.ts"
import type { SimHostRefusals } from "./refusals.ts"

/** How a simulated host journal behaves (`SimulationConfig.hostJournal`). */
export interface SimHostJournal {
  /** Each checkpoint waits a simulated time drawn uniformly from this range (ms) before it lands. */
  readonly checkpointMs: readonly [number, number]
  /**
   * Hosts that are sometimes busy and refuse hand-offs for a while
   * (simulation/refusals.ts, `--host-refusals`). The session runtime retries a
   * refused hand-off, abandons what is still refused when its generation
   * closes (C-DLV-12), and the journal hands that over again (C-DLV-14). It
   * lives here because it needs the journal: without one an abandoned message
   * is lost by contract. Default none: every host takes every message at once.
   */
  readonly refusals?: SimHostRefusals | undefined
}

/** The journal a `--host-journal` world gives its hosts: checkpoints take 0–1.5 s. */
export const defaultHostJournal: SimHostJournal = { checkpointMs: [0, 1500] }

/** One session's saved journal and history (see the module comment). */
export interface SimJournal {
  /**
   * The `InboundJournal` of one generation's host; its checkpoint delays come
   * from `prng`; `note` traces with message ids shown by `alias`.
   */
  readonly forGeneration: (prng: Prng, note: (text: string) => void, alias: (messageId: string) => string) => InboundJournal
  /** The agent's history took this message (a host of the session was handed it). */
  readonly delivered: (fromId: string, messageId: string) => void
}

const keyOf = (fromId: string, messageId: string): string => `${fromId}\u0000${messageId}`

/** A session's empty journal. */
export const makeSimJournal = (options: SimHostJournal): SimJournal => {
  /** Checkpointed records, oldest first, each once. */
  const records: Array<JournalRecord> = []
  const saved = new Set<string>()
  /** What the agent's history holds. */
  const history = new Set<string>()
  /** The same, in the order history took them (`InboundJournal.handled`). */
  const handled: Array<HandledMessage> = []
  const [min, max] = options.checkpointMs
  return {
    forGeneration: (prng, note, alias) => ({
      checkpoint: (record) =>
        Effect.suspend(() => {
          const waitMs = prng.int(min, max)
          return Effect.andThen(
            Effect.sleep(waitMs),
            Effect.sync(() => {
              const key = keyOf(record.from.id, record.message.id)
              if (saved.has(key)) return
              saved.add(key)
              records.push(record)
              note(`journal: checkpointed ${alias(record.message.id)} after ${waitMs} ms`)
            })
          ).pipe(Effect.onInterrupt(() => Effect.sync(() => note(`journal: checkpoint of ${alias(record.message.id)} interrupted`))))
        }),
      undelivered: Effect.sync(() => records.filter((record) => !history.has(keyOf(record.from.id, record.message.id)))),
      handled: Effect.sync(() => handled.slice())
    }),
    delivered: (fromId, messageId) => {
      const key = keyOf(fromId, messageId)
      if (history.has(key)) return
      history.add(key)
      handled.push({ fromId, messageId })
    }
  }
}
