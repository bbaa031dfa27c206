/**
 * Size: about 610 lines, one concept — the replay records' rules (P46): what a record keeps, how a retry is
 * answered from it, and how a withdrawal rewrites it; their storage is OutboundRecords.ts's.
 *
 * Idempotent replay (P46): the outcome of each (sender, message id), so a
 * retried send gets the recorded answer instead of a second delivery.
 *
 * The promise a client can rely on is a time, per sender: a record is kept
 * at least `windowMs` (REPLAY_WINDOW_MS, 2 minutes — longer than a client's
 * send timeout plus its reconnect backoff), and up to `retentionMs` (an hour)
 * while there is room. Room is bounded in records and in bytes, overall:
 * past the bound, records older than the window go first (oldest first); if
 * every record is younger, the sender holding the most records loses its
 * oldest — one flooding sender never costs the others their window.
 *
 * A new send under an id whose earlier message its sender withdrew makes the
 * record forget that withdrawal (the new message is not withdrawn: review
 * revf R1), but the withdrawn message may still wait in a write that never
 * completed. So the forgetting is noted by the message's record key with the
 * withdrawn message's fingerprint and the new send's stamp (`forgotten`, a
 * day, bounded): a message under that key given back later, of that
 * fingerprint and received before that stamp (or at it, when the new send's
 * fingerprint is another), is the withdrawn one (`withdrawnBeforeResend`;
 * reviews cpback, revcc). Any other — an older message under the id its
 * sender never withdrew (review revcc item 2), the new one — is not. When
 * the withdrawn message's record never held a fingerprint, the new send's
 * is noted instead, and a message at its stamp is found withdrawn only if
 * its fingerprint is another (task cg2tie, review revrec R2). A
 * later message under the id, recorded after the withdrawn one's record
 * left while its route stayed, forgets the withdrawal too when it is
 * flushed and takes that route over (`forgetEarlier`; task route): noted
 * by its stamp and, for a tie, its own fingerprint, the withdrawn message's
 * being gone (review revroute D1). Those notes now serve only an id whose
 * reuse is no longer kept: under an id a second send reused, every
 * withdrawal is kept by its own message's identity (ReusedIdWithdrawals.ts,
 * `noteWithdrawn`), and a give-back is judged by those alone
 * (`fateUnderReusedId`; reviews revrec R1, R3, revchain D1, D2, task model),
 * whose bounds refuse the send that would cross them rather than drop a
 * withdrawal (`reuseRefused`; review revmodel probes 1, 2, 4).
 */
import { DeliveryCode } from "../protocol/delivery.ts"
import type { Fingerprint, Mail, Outcome } from "../store/records.ts"
import { AgedMap } from "./AgedMap.ts"
import { OutboundRecord, ROUTE_TAKEN } from "./OutboundRecord.ts"
import { OutboundRecords } from "./OutboundRecords.ts"
import { ReusedIdWithdrawals } from "./ReusedIdWithdrawals.ts"

/** A send's fingerprint and outcome: their types live with the other stored records (src/store/records.ts). */
export type { Fingerprint, Outcome } from "../store/records.ts"

/** The answer to a send delivered to a live session's connection. */
export const DELIVERED: Outcome = { ok: true, delivery: "socket_delivered" }

/**
 * The outcome of a message delivered to the session `receiverId`, addressed
 * to `targetId`: `DELIVERED` itself when they are one session, else naming
 * the receiver (P49's other holder; `Outcome.receiverId`).
 */
export const deliveredTo = (receiverId: string, targetId: string): Outcome =>
  receiverId === targetId ? DELIVERED : { ok: true, delivery: "socket_delivered", receiverId }

/** The answer to a send queued in the mailbox. */
export const QUEUED: Outcome = { ok: true, delivery: "queued" }

/**
 * How long a withdrawal a new send under its id made its record forget is still found for the withdrawn message's
 * give-back (`withdrawnBeforeResend`): a day, as a withdrawal outlives its route on the withdrawals' list.
 */
const FORGOTTEN_MS = 86_400_000

/** Such withdrawals kept at most, overall; past it the oldest go (a message given back after that is not found withdrawn). */
const MAX_FORGOTTEN = 4096

