/**
 * Which messages under a reused id their sender withdrew: owns, per record key, the set of withdrawals made under
 * it (each naming the session the withdrawn message was for, its fingerprint when known, and the stamp of the
 * withdrawal) and which keys a second send reused. The broker keeps one route and one replay record per (sender,
 * id), and a later message under the id overwrites them: asked "is this message withdrawn?" at a give-back, the
 * key alone answered for whichever message it held last, and notes rewritten on each new send (one per key) lost
 * older protections (reviews revrec R1, R3) or caught messages never withdrawn (revchain D1, D2). Here every
 * withdrawal under a key stays with its own message's identity, and a message given back is withdrawn only when
 * one of them names it: the same session, and its fingerprint — or, with none known (the withdrawn message's
 * fingerprint left with its replay record), a stamp no later than the withdrawal's.
 *
 * Owner: DeliveryRecords (the Router's synchronous code). Two maps. `single`: the withdrawals under ids not reused
 * (cancel and supersede paths only; a later send under the id may need them), at most `MAX_KEYS` ids, a day each;
 * past the bound the oldest id's go, which is safe while its id stays unreused (one message under it: the rules by
 * key judge it exactly) — so for a day after such a push-out a reuse of an id whose withdrawal the table still
 * holds, with no note of it left here, is refused (`refusesReuse`). `reused`: the ids a second send reused, each
 * with its sender and every withdrawal under it, dropped only whole, a day after the id's last reuse or withdrawal
 * — never by a bound, so a kept note always decides and a message no note names is live (the partial drops of
 * reviews revmodel probes 1, 2 and 4, and the stamp that sent every older give-back to the rules by key, are gone).
 * Their bounds are kept by refusing the send that would cross them (`refusesReuse`: `E_MESSAGE_ID_REUSE`), and
 * each is a sender's own, so no sender's reuses refuse another's sends (review revnotes8 D1): a sender's reuse
 * past `MAX_KEYS` of its own reused ids, and any send under an id with `MAX_PER_KEY` withdrawals noted. Every
 * mark passes that check (DeliveryRecords marks only a send `reuseRefused` was asked about, review revnotes8 D2),
 * so `reused` holds at most `MAX_KEYS` ids per sender; and a send of the very message the entry under its id holds
 * (the same fingerprint: one repeating an answered-retryable send, P47's `E_TARGET_REBOUND`, or an unchanged retry
 * of one delivered whose record left while its route stayed) reuses nothing (DeliveryRecords.holdsEarlierMessage;
 * reviews revnotes8 D1, rrn8 probe 3). No count of senders or sessions bounds the total: a sender's reused ids stay
 * their day after it left (they protect its messages still waiting or held unconfirmed, which outlive it), so the
 * total is at most `MAX_KEYS` times the distinct senders that reused ids within a day (review rrn8 probe 1). Nor is
 * `MAX_PER_KEY` a cap on an id's notes: from it on no send under the id is taken, but each message sent under it
 * before can still be withdrawn after it — its mail in the mailbox (a cancel takes the newest; the mailbox holds its
 * capacity at most at once, 4,096 messages by default, `mailboxCapacity`, a copy given back by a receiver that never
 * confirmed it among them), or the id's latest route — so an id may hold `MAX_PER_KEY` − 1 notes plus one for each
 * such message (review rrn8 probe 2: 24 queued, 24 notes): some 4,100 with the default mailbox, more where
 * unconfirmed copies come back to the mailbox after the first are cancelled. Slow to reach (each message under the
 * id needs the record of the one before it gone: its hour, or the replay records' bound crossed), but no count caps
 * it. Measured on Node 24 (task fixrr8, heap used after GC, 4,096 ids × 8
 * notes): a note about 85 bytes with its array slot (its receiver's key and outcome shared), about 365 with a
 * fingerprint (a mailbox cancel's always has one; a route's while the message's replay record was kept); a reuse
 * mark about 165 bytes plus its key string (its sender's key shared). So per sender with eight notes an id some
 * 4,096 × (165 + 60 + 8 × 365) bytes, about 13 MB; at the worst above some 4,096 × 4,100 × 365 bytes, about 6 GB; times the senders that reuse ids
 * that much within a day.
 */
