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
 * Owner: DeliveryRecords (the Router's synchronous code). Bounded: a day per key, `MAX_KEYS` keys, `MAX_PER_KEY`
 * withdrawals a key (the oldest going). Nothing is kept for an id never reused but its withdrawals (cancel and
 * supersede paths only), which a later send under it may need. The withdrawals of all keys share one bound, apart
 * from the reuse marks: a key whose withdrawals were pushed out (or aged out) keeps its mark, and judged by what is
 * left a message they named would be found live (review revmodel probe 1). A withdrawal names only a message
 * received no later than its stamp, so the newest stamp among those dropped (`lostThrough`) tells which give-backs
 * may have lost theirs: those received no later are not judged here (`judges`) but by the old rules.
 */
import type { Fingerprint, Outcome } from "../store/records.ts"
import { AgedMap } from "./AgedMap.ts"

/** Keys kept at most, in each of the two maps; past it the oldest go. */
export const MAX_KEYS = 4096
/** Withdrawals kept at most under one key; past it the oldest goes. */
export const MAX_PER_KEY = 8
/** How long a key's withdrawals and its reuse are kept: a day, as a withdrawal outlives its route. */
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

/** The withdrawals under each record key, and the keys a second send reused; see the module header. */
export class ReusedIdWithdrawals {
  private readonly withdrawals = new AgedMap<string, ReadonlyArray<Withdrawn>>(MAX_KEYS)
  private readonly reused = new AgedMap<string, true>(MAX_KEYS)
  /** The newest stamp among the withdrawals `withdrawals` dropped (pushed out or aged out); -∞ while none was. */
  private lostThrough = Number.NEGATIVE_INFINITY
  private readonly same: (a: Fingerprint, b: Fingerprint) => boolean

  /** @param same whether two fingerprints name the same send (DeliveryRecords.sameFingerprint). */
  constructor(same: (a: Fingerprint, b: Fingerprint) => boolean) {
    this.same = same
  }

  /** A withdrawal under `key` at `now`, kept beside those already there. Cancel and supersede paths only. */
  note(key: string, withdrawn: Withdrawn, now: number): void {
    const before = this.withdrawals.size === 0 ? undefined : this.withdrawals.get(key)
    const kept = before === undefined ? [withdrawn] : [...before.slice(-(MAX_PER_KEY - 1)), withdrawn]
    this.lose(this.withdrawals.set(key, kept, now))
  }

  /** Raises `lostThrough` to the newest stamp among `dropped`: `withdrawals`' entries it pushed or aged out. */
  private lose(dropped: ReadonlyArray<ReadonlyArray<Withdrawn>>): void {
    for (const notes of dropped) {
      for (const withdrawn of notes) if (withdrawn.stamp > this.lostThrough) this.lostThrough = withdrawn.stamp
    }
  }

  /** A second send under `key` at `now`: from now on its give-backs are judged here (`judges`, `fateOf`). Send path, reused ids only. */
  markReused(key: string, now: number): void {
    this.reused.put(key, true, now)
  }

  /**
   * Whether a message under `key` received at the stamp `receivedAt`, given back, is judged here (`fateOf`): a
   * second send reused `key` (within a day), and no withdrawal that could name the message was dropped — every one
   * dropped has a stamp before `receivedAt` (module header). A size check when no key was reused.
   */
  judges(key: string, receivedAt: number): boolean {
    return this.reused.size > 0 && receivedAt > this.lostThrough && this.reused.get(key) !== undefined
  }

  /** The withdrawal that names `given` under `key`, if one does (the newest first). Give-back path only. */
  fateOf(key: string, given: GivenBack): Outcome | undefined {
    const kept = this.withdrawals.size === 0 ? undefined : this.withdrawals.get(key)
    if (kept === undefined) return undefined
    for (let n = kept.length - 1; n >= 0; n--) {
      const withdrawn = kept[n]
      if (withdrawn !== undefined && names(withdrawn, given, this.same)) return withdrawn.outcome
    }
    return undefined
  }

  /** Drops what is older than `cutoff`. */
  expire(cutoff: number): void {
    if (this.withdrawals.size > 0) this.lose(this.withdrawals.expire(cutoff))
    if (this.reused.size > 0) this.reused.expire(cutoff)
  }
}