/**
 * A withdrawal a new send under its message's id made its record forget (`DeliveryRecords.keep`): the withdrawn
 * message's fingerprint, as its record held it then, and the stamp the new send's message was given.
 */
interface ForgottenWithdrawal {
  /**
   * Undefined when the record never held one: a route made for mail flushed after its record left the table
   * (`Receipts.addRoute`). Then the stamp tells, as before review revcc (review revcg CG2), and in a stamp tie
   * the new send's fingerprint (`resend`; task cg2tie, review revrec R2).
   */
  readonly fingerprint: Fingerprint | undefined
  readonly resendStamp: number
  /**
   * The new send's fingerprint is the withdrawn message's (the same text to the same target again): in a tie a
   * given-back message is not found withdrawn.
   */
  readonly resendAlike: boolean
  /**
   * With no `fingerprint`, noted by `keep`: the new send's own fingerprint, so that in a stamp tie the new message
   * given back (of its fingerprint) is told from the withdrawn one (of any other, also the same content sent to
   * another target): neither is lost nor comes back live (task cg2tie, review revrec R2). Undefined otherwise.
   */
  readonly resend: Fingerprint | undefined
  /**
   * Noted by `forgetEarlier` alone: the later message's fingerprint, the withdrawn one's being unknown. A message
   * given back at the later one's stamp (a tie) is that later message when of this fingerprint, else the withdrawn
   * one (review revroute D1).
   */
  readonly later?: Fingerprint
}

/**
 * Whether the table's entry `found` holds a message sent earlier under its id other than `sent`, so that `sent` is a
 * second message (a reuse, `ReusedIdWithdrawals.markReused`): its route is kept, or its replay part records an
 * outcome other than a retryable failure — a send answered so (P47's `E_TARGET_REBOUND`) was not taken, and its
 * retry is the same message's (review revnotes8 D1) — and the entry's fingerprint is not `sent`'s. That fingerprint
 * outlives the replay part (OutboundRecords.dropRecord), so a base client's unchanged retry of a message whose
 * record left while its route stayed is the same message, no reuse (review rrn8 probe 3). It tells only when it is
 * the routed message's: not under RECORD_LATER (a later send's, the route being an earlier message's), nor when the
 * entry never held one (a route made for mail flushed after its record left: Receipts.addRoute) — then a kept route
 * counts. Send path, only on an entry the table already held under the id.
 */
const holdsEarlierMessage = (found: OutboundRecord, sent: Fingerprint): boolean =>
  (found.routed || (found.recorded && (found.outcome.ok || !found.outcome.retryable))) &&
  (found.targetId === "" || found.recordLater || !sameFingerprint(found, sent))

/** Whether `outcome` says its sender withdrew the message: cancelled it, or superseded it by another. */
const isWithdrawal = (outcome: Outcome): boolean =>
  !outcome.ok && (outcome.code === DeliveryCode.DeliveryCancelled || outcome.code === DeliveryCode.DeliverySuperseded)

/** A kept replay record: its fingerprint and outcome. */
export interface DeliveryRecord extends Fingerprint {
  readonly outcome: Outcome
}

/** Whether two fingerprints name the same send: the same target and the same authored content (`sameContent`). */
export const sameFingerprint = (a: Fingerprint, b: Fingerprint): boolean => a.targetId === b.targetId && sameContent(a, b)

/**
 * Whether two fingerprints carry the same authored content, whatever their targets: a send under a kept id that
 * differs from its record by the target alone is that message sent again to where its `to` resolves now
 * (broker/SendReplays.ts `replayed`, review revda DA1), not another message under the id.
 */
export const sameContent = (a: Fingerprint, b: Fingerprint): boolean =>
  sameBody(a, b) && (a.supersedes ?? "") === (b.supersedes ?? "")

/** `sameContent` but for `supersedes`, which it leaves to its callers. */
const sameBody = (a: Fingerprint, b: Fingerprint): boolean =>
  a.textLength === b.textLength && a.textHash === b.textHash &&
  a.attachmentsLength === b.attachmentsLength && a.attachmentsHash === b.attachmentsHash &&
  (a.replyTo ?? "") === (b.replyTo ?? "") && (a.expectsReply ?? "") === (b.expectsReply ?? "") &&
  (a.retryOf ?? "") === (b.retryOf ?? "") &&
  a.replyErrorLength === b.replyErrorLength && a.replyErrorHash === b.replyErrorHash