import type { Fingerprint, Outcome } from "../store/records.ts"
import { AgedMap } from "./AgedMap.ts"

/** Ids kept at most in `single` (its oldest dropped past it), and reused ids kept at most per sender (by refusals). */
export const MAX_KEYS = 4096
/** Withdrawals under one reused id at which every send under it is refused (`refusesReuse`). */
export const MAX_PER_KEY = 8
/** How long an id's withdrawals and its reuse are kept after the last of them: a day, as a withdrawal outlives its route. */
export const KEPT_MS = 86_400_000

/** One withdrawal under a key: whose message it withdrew, and how to tell that message. */
export interface Withdrawn {
  /** The registry key of the session the withdrawn message was given or queued for. */
  readonly receiverKey: string
  /** The withdrawn message's fingerprint, when the broker still held it; else the stamp alone tells. */
  readonly fingerprint: Fingerprint | undefined
  /** The broker's stamp at the withdrawal: a message received later is another. */
  readonly stamp: number
  /** The sender's answer: cancelled or superseded. */
  readonly outcome: Outcome
}

/** A message given back, as this set reads it. */
export interface GivenBack {
  /** The sessions it was for and was given back by (P49's other holder may differ from its target). */
  readonly sessionKeys: ReadonlyArray<string>
  /** Its `brokerReceivedAt`. */
  readonly receivedAt: number
  /** Its fingerprint, built only when a withdrawal with one names one of its sessions. */
  readonly fingerprint: () => Fingerprint
}

/**
 * Whether `withdrawn` names the message `given`: for one of its sessions, received no later than the withdrawal,
 * and of its fingerprint when one is known. Exported for the unit test's reference.
 */
export const names = (withdrawn: Withdrawn, given: GivenBack, same: (a: Fingerprint, b: Fingerprint) => boolean): boolean =>
  given.sessionKeys.includes(withdrawn.receiverKey) && given.receivedAt <= withdrawn.stamp &&
  (withdrawn.fingerprint === undefined || same(given.fingerprint(), withdrawn.fingerprint))

/** A reused id: its sender, and every withdrawal noted under it. */
interface ReusedId {
  readonly sender: string
  readonly notes: ReadonlyArray<Withdrawn>
}

/** The withdrawals under each record key, and the keys a second send reused; see the module header. */
export class ReusedIdWithdrawals {
  /** Withdrawals under ids no second send reused (within a day): dropped oldest first past `MAX_KEYS`. */
  private readonly single = new AgedMap<string, ReadonlyArray<Withdrawn>>(MAX_KEYS)
  /** The ids a second send reused, each with every withdrawal under it (none, maybe): no capacity, see `refusesReuse`. */
  private readonly reused = new AgedMap<string, ReusedId>()
  /** Reused ids kept, by sender: a sender's reuse past `MAX_KEYS` of them is refused (`refusesReuse`). */
  private readonly perSender = new Map<string, number>()
  /** Senders with `MAX_KEYS` reused ids kept: while none has, a send pays no look-up here. */
  private sendersAtBound = 0
  /** Reused ids with `MAX_PER_KEY` withdrawals or more: while none is, a send pays no look-up here. */
  private full = 0
  /** Until this clock reading a withdrawal pushed out of `single` may be wanted by a reuse of its id (`refusesReuse`). */
  private singleLostUntil = Number.NEGATIVE_INFINITY
  private readonly same: (a: Fingerprint, b: Fingerprint) => boolean

  /** @param same whether two fingerprints name the same send (DeliveryRecords.sameFingerprint). */
  constructor(same: (a: Fingerprint, b: Fingerprint) => boolean) {
    this.same = same
  }

  /** A withdrawal under `key` at `now`, kept beside those already there. Cancel and supersede paths only. */
  note(key: string, withdrawn: Withdrawn, now: number): void {
    const reused = this.reused.size === 0 ? undefined : this.reused.get(key)
    if (reused !== undefined) {
      if (reused.notes.length === MAX_PER_KEY - 1) this.full++
      this.reused.set(key, { sender: reused.sender, notes: [...reused.notes, withdrawn] }, now)
      return
    }
    const before = this.single.size === 0 ? undefined : this.single.get(key)
    const dropped = this.single.set(key, before === undefined ? [withdrawn] : [...before, withdrawn], now)
    // Safe to forget while the id stays unreused; a reuse of it is refused for a day (`refusesReuse`).
    if (dropped.length > 0) this.singleLostUntil = now + KEPT_MS
  }

