/**
 * Peer health (extension `health-v1`, C-HLT-3, C-HLT-4, C-HLT-8): what the
 * broker knows about whether a session can take an ask now.
 *
 * It owns each session's `SessionHealth` record (created with the session,
 * written only here and by the Router's one-line `lastSeen` stamp):
 *
 * - `lastSeen`: the broker clock when it last read a batch of frames from the
 *   session — stamped once per batch, a plain number write, no allocation;
 * - `lastIntercomActivity`: the session's last send or receive, never later
 *   than the broker's clock. A message routed live sets it on both ends to
 *   the broker's time of the send; a published value moves it only forward,
 *   and no further than the broker's clock when it arrives (a client whose
 *   clock runs ahead of the broker's would otherwise show a future time,
 *   which a health monitor would read as "active just now" until the
 *   broker's clock caught up);
 * - `acceptsAsks`, `pendingAsks`: only what the session published (unknown
 *   until it does).
 *
 * Only a client granted `health-v1` sees these fields, and only in `sessions`
 * answers: the cached SessionInfo JSON everyone else gets (and the membership
 * feed) stays the base record, and health fields never trigger a re-broadcast.
 */
import type { PresenceFrame } from "../protocol/frames.ts"
import type { Session } from "./Registry.ts"
import type { SendStage } from "./SendStage.ts"

/** One session's health, as the broker keeps it (see the module header). */
export class SessionHealth {
  /** Broker clock of the last frame batch read from the session. */
  lastSeen: number
  /** Its last send or receive (epoch ms; 0 means none). */
  lastIntercomActivity = 0
  /** What it published; undefined until it does. */
  acceptsAsks: boolean | undefined = undefined
  /** What it published; undefined until it does. */
  pendingAsks: number | undefined = undefined

  constructor(now: number) {
    this.lastSeen = now
  }
}

/**
 * Applies the health fields of a `presence` frame from a session granted
 * `health-v1` (a base client's are ignored), at broker time `now`: a
 * published `lastIntercomActivity` is capped at `now` and only moves the
 * stored one forward. Returns nothing: health changes are read at `list`
 * time, never broadcast.
 */
export const applyHealthPresence = (health: SessionHealth, frame: PresenceFrame, now: number): void => {
  if (frame.acceptsAsks !== undefined) health.acceptsAsks = frame.acceptsAsks
  if (frame.pendingAsks !== undefined) health.pendingAsks = frame.pendingAsks
  if (frame.lastIntercomActivity !== undefined) {
    const published = Math.min(frame.lastIntercomActivity, now)
    if (published > health.lastIntercomActivity) health.lastIntercomActivity = published
  }
}

/**
 * The session's SessionInfo JSON with its health fields, for a `sessions`
 * answer to a client granted `health-v1`: the cached base record with the
 * fields spliced in before its closing brace (built per answer, since
 * `lastSeen` changes with every batch).
 */
export const infoJsonWithHealth = (session: Session): string => {
  const health = session.health
  let extra = `,"lastSeen":${health.lastSeen},"lastIntercomActivity":${health.lastIntercomActivity}`
  if (health.acceptsAsks !== undefined) extra += `,"acceptsAsks":${health.acceptsAsks}`
  if (health.pendingAsks !== undefined) extra += `,"pendingAsks":${health.pendingAsks}`
  return `${session.infoJson.slice(0, -1)}${extra}}`
}

/**
 * The send stage of peer health: a message handed to a live recipient stamps
 * `lastIntercomActivity` on its sender and its recipient (C-HLT-4).
 */
export const healthStage: SendStage = {
  delivered: (attempt, _mail, target) => {
    attempt.sender.health.lastIntercomActivity = attempt.now
    target.health.lastIntercomActivity = attempt.now
  }
}