/**
 * Whether `record` is the replay record of the message whose mail `mail` fingerprints (`fingerprintOfMail`): its
 * send's fingerprint (`sameFingerprint`), but for a `supersedes` the mail no longer names — a `replace`-staged
 * message whose superseded one was settled while it waited is handed over without it (Send.ts
 * `withoutSupersedes`), while its record keeps the send's (review rrmk probe 4). So mail naming none is its
 * record's whatever that names; not told apart: two messages under one id to one target, of one content, that
 * differ by `supersedes` alone. `DeliveryRecords.rewrite`'s `owner`, and which message a cancel names (Cancels.ts).
 */
export const isRecordOfMail = (record: Fingerprint, mail: Fingerprint): boolean =>
  record.targetId === mail.targetId && sameBody(record, mail) &&
  (mail.supersedes === undefined || mail.supersedes === record.supersedes)

/**
 * The fingerprint of the send that made `mail` (as `OutboundRecord.of` took it: its sender, target id, message and
 * failure reply's text): how a copy given back is told from another message under its id (`withdrawnBeforeResend`;
 * review revcc). Builds a record and hashes the text: off the
 * send path.
 */
export const fingerprintOfMail = (mail: Mail): Fingerprint =>
  OutboundRecord.of(mail.senderKey, mail.targetId, mail.message, mail.replyError)

/**
 * The key of a message everywhere a string key is needed — mailbox, ask
 * edges, the durable store: the sender and its message id. The replay records
 * themselves are found without it (OutboundRecords.ts).
 */
export const recordKeyOf = (senderKey: string, messageId: string): string => `${senderKey}\u0001${messageId}`

/** The message id inside a record key of `senderKey` (a record restored from the store; a control's `messageKey`). */
export const idOfKey = (senderKey: string, key: string): string =>
  key.startsWith(senderKey) && key.charCodeAt(senderKey.length) === 1 ? key.slice(senderKey.length + 1) : key

/** Bounds and times of the replay records. */
export interface ReplayLimits {
  /** Every record is kept at least this long (the promise). */
  readonly windowMs: number
  /** No record is kept longer. */
  readonly retentionMs: number
  /** Records kept at most, overall. */
  readonly maxRecords: number
  /** Approximate bytes the records may take, overall. */
  readonly maxBytes: number
}

/** Estimated memory of one record: its strings (UTF-16) and the object and table slot around them. */
const recordBytes = (record: OutboundRecord, outcome: Outcome): number =>
  2 * (record.senderKey.length + record.id.length + record.targetId.length + (record.replyTo?.length ?? 0) +
      (record.supersedes?.length ?? 0) + (record.retryOf?.length ?? 0) + (outcome.ok ? outcome.receiverId?.length ?? 0 : outcome.reason.length)) +
  240

/**
 * Told of every record set or rewritten (the store journal, when the broker
 * is durable); a rewrite is told its sender and id, and the observer builds
 * a key only if it needs one. A `set` is given the outbound record itself, not a copy, as its
 * fingerprint: the journal encodes it at its next commit, and a record's
 * fingerprint changes only in a later `set` of the same key
 * (`fingerprintFrom`), which the observer is told of again, so what the
 * commit encodes is the key's latest state either way.
 * (A copy per message showed in durable mode's profile; docs/performance.md,
 * "Durable store CPU, fifth stop".)
 */
export interface RecordObserver {
  readonly set: (record: OutboundRecord, outcome: Outcome, at: number) => void
  /**
   * A rewrite of `sender`'s message `id`; `record` is undefined when the record itself was no longer kept (its
   * message may still be). `targetKey`: the session the message the outcome is about was for (`rewrite`).
   */
  readonly rewrite: (
    sender: string,
    id: string,
    outcome: Outcome,
    record: { readonly fingerprint: Fingerprint; readonly at: number } | undefined,
    targetKey: string
  ) => void
}

