/**
 * Whom a send's `to` names (P42, P47): the live session an exact send's
 * `targetId` and `targetEpoch` name, or, for a plain send, the session `to`
 * resolves to over the sender's live sessions and then over the sessions
 * that left it lately (mailbox delivery, P49). A resolution that names no
 * one says why (a refusal), and still carries the id it names, if any, for
 * the replay check (P46), and the session key of that id (`targetKeyOf`).
 *
 * Its own module because resolving is one rule with one input (the
 * sender's space and the memory of departed sessions) and one answer (a
 * `Resolution`), which the send pipeline (Send.ts) only orders among its
 * steps. Plain synchronous code on the per-frame path: one function, no
 * state; every step is an index lookup.
 */
import { MAX_ID_LENGTH } from "../protocol/limits.ts"
import { DeliveryCode, Reason } from "../protocol/delivery.ts"
import type { RecentSessions } from "./RecentSessions.ts"
import { type Session, sessionKey } from "./Registry.ts"
import type { Resolution } from "./SendStage.ts"

/**
 * P42/P47: an exact send (`exact`: `targetId` + `targetEpoch` in `frame`)
 * names a live session of `sender`'s space and its epoch; otherwise `to`
 * resolves over live sessions (exact id, name ignoring case, id prefix),
 * then over recently departed ones (`recent`, for the mailbox).
 */
export const resolveTarget = (
  recent: RecentSessions,
  sender: Session,
  to: string,
  frame: { readonly [key: string]: unknown },
  exact: boolean
): Resolution => {
  const space = sender.space
  if (exact) {
    const { targetId, targetEpoch } = frame
    if (
      typeof targetId !== "string" || targetId === "" || targetId.length > MAX_ID_LENGTH ||
      typeof targetEpoch !== "string" || targetEpoch === "" || targetEpoch.length > MAX_ID_LENGTH
    ) {
      return { refused: { code: DeliveryCode.InvalidTarget, reason: Reason.invalidTarget }, id: undefined }
    }
    const target = space.sessions.get(targetId)
    if (target === undefined) {
      return { refused: { code: DeliveryCode.TargetNotFound, reason: Reason.targetNotFound }, id: targetId }
    }
    if (target.endpointEpoch !== targetEpoch) {
      return { refused: { code: DeliveryCode.TargetRebound, reason: Reason.targetRebound }, id: targetId }
    }
    return { target, remembered: undefined, id: targetId }
  }
  if (to.trim() === "") return { refused: { code: DeliveryCode.TargetNotFound, reason: Reason.targetNotFound }, id: undefined }
  // P42's first rule, a live session's exact id (nearly every send), answered here: `resolveLive` (which applies it
  // too) returns an array, one per send for this case (docs/performance.md, "Garbage, seventy-second stop").
  const byId = space.sessions.get(to)
  if (byId !== undefined) return { target: byId, remembered: undefined, id: byId.id }
  const live = space.resolveLive(to)
  if (live.length > 1) {
    return { refused: { code: DeliveryCode.AmbiguousTarget, reason: Reason.ambiguousLive(to) }, id: undefined }
  }
  const target = live[0]
  if (target !== undefined) return { target, remembered: undefined, id: target.id }
  const matches = recent.resolve(space.key, to)
  if (matches.length > 1) {
    return { refused: { code: DeliveryCode.AmbiguousTarget, reason: Reason.ambiguousDisconnected(to) }, id: undefined }
  }
  const remembered = matches[0]
  if (remembered === undefined) {
    return { refused: { code: DeliveryCode.TargetNotFound, reason: Reason.targetNotFound }, id: undefined }
  }
  return { target: undefined, remembered, id: remembered.id }
}

/**
 * The registry key of the session `resolution` (of `sender`'s plain or exact send, `resolveTarget`) names: its
 * target's or remembered session's key; for an exact send refused with an id (away, or rebound), that id's key in
 * the sender's space, where an exact send resolves. What a send's mail is keyed by (`Mail.targetKey`), so a retry
 * answered from its replay record names the session its record's message was for (SendReplays.replayed; review
 * rvbf). Undefined when the resolution names no id.
 */
export const targetKeyOf = (resolution: Resolution, sender: Session): string | undefined => {
  if (!("refused" in resolution)) return resolution.target?.key ?? resolution.remembered?.key
  return resolution.id === undefined ? undefined : sessionKey(sender.space.key, resolution.id)
}
