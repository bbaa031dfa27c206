/**
 * A `Connection` with no socket behind it, for tests that drive the Router
 * by hand (a batch at a time, each write and drainer offer at an exact
 * point): reads never come, and writes complete at once — or, `stuck`,
 * never, so its writer stays busy and its outbox fills.
 */
import { Effect } from "effect"
import type { Connection } from "../../src/transport/Connection.ts"

/** Connection `id`, whose writes complete at once, or (`stuck`) never. */
export const fakeConnection = (id: number, stuck: boolean): Connection => ({
  id,
  trustedLocal: true,
  read: Effect.never,
  writeAll: () => Effect.void,
  write: () => (stuck ? Effect.never : undefined),
  unfinishedWrite: () => undefined,
  readProgress: () => ({ frames: 0, pending: 0, reading: true }),
  readPending: () => 0,
  end: Effect.void,
  destroy: Effect.void
})