/** Replay records (P46); see the module header for what is kept how long. */
export class DeliveryRecords {
  /** The outbound records, whose replay part this class keeps (their route part is Receipts'). */
  readonly table: OutboundRecords
  /** Records per sender, to find the heaviest when everything is inside the window. */
  private readonly perSender = new Map<string, number>()
  private bytes = 0
  private readonly limits: ReplayLimits
  private readonly observer: RecordObserver | undefined
  /**
   * The `timestamp` of the cancel control made for a message, by that message's record (`noteCancel`): weak, so
   * nothing outlives the record, and nothing is added to a record that was never cancelled.
   */
  private readonly cancelStamps = new WeakMap<OutboundRecord, number>()
  /**
   * Withdrawals a new send under their message's id made its record forget (`keep`), by record key: the withdrawn
   * message's fingerprint and the stamp that send's message was given (`stamp`). Empty unless a sender reused the
   * id of a message it withdrew.
   */
  private readonly forgotten = new AgedMap<string, ForgottenWithdrawal>(MAX_FORGOTTEN)
  /**
   * Every withdrawal by the identity of the message it withdrew, and the ids a second send reused: under a reused
   * id a give-back is judged by these alone (`fateUnderReusedId`; reviews revrec R1, R3, revchain D1, D2), which
   * no bound drops — a send that would cross one is refused (`reuseRefused`; revmodel probes 1, 2, 4).
   */
  private readonly reusedIds = new ReusedIdWithdrawals(sameFingerprint)
  /** The broker's stamp for the clock reading `now` (BrokerStamps.at): what a message sent at `now` is given. */
  private readonly stamp: (now: number) => number

  /**
   * @param notice a warning for the broker's log from the table (OutboundRecords: its withdrawals' list was full
   * and dropped one; at most one line an hour).
   * @param stamp the broker's stamp at a clock reading (BrokerStamps.at; by default the reading itself), as
   * `brokerReceivedAt` is given: `forgotten` compares a given-back message's with it.
   */
  constructor(
    limits: ReplayLimits,
    observer?: RecordObserver,
    notice?: (line: string) => void,
    stamp: (now: number) => number = (now) => now
  ) {
    this.limits = limits
    this.observer = observer
    this.table = new OutboundRecords(undefined, notice)
    this.stamp = stamp
  }

  /** Records held. */
  get size(): number {
    return this.table.records
  }

  /** `sender`'s record of its message `id`, if it is still kept. */
  get(sender: string, id: string, now: number): DeliveryRecord | undefined {
    const found = this.table.find(sender, id)
    if (found === undefined || !found.recorded || now - found.recordedAt > this.limits.retentionMs) return undefined
    return found
  }

  /**
   * How `sender` withdrew its message `id`, if it did — cancelled it
   * (`DeliveryCancelled`) or superseded it by another (`DeliverySuperseded`,
   * the reason naming that one): as its route part says while the route is
   * kept (`OutboundRecord.withdrawal`, which outlives a replay record the
   * bounds or its age took), else as its replay record's outcome says. Read
   * on the cancel, supersede and give-back paths only.
   */
  withdrawal(sender: string, id: string, now: number): Outcome | undefined {
    const found = this.table.find(sender, id)
    if (found === undefined) return undefined
    if (found.withdrawal !== undefined) return found.withdrawal
    if (!found.recorded || now - found.recordedAt > this.limits.retentionMs) return undefined
    return isWithdrawal(found.outcome) ? found.outcome : undefined
  }

  /**
   * `sender` cancelled its message `id`, and the broker stamped the control it made so at `at`
   * (`MessageControl.timestamp`; Receipts' cancel). A cancel made again for that message later — a copy its
   * client read kept for that client's return (WithdrawnCopies.keepCancelled) — carries this stamp
   * (`cancelStamp`): the client tells a control given again from another message's under a reused id by its
   * stamp, and would pass the same cancel on twice (review revbm BM2). Cancel paths only.
   */
  noteCancel(sender: string, id: string, at: number): void {
    const found = this.table.find(sender, id)
    if (found !== undefined) this.cancelStamps.set(found, at)
  }

