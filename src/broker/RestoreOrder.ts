/**
 * The order a durable restore queues stored mail in (Router.restore): the order the mailbox had it before the
 * restart. Rows are numbered as accepted (`seq`), and the mailbox queues mail as it comes — but mail given back to
 * it (a closing connection gave it back unconfirmed, MailReturns.ts) went to the back of the queue at its return,
 * dated then, while its row kept its acceptance's `seq`. Such a row carries a mark (`StoredMail.givenBack`: the
 * first `seq` accepted after its return), and is queued just before the first row whose `seq` reaches that mark.
 * Restored so, its queue place is the one it had (the bounds evict the oldest by queue place, and flush in that
 * order) and its date is in order with its neighbours', so the mailbox never reads it as a clock step back that
 * re-dates other mail (AgedMap.ts; review revmailbox D1). Rows given back with nothing accepted between their
 * returns share a mark; among them the order is their return's, which their give-back date (`mail.queuedAt`) tells
 * unless the clock stepped back between them — not their `seq`, their acceptance's (review rrsq probe 1: the one
 * given back first was restored behind the other, which the bounds then evicted first, and its earlier date re-dated
 * the other to it). Returns within one millisecond tie there too and go by `seq`: the mailbox had them in the order
 * they came back, which no row records (docs/store.md). One sort of the given-back rows, one merge: O(n log n).
 * An ask put back after its reply was lost (MailDelivery.askAgain) is stored again under its old row's `seq`, marked
 * so too (StoreJournal.putAgain). Queue place is not acceptance order, which a stamp tie under a reused id is broken by: each restored mail also
 * takes its place in this run's acceptance order, in `seq` order (`acceptInSeqOrder`).
 */
import type { StoredMail } from "../store/MailStore.ts"
import { ACCEPTED } from "../store/records.ts"
import type { BrokerStamps } from "./BrokerStamps.ts"

/**
 * `mail` (in `seq` order, as the store loads it), each with its place in this run's acceptance order
 * (`Mail[ACCEPTED]`, from `stamps.accept()`) taken in `seq` order: a row's `seq` is its acceptance's, also for a
 * row given back since (its return is a mark beside it, `givenBack`) and for an ask put back after its reply was
 * lost, stored again under its old row's `seq` (StoreJournal.putAgain; review rvmk2 probe 1) — but one whose drop
 * came before a restart and its putting back after, stored under a new `seq` (its debt keeps none). Called before any send of this run takes a
 * place, so restored mail keeps the order it was accepted in, before every message accepted after the restart:
 * a mailbox cancel under a reused id breaks a stamp tie as the broker that did not restart would
 * (MailDelivery.newestUnder; review rrmk probe 3). A copy of each row and its mail, once per restart.
 */
export const acceptInSeqOrder = (mail: ReadonlyArray<StoredMail>, stamps: BrokerStamps): ReadonlyArray<StoredMail> =>
  mail.map((stored) => ({ ...stored, mail: { ...stored.mail, [ACCEPTED]: stamps.accept() } }))

/**
 * `mail` (in `seq` order, as the store loads it) in the order to queue it: each row given back before the restart
 * moved to just before the first row whose `seq` is at least its mark — those with one mark by their give-back date
 * (`mail.queuedAt`), then `seq` — and after every row when none is. Every other row keeps its place.
 */
export const restoreOrder = (mail: ReadonlyArray<StoredMail>): ReadonlyArray<StoredMail> => {
  const givenBack: Array<StoredMail & { readonly givenBack: number }> = []
  for (const stored of mail) if (stored.givenBack !== undefined) givenBack.push({ ...stored, givenBack: stored.givenBack })
  if (givenBack.length === 0) return mail
  givenBack.sort((a, b) => a.givenBack - b.givenBack || a.mail.queuedAt - b.mail.queuedAt || a.seq - b.seq)
  const ordered: Array<StoredMail> = []
  let next = 0
  for (const stored of mail) {
    if (stored.givenBack !== undefined) continue
    while (next < givenBack.length && givenBack[next]!.givenBack <= stored.seq) ordered.push(givenBack[next++]!)
    ordered.push(stored)
  }
  while (next < givenBack.length) ordered.push(givenBack[next++]!)
  return ordered
}

/**
 * Where a restarted broker numbers mail from: past the highest stored row (`nextSeq`, the store's) and past every
 * given-back row's mark. A store numbers after its highest row, so once the rows after a return are gone a mark
 * may lie past it; mail the new run accepted under that seq or above would then be taken, at the next restart, for
 * mail accepted before that return, and the given-back mail queued behind it.
 */
export const nextSeqPastMarks = (mail: ReadonlyArray<StoredMail>, nextSeq: number): number => {
  let next = nextSeq
  for (const stored of mail) if (stored.givenBack !== undefined && stored.givenBack > next) next = stored.givenBack
  return next
}
