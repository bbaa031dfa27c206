/**
 * What an outbox item is: the tests Output.ts and its close and takeover
 * side (OutputEnd.ts, CustodyHold.ts) sort the items of `Peer.outbox` and
 * `Peer.parked` by — mail, a notice, a frame of the connection's own, a
 * signal — and what one costs an outbox's budget.
 *
 * Plain functions of an item (and the peer it is queued for), no state: they
 * sit on the per-frame path (`Output.enqueue`, `takeForWrite`), so each is a
 * few field tests and allocates nothing. Apart from Output.ts so the modules
 * it was split into test items the same way without reaching into it.
 */
import type { OutFrame } from "../protocol/framing.ts"
import type { OutboundItem, OutboundMessage, Peer, Returnable } from "./Peer.ts"

/**
 * Characters of frame text an item puts in an outbox (signals: none). An
 * object is a frame in parts, or output taken back if unwritten (it has a `frame`).
 */
export const charsOf = (item: OutboundItem): number =>
  typeof item === "string" ? item.length : typeof item === "object" ? ("frame" in item ? item.frame : item).length : 0

/** Does this output still belong on `peer`'s connection (its session is still the one it is for)? */
export const belongsTo = (item: Returnable, peer: Peer): boolean => {
  const key = peer.session?.key
  return key !== undefined && ("mail" in item ? item.to === key : item.owedTo === key)
}

/** Mail or a notice whose session `peer` no longer holds (it was taken over, or unregistered). */
export const isStranded = (item: OutboundItem, peer: Peer): item is Returnable =>
  typeof item === "object" && "frame" in item && !belongsTo(item, peer)

/** A frame of the connection's own (an answer): neither mail nor a notice for its session, nor a signal. */
export const isAnswer = (item: OutboundItem): item is OutFrame =>
  typeof item === "string" || (typeof item === "object" && !("frame" in item))

/** A message (not a notice, a frame or a signal). */
export const isMessage = (item: OutboundItem): item is OutboundMessage => typeof item === "object" && "mail" in item