  /** The stamp of the cancel `noteCancel` noted for `sender`'s message `id`, while its record is kept. Give-back path only. */
  cancelStamp(sender: string, id: string): number | undefined {
    const found = this.table.find(sender, id)
    return found === undefined ? undefined : this.cancelStamps.get(found)
  }

  /**
   * Records a send (replacing an earlier record of its sender and id):
   * `record` comes from `OutboundRecord.of` and is kept itself unless its
   * (sender, id) already has a record in the table.
   */
  set(record: OutboundRecord, outcome: Outcome, now: number): void {
    this.observer?.set(record, outcome, now)
    this.keep(record, outcome, now)
  }

  /**
   * A record found stored at startup: kept again, not stored again, and
   * marked restored (`OutboundRecord.restored`: its route, never stored, is
   * the one Receipts.recordedRoute implies) until a send in this run keeps it.
   */
  restore(sender: string, key: string, fingerprint: Fingerprint, outcome: Outcome, at: number): void {
    this.keep(new OutboundRecord(sender, idOfKey(sender, key), fingerprint), outcome, at, true)
  }

  private keep(candidate: OutboundRecord, outcome: Outcome, now: number, restored = false): void {
    const record = this.table.claim(candidate)
    if (record.recorded) this.uncount(record)
    // A second message under the id (an earlier one's record or route still kept): from now on its give-backs are
    // judged by the withdrawals' identities (`fateUnderReusedId`). A send of the entry's own message again — one
    // answered with a retryable failure (P47's E_TARGET_REBOUND; review revnotes8 D1), or delivered before, its
    // record gone and its route kept (review rrn8 probe 3) — is no second message; `reuseRefused` judged it alike.
    if (record !== candidate && !restored && holdsEarlierMessage(record, candidate)) {
      this.reusedIds.markReused(record.senderKey, recordKeyOf(record.senderKey, record.id), now)
    }
    // A new send under the id (its earlier record pushed out while its route stayed): an earlier message's
    // cancel or supersede is not this one's (review revf R1) — nor does it hold a place on the withdrawals' list
    // (review revau AU2). Only a record with a withdrawal can be on that list: one field test on the send path, as
    // the field write it replaces. The withdrawn message may still wait unwritten: noted, for its give-back
    // (`withdrawnBeforeResend`, reviews cpback, revcc), with its own fingerprint — the record's until the line
    // below writes the new send's over it (no send under the id was kept since the withdrawal: it would have
    // forgotten it already) — and the new send's stamp. Its record may say so alone, kept within its hour while
    // its route went (the resend's own queue path drops it: MailDelivery.queue; or MAX_ROUTES newer routes pushed
    // it out): the outcome is read only under a reused id (`record !== candidate`). A record with no fingerprint
    // (a route made for mail flushed after its record left: Receipts.addRoute) notes the new send's instead, so the
    // new message given back at its own stamp is not taken for the withdrawn one (task cg2tie).
    if (record.withdrawal !== undefined || (record !== candidate && record.recorded && isWithdrawal(record.outcome))) {
      const held = record.targetId !== ""
      const withdrawn: ForgottenWithdrawal = {
        fingerprint: held ? new OutboundRecord(record.senderKey, record.id, record) : undefined,
        resendStamp: this.stamp(now),
        resendAlike: held && sameFingerprint(candidate, record),
        resend: held ? undefined : new OutboundRecord(candidate.senderKey, candidate.id, candidate)
      }
      this.forgotten.put(recordKeyOf(record.senderKey, record.id), withdrawn, now)
      if (record.withdrawal !== undefined) this.table.forgetWithdrawal(record)
    }
    if (record !== candidate) record.fingerprintFrom(candidate)
    // On a record routed for an earlier message under the id (unless this send's own route was just kept there:
    // Receipts.addRoute), whose withdrawal must not rewrite this send's part (`rewrite`'s `route`; review revdd DD1).
    const later = record !== candidate && record.routed && (candidate.parts & ROUTE_TAKEN) === 0
    this.table.keepRecord(record, outcome, now, recordBytes(record, outcome), restored, later)
    this.perSender.set(record.senderKey, (this.perSender.get(record.senderKey) ?? 0) + 1)
    this.bytes += record.bytes
    if (this.overBound()) this.makeRoom(now)
  }