  /**
   * A second send by `sender` under `key` at `now` (the table still held an earlier message's route or record):
   * from now on its give-backs are judged here (`judges`, `fateOf`), with the withdrawals noted under it so far.
   * Send path, reused ids only; `refusesReuse` was asked first.
   */
  markReused(sender: string, key: string, now: number): void {
    const kept = this.reused.size === 0 ? undefined : this.reused.get(key)
    if (kept !== undefined) return void this.reused.set(key, kept, now)
    const noted = this.single.size === 0 ? undefined : this.single.delete(key)
    if (noted !== undefined && noted.length >= MAX_PER_KEY) this.full++
    this.reused.set(key, { sender, notes: noted ?? [] }, now)
    const count = (this.perSender.get(sender) ?? 0) + 1
    this.perSender.set(sender, count)
    if (count === MAX_KEYS) this.sendersAtBound++
  }

  /**
   * Whether a send may be refused here at the clock reading `now` (`refusesReuse`): false, at the cost of three
   * comparisons, unless an id is at its bound, a sender's reused ids are, or `single` dropped a withdrawal within a day.
   */
  mayRefuse(now: number): boolean {
    return this.full > 0 || this.sendersAtBound > 0 || now < this.singleLostUntil
  }

  /**
   * Whether `sender`'s send under `key` at `now` is refused, so that no withdrawal noted here is ever dropped by a
   * bound: the id has `MAX_PER_KEY` withdrawals noted (whether or not the send would count as a reuse); or it would
   * be a reuse (`isReuse`: the table holds an earlier message's route or record under the id) and `sender` has
   * `MAX_KEYS` reused ids kept already, or the table says the id's message was withdrawn (`withdrawnThere`) while no
   * note of it is left, `single` having pushed it out within a day. Send path, after `mayRefuse`.
   */
  refusesReuse(sender: string, key: string, now: number, isReuse: () => boolean, withdrawnThere: () => boolean): boolean {
    const reused = this.reused.get(key)
    if (reused !== undefined) return reused.notes.length >= MAX_PER_KEY
    if (!isReuse()) return false
    if ((this.perSender.get(sender) ?? 0) >= MAX_KEYS) return true
    return now < this.singleLostUntil && !this.single.has(key) && withdrawnThere()
  }

  /** Whether a message under `key`, given back, is judged here (`fateOf`): a second send reused `key` (within a day). */
  judges(key: string): boolean {
    return this.reused.size > 0 && this.reused.has(key)
  }

  /** The withdrawal that names `given` under the reused `key`, if one does (the newest first). Give-back path only. */
  fateOf(key: string, given: GivenBack): Outcome | undefined {
    const kept = this.reused.size === 0 ? undefined : this.reused.get(key)?.notes
    if (kept === undefined) return undefined
    for (let n = kept.length - 1; n >= 0; n--) {
      const withdrawn = kept[n]
      if (withdrawn !== undefined && names(withdrawn, given, this.same)) return withdrawn.outcome
    }
    return undefined
  }

  /** Drops what is older than `cutoff`: a reused id with all its withdrawals at once. */
  expire(cutoff: number): void {
    if (this.single.size > 0) this.single.expire(cutoff)
    if (this.reused.size === 0) return
    for (const { notes, sender } of this.reused.expire(cutoff)) {
      if (notes.length >= MAX_PER_KEY) this.full--
      const count = (this.perSender.get(sender) ?? 1) - 1
      if (count === MAX_KEYS - 1) this.sendersAtBound--
      if (count <= 0) this.perSender.delete(sender)
      else this.perSender.set(sender, count)
    }
  }

  /** Reused ids kept, overall (for tests and the bound's accounting). */
  get reusedIds(): number {
    return this.reused.size
  }
}
