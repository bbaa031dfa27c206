/**
 * Peer health as the session shows it (extension `health-v1`, C-HLT-1,
 * C-HLT-2, C-HLT-5, C-HLT-7): the health tags of a `list`/`status` row, the
 * delivery-guidance line under it, and the text of an ask that did not wait
 * because its target is busy. Pure functions over the broker's SessionInfo;
 * render.ts places them in rows.
 */
import type { SessionInfo } from "../protocol/frames.ts"

/**
 * What a row says a session is doing (C-HLT-2).
 *
 * @category models
 * @since 0.1.0
 */
export type PeerState = "idle" | "busy" | "unknown"

/**
 * `acceptsAsks` when published (true → idle, false → busy); otherwise the
 * status prefix: `idle…` → idle, `thinking…` or `tool:` → busy, else unknown
 * (C-HLT-2).
 *
 * @category health
 * @since 0.1.0
 */
export const peerState = (session: SessionInfo): PeerState => {
  if (session.acceptsAsks !== undefined) return session.acceptsAsks ? "idle" : "busy"
  const status = session.status ?? ""
  if (status.startsWith("idle")) return "idle"
  if (status.startsWith("thinking") || status.startsWith("tool:")) return "busy"
  return "unknown"
}

/**
 * An age as `Ns`, `Nm` or `Nh` (whole units, never negative; C-HLT-1).
 *
 * @category health
 * @since 0.1.0
 */
export const formatAge = (ms: number): string => {
  const seconds = Math.max(0, Math.floor(ms / 1000))
  if (seconds < 60) return `${seconds}s`
  const minutes = Math.floor(seconds / 60)
  return minutes < 60 ? `${minutes}m` : `${Math.floor(minutes / 60)}h`
}

/**
 * The health tags of a row (C-HLT-1): `state`, `accepts_asks`,
 * `pending_asks`, `last_intercom_activity` (`none` when 0 or unknown) and,
 * when the broker reported it, `last_seen`.
 *
 * @category health
 * @since 0.1.0
 */
export const healthTags = (session: SessionInfo, now: number): ReadonlyArray<string> => {
  const activity = session.lastIntercomActivity
  return [
    `state:${peerState(session)}`,
    `accepts_asks:${session.acceptsAsks ?? "unknown"}`,
    `pending_asks:${session.pendingAsks ?? "unknown"}`,
    `last_intercom_activity:${activity === undefined || activity <= 0 ? "none" : `${formatAge(now - activity)} ago`}`,
    ...(session.lastSeen === undefined ? [] : [`last_seen:${formatAge(now - session.lastSeen)} ago`])
  ]
}

/**
 * The guidance line under the self row (C-HLT-7).
 *
 * @category health
 * @since 0.1.0
 */
export const SELF_GUIDANCE =
  "↳ self target unavailable; choose a peer from Other sessions; use pending/reply for inbound asks"

/**
 * The delivery-guidance line under a peer row, suited to its state (C-HLT-7).
 *
 * @category health
 * @since 0.1.0
 */
export const deliveryGuidance = (state: PeerState): string => {
  switch (state) {
    case "idle":
      return "↳ idle: send (steer) starts its turn now; ask waits for its reply; queue only for intentional delay; passive discouraged"
    case "busy":
      return "↳ busy: send defaults to steer (reaches it at its next tool boundary); ask only if you must stay alive for the reply " +
        "(a default ask sends without waiting while it is busy; delivery: \"steer\" waits); queue only for intentional delay; passive discouraged"
    case "unknown":
      return "↳ health unknown: send defaults to steer; ask waits for its reply; queue only for intentional delay; passive discouraged"
  }
}

/**
 * `details.reason` of an ask that did not wait (C-HLT-5).
 *
 * @category health
 * @since 0.1.0
 */
export const PEER_BUSY_REASON: "peer_busy" = "peer_busy"
/**
 * `details.reasonCode` of an ask that did not wait (C-HLT-5).
 *
 * @category health
 * @since 0.1.0
 */
export const PEER_BUSY_REASON_CODE: "recipient_not_accepting_asks" = "recipient_not_accepting_asks"

/**
 * The result text of a default ask to a peer publishing `accepts_asks:false`
 * (C-HLT-5): sent, not waited for, and not known to be read.
 *
 * @category health
 * @since 0.1.0
 */
export const peerBusyText = (to: string): string =>
  `Question sent to ${to}, but ${to} is busy (accepts_asks:false), so this ask did not wait (reason: peer_busy). ` +
  `Delivery does not mean the question was consumed; a reply, if ${to} sends one, arrives later as a message. ` +
  `To wait anyway, ask with delivery: "steer".`