  /**
   * A later message under `record`'s id, the one its replay part records
   * (`OutboundRecord.recordLater`), now owns its route (flushed to its
   * receiver: Receipts.addRoute): the withdrawal the record keeps is the
   * earlier message's, whose route that was, not this one's, and is
   * forgotten — or a cancel of the later message is answered "cannot be
   * cancelled" and its receiver never told (task route A). While the earlier
   * message may still wait unwritten (`withdrawnWaiting`) the forgetting is
   * noted as `keep` notes a resend's (`withdrawnBeforeResend`), by the stamp
   * alone: the earlier message's fingerprint is gone with its replay part,
   * so a message under the id given back received before `laterStamp` (the
   * later message's `brokerReceivedAt`) is found withdrawn; one at it (a
   * stamp tie: no clock move between the two) is the later message when of
   * `later`'s fingerprint (the later message's), else the withdrawn one
   * (review revroute D1). Flush path only, under a reused id.
   */
  forgetEarlier(record: OutboundRecord, laterStamp: number, later: Fingerprint, now: number): void {
    if (record.withdrawnWaiting) {
      const withdrawn: ForgottenWithdrawal = { fingerprint: undefined, resendStamp: laterStamp, resendAlike: false, resend: undefined, later }
      this.forgotten.put(recordKeyOf(record.senderKey, record.id), withdrawn, now)
    }
    this.table.forgetWithdrawal(record)
  }

  /**
   * Its sender withdrew (`outcome`: cancelled or superseded) the message `record`'s route names — or, with no route,
   * its replay record — given to the session `receiverKey`: noted by that message's identity (`ReusedIdWithdrawals`),
   * with its fingerprint while the record's replay part is kept and is that message's (not under RECORD_LATER,
   * where it is a later send's; the fields a replay part left behind may be another message's, flushed since),
   * and the stamp of now. Cancel and supersede paths only (Receipts.keepWithdrawal).
   */
  noteWithdrawn(record: OutboundRecord, outcome: Outcome, receiverKey: string, now: number): void {
    const held = record.recorded && record.targetId !== "" && !record.recordLater
    this.reusedIds.note(recordKeyOf(record.senderKey, record.id), {
      receiverKey,
      fingerprint: held ? new OutboundRecord(record.senderKey, record.id, record) : undefined,
      stamp: this.stamp(now),
      outcome
    }, now)
  }

  /** Its sender cancelled `mail` while the mailbox held it (`outcome`): noted as `noteWithdrawn` notes. Mailbox cancel path only. */
  noteWithdrawnMail(mail: Mail, outcome: Outcome, now: number): void {
    this.reusedIds.note(mail.recordKey, { receiverKey: mail.targetKey, fingerprint: fingerprintOfMail(mail), stamp: this.stamp(now), outcome }, now)
  }

  /**
   * Whether `sender`'s send under `id` at `now`, which no kept record answers (SendReplays.replayed), is refused
   * `E_MESSAGE_ID_REUSE` because accepting it would cross a bound of the reused ids' withdrawal notes
   * (`ReusedIdWithdrawals.refusesReuse`): the id has `MAX_PER_KEY` withdrawals noted, or `sent` would be a reuse (the
   * table holds an earlier message's route or record, not `sent`'s own: `holdsEarlierMessage`) past `MAX_KEYS` of
   * `sender`'s own reused ids, or of an id whose withdrawal, still on the table, lost its note to that bound. Asked
   * for every send `keep` may mark reused (also one repeating a retryable failure's record: review revnotes8 D2, D3).
   * Send path: three comparisons unless one of those bounds was reached.
   */
  reuseRefused(sender: string, id: string, now: number, sent: Fingerprint): boolean {
    if (!this.reusedIds.mayRefuse(now)) return false
    return this.reusedIds.refusesReuse(
      sender,
      recordKeyOf(sender, id),
      now,
      () => {
        const found = this.table.find(sender, id)
        return found !== undefined && holdsEarlierMessage(found, sent)
      },
      () => this.withdrawal(sender, id, now) !== undefined
    )
  }

