/**
 * Takeovers as the ledger sees them: which connections hold their session
 * to the broker (`LinkRecord.brokerHolds`, as the broker handles each
 * `register` and `unregister`: `registrationsHandled`), which of them a
 * `register` took over (`heldAtRegister`, for known issue 22), whether it
 * asked for `rejoin-v1`, and, once its client reads `registered`, when each
 * connection taken over was replaced (`registeredRead`). Its own module
 * because both the broker's taps (wire.ts) and the client's read of
 * `registered` (brokerFrames.ts) keep this bookkeeping; order.ts and
 * controls.ts read what it records. When the broker read a `register` and
 * whether a refused one gives the holds back are recorded by the taps that
 * see them (wire.ts: `brokerRead`, `brokerWriteStarted`).
 */
import { RECEIVED_V1, REJOIN_V1 } from "../../protocol/features.ts"
import type { RegisteredFrame } from "../../protocol/frames.ts"
import { isHostile, type LedgerState, type LinkRecord } from "./state.ts"

/**
 * The other connections of `link`'s session the broker may hold it by (`LinkRecord.brokerHolds`) and has
 * not seen end: a takeover by `link` replaces them. The broker's view, not their clients': one whose
 * client has not read `registered` yet, or wrote an `unregister` the broker has not handled, is held.
 */
export const heldBy = (state: LedgerState, link: LinkRecord): ReadonlyArray<number> => {
  const out: Array<number> = []
  for (const other of state.links.values()) {
    if (other !== link && other.owner === link.owner && other.brokerHolds && !other.brokerEnded) out.push(other.id)
  }
  return out
}

/**
 * The broker handles `frames[from]` up to `frames[to]` read on link `linkId` (`Ledger.brokerHandled`):
 * a `register` on a connection that holds no registration makes it hold its session
 * (`LinkRecord.brokerHolds`), taking over the others that did (`heldAtRegister`, noted at the first),
 * from that moment, not from its client's read of `registered`; an `unregister` ends its hold.
 */
export const registrationsHandled = (
  state: LedgerState,
  linkId: number,
  frames: ReadonlyArray<string>,
  from: number,
  to: number
): void => {
  const link = state.links.get(linkId)
  if (link === undefined || isHostile(state, link.owner)) return
  for (let i = from; i < to; i++) {
    const text = frames[i]
    if (text === undefined) continue
    if (text.startsWith(`{"type":"unregister"`)) {
      link.brokerHolds = false
      continue
    }
    // A register on a connection that holds its registration is refused; the hold stays.
    if (!text.startsWith(`{"type":"register"`) || link.brokerHolds) continue
    const held = heldBy(state, link)
    link.heldAtRegister ??= held
    const ended: Array<number> = []
    for (const id of held) {
      const other = state.links.get(id)
      if (other !== undefined && other.brokerHolds) {
        other.brokerHolds = false
        ended.push(id)
      }
    }
    link.endedAtRegister = ended
    link.brokerHolds = !link.brokerEnded
  }
}

/** Whether a `register` frame asks for `rejoin-v1` (in its `features`). */
export const asksRejoin = (frame: object): boolean => {
  const features = "features" in frame ? frame.features : undefined
  return Array.isArray(features) && features.includes(REJOIN_V1)
}

/**
 * The client on `link` read `registered`: it is registered from now, with
 * `received-v1` if granted, and each connection its `register` took over
 * (as the broker handled it: `heldAtRegister`) is marked replaced when the
 * broker read that `register`.
 */
export const registeredRead = (state: LedgerState, link: LinkRecord, frame: RegisteredFrame): void => {
  // A takeover: the broker still held another registered connection of this session when it read
  // this one's `register` (it may have ended it since: the takeover ends the old connection at once).
  let takenOver = false
  for (const id of link.heldAtRegister ?? heldBy(state, link)) {
    const other = state.links.get(id)
    if (other === undefined) continue
    other.replacedAt = link.registerReadAt ?? state.now()
    other.replacedWithoutRejoin = link.rejoin !== true || other.rejoin !== true
    takenOver = true
  }
  if (takenOver) {
    const times = state.takeovers.get(link.owner) ?? []
    times.push(state.now())
    state.takeovers.set(link.owner, times)
  }
  link.registered = true
  link.registeredAt = state.now()
  link.receivedV1 = frame.features?.includes(RECEIVED_V1) === true
}
