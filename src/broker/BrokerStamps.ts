/**
 * The broker's stamps: `brokerReceivedAt` on a message it accepts and a
 * control's `timestamp`. Owns the last stamp given, so that stamps never go
 * backwards when the wall clock does (an NTP step, a VM resumed, a durable
 * broker restarted on a host whose clock is behind): a client reads a control
 * stamped before a message's `brokerReceivedAt` as about an earlier message
 * under the same (sender, id) (docs/protocol.md, "Controls").
 *
 * Only stamps come from here: timers and expiry read the broker's clock as it
 * is (clamping those would freeze broker time during a step back); the
 * age-ordered lists re-date their entries past a step back to it instead
 * (AgedMap.ts, OutboundRecords.ts). Plain
 * synchronous code: one comparison per stamp. A durable broker stores the
 * highest stamp with its commits (StoreJournal.take) and floors the next
 * run's stamps at it (Router.restore, capped at `MAX_FLOOR_AHEAD_MS` past
 * that run's clock). Beside them, the order messages were accepted in this
 * run (`accept`), which a stamp tie cannot tell (review revmailkey2 probe 6):
 * only its counter lives here; each place rides on its mail (`Mail[ACCEPTED]`).
 * A durable restart gives the restored mail the first places, in the order
 * the last run accepted it (RestoreOrder.acceptInSeqOrder). `acceptedLater`
 * reads the two together.
 */
import { ACCEPTED, type Mail } from "../store/records.ts"

/**
 * How far past the clock a restart's floor may hold the stamps (a day): a store written under a far-future clock
 * must not freeze them for longer (Router.restore caps the floor there, with a log line).
 */
export const MAX_FLOOR_AHEAD_MS = 24 * 60 * 60 * 1000

/**
 * Whether `mail` was accepted after `than`: received later (`brokerReceivedAt`), or at one stamp and placed later
 * (`Mail[ACCEPTED]`) — or, when either has no place (a durable question's mail), taken as later. Cancel paths only
 * (MailDelivery.newestWaiting, Cancels.ts).
 */
export const acceptedLater = (mail: Mail, than: Mail): boolean => {
  if (mail.brokerReceivedAt !== than.brokerReceivedAt) return mail.brokerReceivedAt > than.brokerReceivedAt
  const order = mail[ACCEPTED]
  const thanOrder = than[ACCEPTED]
  return order === undefined || thanOrder === undefined || order > thanOrder
}

/** Non-decreasing millisecond stamps read from a wall clock that may step back. */
export class BrokerStamps {
  private last = Number.NEGATIVE_INFINITY
  private lead = 0
  private accepted = 0
  private readonly clock: () => number

  /** @param clock milliseconds on the broker's `Clock` (TestClock in tests). */
  constructor(clock: () => number) {
    this.clock = clock
  }

  /** A stamp for now: the clock's reading, or the last stamp given when the clock reads earlier than it. */
  next(): number {
    return this.at(this.clock())
  }

  /** As `next`, for a caller that read the clock already (`now`, on the same clock): one comparison. */
  at(now: number): number {
    if (now > this.last) this.last = now
    return this.last
  }

  /** No later stamp is below `at` (at recovery: the highest stamp a durable broker's last run stored). */
  floor(at: number): void {
    if (at > this.last) this.last = at
  }

  /**
   * At recovery: the highest stamp the last run stored (or its restored mail carries), uncapped, against this
   * run's clock `now`. Sets `restoredLead`; the floor is set apart (`floor`, capped by Router.restore).
   */
  restoredFrom(high: number, now: number): void {
    this.lead = high > now ? high - now : 0
  }

  /**
   * How far (ms, never below 0) the last run's highest stored stamp led this run's clock at recovery
   * (`restoredFrom`; 0 for a broker that restored nothing). Only the fallback for an ask stored without its due
   * time (a row of this stop's earlier builds; AskEdge.dueAt, Mail.askDueAt): its due time is then its deadline (a
   * stamp) less this — exact only while the stamps led the clock by as much when it was received as at the last
   * commit (not after a restart's floor or a capped one).
   */
  get restoredLead(): number {
    return this.lead
  }

  /**
   * The place of a message the broker is accepting now, after every one accepted before in this run: higher is
   * later. Send.ts keeps it on the message's mail (`Mail[ACCEPTED]`, records.ts), which every copy of that mail
   * carries; one counter step per message, nothing kept here by message (issue 16). Also each restored mail's, in
   * `seq` order, before any send (Router.restore, RestoreOrder.acceptInSeqOrder).
   */
  accept(): number {
    return ++this.accepted
  }

  /** The highest stamp given (or floor set) so far; -Infinity before any: what a durable broker stores (StoreJournal.take). */
  get highest(): number {
    return this.last
  }
}
