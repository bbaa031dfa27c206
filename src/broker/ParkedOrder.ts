/**
 * A sender's order across parked output: the per-sender counts of a
 * reader's own parked mail (`Peer.parkedMail`), the tests of what must wait
 * behind that mail or behind a withheld return of its sender's
 * (`Peer.returnWaits`), and the wake of what waits (`Peer.roomWaiters`).
 *
 * A message (or a control frame about one: ControlFrame.ts) whose sender
 * has older mail for a recipient in that recipient's own parked list — its
 * mailbox flush that did not fit, mail parked behind it — must not overtake
 * it: routed, it is parked with its batch (`Output.enqueue`); offered, its
 * drainer waits (`ParkedDrain.place`); forced, it is parked behind it
 * (ForcedOutput.ts). The counts answer that with a look-up, never a scan,
 * since that list also holds what the recipient's own sends parked for
 * others. A returned sender's mail from since its return waits likewise
 * while the recipient withholds that return (WithheldDepartures.ts).
 *
 * Ownership: plain functions, no state of their own. `countParkedMail` and
 * `uncountParkedMail` are the only writers of `Peer.parkedMail` but for the
 * close's `drainOnClose` (OutputEnd.ts), which clears it; `wakeWaiters` the
 * only one that empties `Peer.roomWaiters` (the close's `releaseWaiters`
 * reaches it through `roomMade`). Their callers — Output, its drainer side
 * (ParkedDrain.ts), its forced output (ForcedOutput.ts) and its close side —
 * call them in the same synchronous step as they write the parked list.
 * The tests run on the per-frame path (`enqueue`, `place`) as direct calls:
 * one field test each while nothing is parked or withheld. Split from
 * Output.ts (2026-12-06).
 */
import { Deferred, Exit } from "effect"
import { isSenderOrdered, type SenderOrdered, senderKeyOf } from "./OutboundItems.ts"
import type { OutboundItem, Peer, ReturnWait } from "./Peer.ts"

/**
 * Whether `item` is a message (or a control frame about one: ControlFrame.ts)
 * whose sender has older mail for `peer` in `peer`'s own parked list
 * (`Peer.parkedMail`): it must wait behind that mail. One field test while
 * none is parked there.
 */
export const waitsBehindParked = (peer: Peer, item: OutboundItem): boolean =>
  peer.parkedMail !== undefined && isSenderOrdered(item) && peer.parkedMail.has(senderKeyOf(item))

/**
 * The wait in `waits` (a recipient's `returnWaits`, or those it held when its
 * session left, `leftReturnWaits`) that message `item` (or a control frame
 * about one: ControlFrame.ts) is from since — its sender's return, which the
 * recipient withholds — or undefined.
 */
export const returnWaitOf = (
  waits: ReadonlyMap<string, ReturnWait> | undefined,
  item: SenderOrdered
): ReturnWait | undefined => {
  const wait = waits?.get(senderKeyOf(item))
  return wait !== undefined && item.senderSince > wait.since ? wait : undefined
}

/**
 * Whether `item` is a message of a returned sender's, from since its
 * return, for `peer`, which withholds that sender's departure and join
 * (`Peer.returnWaits`), or a control frame the sender sent since (about
 * such a message, or one still parked behind the old output): it waits
 * until they are owed — unless `offeredBy` is the connection whose parked
 * output they wait for (its item comes after that output anyway). One
 * field test while nothing is withheld so.
 */
export const waitsForReturn = (peer: Peer, item: OutboundItem, offeredBy: Peer | undefined): boolean => {
  if (peer.returnWaits === undefined || !isSenderOrdered(item)) return false
  const wait = returnWaitOf(peer.returnWaits, item)
  return wait !== undefined && wait.reader !== offeredBy
}

/** One more message of `senderKey`'s for `peer` in `peer`'s own parked list. */
export const countParkedMail = (peer: Peer, senderKey: string): void => {
  const counts = (peer.parkedMail ??= new Map())
  counts.set(senderKey, (counts.get(senderKey) ?? 0) + 1)
}

/** Drainers waiting for room in `peer`'s outbox (or for its own parked mail to be offered) try again. */
export const wakeWaiters = (peer: Peer): void => {
  const waiters = peer.roomWaiters
  if (waiters === undefined) return
  peer.roomWaiters = undefined
  for (const waiter of waiters) Deferred.doneUnsafe(waiter, Exit.void)
}

/**
 * A message of `senderKey`'s for `reader` left `reader`'s own parked list:
 * after the last of that sender's, what waited behind it tries again.
 */
export const uncountParkedMail = (reader: Peer, senderKey: string): void => {
  const counts = reader.parkedMail
  const left = counts?.get(senderKey)
  if (counts === undefined || left === undefined) return
  if (left > 1) return void counts.set(senderKey, left - 1)
  counts.delete(senderKey)
  if (counts.size === 0) reader.parkedMail = undefined
  wakeWaiters(reader)
}