  /**
   * Under an id a second send reused: how its sender withdrew `mail`, given back by the session `heldBy`, if a
   * withdrawal names that very message (`ReusedIdWithdrawals.fateOf`), else `"live"`; undefined when the id's
   * reuse is not kept (never reused, or a day since its last reuse or withdrawal), where the key alone tells
   * (`withdrawal`, `withdrawnBeforeResend`). No bound drops a reused id's withdrawals: the send that would cross one
   * is refused (`reuseRefused`; reviews revmodel probes 1, 2, 4). Give-back path only; a size check when no id was
   * reused.
   */
  fateUnderReusedId(mail: Mail, heldBy: string): Outcome | "live" | undefined {
    if (!this.reusedIds.judges(mail.recordKey)) return undefined
    return this.reusedIds.fateOf(mail.recordKey, {
      sessionKeys: heldBy === mail.targetKey ? [heldBy] : [mail.targetKey, heldBy],
      receivedAt: mail.brokerReceivedAt,
      fingerprint: () => fingerprintOfMail(mail)
    }) ?? "live"
  }

  /**
   * Later events rewrite an outcome (supersede, cancel, expiry, eviction,
   * mailbox flush). A kept record's byte estimate follows its new outcome (a
   * supersede's reason names the new message), so the byte bound counts what
   * is kept; the next record kept makes room if that is now over it.
   * `route`: the withdrawn message's route, when
   * a cancel or supersede found it by that: the replay part is rewritten only
   * if it is that message's, not a later send's under the id
   * (`OutboundRecord.recordLater`; review revdd DD1); the observer is told
   * all the same, with no record. `targetKey`: the session the message was
   * for, named by every caller — the mailbox's and staging's drops name the
   * message they hold, a cancel or supersede found by its route names its
   * receiver: a failure then ends that message's stored row only, not
   * another's under the id waiting for, or held unconfirmed by, another
   * session (Mailbox.ts; review revmailkey2 probe 1). Required, so no
   * failure can drop the rows of every session under the id (task byid
   * item 3: no caller had left it out since fixmk). `owner`: the fingerprint of
   * the message the rewrite is about, when the caller holds its mail (a
   * mailbox cancel; a flush or a staged message's hand-over; a give-back,
   * restore or failure of mail the mailbox or staging holds; a copy of an ask
   * dropped as answered or put back after its reply was lost, StaleAsks.drop
   * and MailDelivery's `askAgain`: task rwown): the record
   * found by sender and id is rewritten only if it is that message's
   * (`isRecordOfMail`: also when it was handed over without its settled
   * `supersedes`, review rrmk probe 4), not another's under the id (review
   * revmailkey2 probe 3; a later send's refused retryable, whose retry a
   * flush's rewrite had answered delivered and never written: task flushrw).
   * Given as a function, it is hashed only when a record is found (a
   * restored or given-back copy's: review rvc2 item 5).
   */
  rewrite(
    sender: string,
    id: string,
    outcome: Outcome,
    route: OutboundRecord | undefined,
    targetKey: string,
    owner?: Fingerprint | (() => Fingerprint)
  ): void {
    const found = route ?? this.table.find(sender, id)
    const kept = found !== undefined && found.recorded && (route === undefined || !found.recordLater) &&
        (owner === undefined || isRecordOfMail(found, typeof owner === "function" ? owner() : owner))
      ? found
      : undefined
    if (kept !== undefined) {
      kept.outcome = outcome
      this.bytes -= kept.bytes
      kept.bytes = recordBytes(kept, outcome)
      this.bytes += kept.bytes
    }
    this.observer?.rewrite(sender, id, outcome, kept === undefined ? undefined : { fingerprint: kept, at: kept.recordedAt }, targetKey)
  }

