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
 *
 * A control frame (ControlFrame.ts) is a frame of the connection's own to
 * every test here but `isControl` and the sender-ordered ones
 * (`isSenderOrdered`, `senderKeyOf`): those put it with its sender's mail.
 */
import type { OutFrame } from "../protocol/framing.ts"
import { ControlFrame } from "./ControlFrame.ts"
import type { Mail, OutboundItem, OutboundMessage, Peer, Returnable, Written } from "./Peer.ts"

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

/** A `message_control` frame about a sender's message to a session (ControlFrame.ts). */
export const isControl = (item: OutboundItem): item is ControlFrame => item instanceof ControlFrame

/**
 * What is ordered by its sender towards a session: a message, or a control
 * frame about one — it must not overtake that sender's older mail there.
 */
export type SenderOrdered = OutboundMessage | ControlFrame

/** A message or a control frame (`SenderOrdered`): a field test, then a class test. */
export const isSenderOrdered = (item: OutboundItem): item is SenderOrdered => isMessage(item) || item instanceof ControlFrame

/** The registry key of the sender `item` is ordered by: the message's, or the controlled message's. */
export const senderKeyOf = (item: SenderOrdered): string => "mail" in item ? item.mail.senderKey : item.senderKey

/**
 * A control frame about mail for a session `peer` no longer holds (taken
 * over, or unregistered): it goes where that mail goes, after it
 * (OutputEnd.handOver). Per connection event only.
 */
export const isStrandedControl = (item: OutboundItem, peer: Peer): item is ControlFrame =>
  item instanceof ControlFrame && item.to !== peer.session?.key

/**
 * Whether `items` (a write's returnable output, or a closing connection's
 * untaken rest) carry the message of record key `messageKey`. A scan: at a
 * takeover, or for a cancel while a custody hold waits, only.
 */
export const carriesMessage = (items: ReadonlyArray<Written> | undefined, messageKey: string): boolean => {
  if (items === undefined) return false
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!
    if ("mail" in item && item.mail.recordKey === messageKey) return true
  }
  return false
}

/**
 * Whether `parked` (parked output: recipient and item pairs — a
 * connection's, `Peer.parked`, or the batch's) holds the message of record
 * key `messageKey`. A scan, for a cancel or supersede only (Receipts'
 * `mayStillWait`, `Output.parksWithdrawn`).
 */
export const parksMessage = (parked: ReadonlyArray<readonly [Peer, OutboundItem]>, messageKey: string): boolean => {
  for (let i = 0; i < parked.length; i++) {
    const item = parked[i]![1]
    if (isMessage(item) && item.mail.recordKey === messageKey) return true
  }
  return false
}

/**
 * The mail of record key `messageKey` among the `limit` first of `items`
 * (an outbox, a write's returnable output, a hold's kept items), oldest
 * first; undefined when not there. A scan, only for a reply accepted
 * (AnsweredCopies.markAnswered), bounded by `limit`.
 */
export const mailAmong = (
  items: ReadonlyArray<OutboundItem> | undefined,
  messageKey: string,
  limit: number
): Mail | undefined => {
  if (items === undefined) return undefined
  const n = Math.min(limit, items.length)
  for (let i = 0; i < n; i++) {
    const item = items[i]!
    if (isMessage(item) && item.mail.recordKey === messageKey) return item.mail
  }
  return undefined
}

/** An answer to `health` or `list` (frames built by encode.ts, so the prefix is exact): it reads no state a send changes. */
export const isReadOnlyAnswer = (item: OutboundItem): boolean =>
  typeof item === "string" && (item.startsWith(`{"type":"health_ok"`) || item.startsWith(`{"type":"sessions"`))

/**
 * An answer that changes which session the connection holds, or ends it
 * holding none (frames built by encode.ts, so the prefix is exact): items
 * going ahead of a head that waits stop there (ParkedDrain.offerOwnAhead),
 * since what is behind it may be for the session it names, or was never
 * meant to be read before it.
 * - `registered`: the connection holds the session it names from here on;
 *   mail for a session registered in a batch follows its `registered`.
 * - `registration_failed`: a registration refused; the connection ends.
 * - `taken_over`: another connection took the session; the connection ends.
 * - `error`: a refused connection or registration (`Router.refuse`, the
 *   session cap); the connection ends.
 * Every other answer (a send's ack, a topic, results, questions, stats or
 * supervisor answer, a receipt…) answers a request by its id, or is a push
 * no mail depends on: what goes ahead passes it, and it stays in place.
 * Slow path only.
 */
export const changesSession = (item: OutboundItem): boolean =>
  typeof item === "string" &&
  (item.startsWith(`{"type":"registered"`) || item.startsWith(`{"type":"registration_failed"`) ||
    item.startsWith(`{"type":"taken_over"`) || item.startsWith(`{"type":"error"`))

/**
 * An item a reader's own parked list holds for the reader itself that may go
 * ahead of a head that waits (ParkedDrain.offerOwnAhead): a message, a control
 * frame about one, a read-only answer. The other answers stay in place:
 * passed (the acks of the reader's own sends parked at the head among them),
 * but for those that change the session (`changesSession`), where the items
 * going ahead stop.
 */
export const goesAhead = (item: OutboundItem): boolean => isSenderOrdered(item) || isReadOnlyAnswer(item)
