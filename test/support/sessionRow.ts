/**
 * A broker snapshot's session row (observe/Snapshot.ts) for the tests of the
 * views that render one (`intercom top`, the terminal-safe cut): seen at
 * `now`, active 5 s before, registered a minute before, no traffic.
 */
import type { SessionRow } from "../../src/observe/Snapshot.ts"

/** The row of session `id` named `name` at `now`, with `extra` over the defaults. */
export const sessionRow = (now: number, id: string, name: string, extra: Partial<SessionRow> = {}): SessionRow => ({
  id,
  name,
  group: "default",
  lastSeen: now,
  lastActivity: now - 5_000,
  pendingAsks: 0,
  waitingAsks: 0,
  messagesOut: 0,
  messagesIn: 0,
  outboxChars: 0,
  ratePerSec: 0,
  registeredAt: now - 60_000,
  ...extra
})