  /**
   * Whether a message under `recordKey` received at the stamp `receivedAt`
   * (`Mail.brokerReceivedAt`), of the fingerprint `given()`, given back, is
   * the one its sender withdrew before a new send under its id made the
   * record forget that (`keep`), within a day of that send: its fingerprint
   * is the withdrawn message's (an older message under the id its sender
   * never withdrew, of another, is not: review revcc item 2), and it was
   * received before the new send — or at its stamp, a tie, when the new
   * send's fingerprint is another: after the clock stepped back (or a
   * durable restart's floor ahead of it) stamps stand still, and the
   * fingerprints tell the two apart (review revcc item 3). A later message
   * (the new one, or one after it) is not. Not told apart: an older message
   * under the id of the withdrawn one's very fingerprint (the same text to
   * the same target) goes with it; in a stamp tie with a new send of that
   * same fingerprint the withdrawn one is found live (delivered), and a
   * third send under the id of the withdrawn one's fingerprint, in a tie,
   * goes. When the withdrawn message's record never held a fingerprint (a
   * route made for mail flushed after its record left the table), any
   * message received before the new send is found withdrawn, by the stamp
   * alone (review revcg CG2), and one received at its stamp when its
   * fingerprint is not the new send's (`resend`): the new message given back
   * itself is delivered (task cg2tie: it was dropped), and a withdrawn one of
   * the new send's content to another target is not (review revrec R2). A forgetting
   * `forgetEarlier` noted decides a tie by the later message's fingerprint
   * (`later`): of it, not withdrawn; of another, withdrawn (review revroute
   * D1). Give-back path only; a size check when no
   * withdrawal was forgotten, the fingerprint built only under a forgotten key.
   */
  withdrawnBeforeResend(recordKey: string, receivedAt: number, given: () => Fingerprint): boolean {
    if (this.forgotten.size === 0) return false
    const withdrawn = this.forgotten.get(recordKey)
    if (withdrawn === undefined) return false
    if (withdrawn.later !== undefined && receivedAt === withdrawn.resendStamp) return !sameFingerprint(given(), withdrawn.later)
    if (receivedAt > withdrawn.resendStamp || (receivedAt === withdrawn.resendStamp && withdrawn.resendAlike)) return false
    if (withdrawn.fingerprint !== undefined) return sameFingerprint(given(), withdrawn.fingerprint)
    return receivedAt < withdrawn.resendStamp || (withdrawn.resend !== undefined && !sameFingerprint(given(), withdrawn.resend))
  }

  /** Drops records past the retention time, and withdrawals forgotten more than a day ago. */
  prune(now: number): void {
    if (this.forgotten.size > 0) this.forgotten.expire(now - FORGOTTEN_MS - 1)
    this.reusedIds.expire(now - FORGOTTEN_MS - 1)
    const cutoff = now - this.limits.retentionMs - 1
    for (let oldest = this.table.oldestRecord; oldest !== undefined && oldest.recordedAt <= cutoff; oldest = this.table.oldestRecord) {
      this.drop(oldest)
    }
  }

  private drop(record: OutboundRecord): void {
    this.uncount(record)
    this.table.dropRecord(record)
  }

  private uncount(record: OutboundRecord): void {
    this.bytes -= record.bytes
    const count = (this.perSender.get(record.senderKey) ?? 1) - 1
    if (count <= 0) this.perSender.delete(record.senderKey)
    else this.perSender.set(record.senderKey, count)
  }

  private overBound(): boolean {
    return this.table.records > this.limits.maxRecords || this.bytes > this.limits.maxBytes
  }

  /** Back within bounds: first records past the window, then the heaviest sender's oldest. */
  private makeRoom(now: number): void {
    const cutoff = now - this.limits.windowMs - 1
    for (let oldest = this.table.oldestRecord; oldest !== undefined && oldest.recordedAt <= cutoff; oldest = this.table.oldestRecord) {
      this.drop(oldest)
      if (!this.overBound()) return
    }
    while (this.overBound()) {
      let heaviest: string | undefined
      let most = 0
      for (const [sender, count] of this.perSender) {
        if (count > most) {
          heaviest = sender
          most = count
        }
      }
      if (heaviest === undefined) return
      // Rare (every record is inside the window): drop a sixteenth of that sender's records per scan.
      let toDrop = Math.max(1, most >> 4)
      const victims: Array<OutboundRecord> = []
      for (let record = this.table.oldestRecord; record !== undefined; record = record.newerRecord) {
        if (record.senderKey !== heaviest) continue
        victims.push(record)
        if (--toDrop === 0) break
      }
      for (const victim of victims) this.drop(victim)
    }
  }
}
