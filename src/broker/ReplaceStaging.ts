/**
 * Size: about 580 lines (the per-recipient cap, the share of the overall room and the
 * departures held behind due messages, about 150), kept whole because it is
 * the single owner of the staged and due messages and of every count over
 * them: the caps and the held departures are counts that must change in the
 * same step as the message they count leaves. Holding a departure in the
 * feed is Membership's; delivering is Send.ts's.
 *
 * Replace coalescing (extension `delivery-v1`, C-DLV-5…9): a `send` with
 * `delivery: "queue"`, `queueMode: "replace"` and a `threadId` to a live
 * recipient is staged here instead of delivered. Per (sender, recipient,
 * threadId) only the latest staged message is kept; when the coalescing
 * window (`replaceWindowMs`, from the first message staged for the key)
 * closes, that one message is handed to the send pipeline's delivery, exactly
 * once. A message once handed over can no longer be replaced: a later one
 * starts a new window (C-DLV-7).
 *
 * Owns the staged messages and their per-sender and per-recipient counts.
 * Bounded: 100 staged per sender and 1,000 overall (C-DLV-8), and ours, 250
 * staged for one recipient and a fair share of the room; replacing a staged
 * key never counts. The per-recipient caps isolate recipients: a recipient
 * that never reads keeps its due messages (below) counted, and without them
 * ten senders staging 100 threads each for it would fill the overall cap and
 * refuse replace sends to every other recipient. At 250 one such recipient
 * holds a quarter of the overall cap at most; a reading recipient meets it
 * only with 250 distinct (sender, thread) keys in one window. The share
 * (`MAX_STAGED - size`, the places free, must exceed what the recipient
 * holds: it holds at most half, rounded up, of what the other recipients
 * leave) keeps a few such recipients from filling the room together: four
 * stuck ones hold 250, 250, 250 and 125, each next one half of what is left
 * rounded up (63 of the 125 a fifth finds), and a recipient
 * holding none is refused only when no place at all is free, which takes at
 * least eleven recipients holding places. Far from full it never binds.
 * Timed work runs on the broker's clock: a broker fiber sleeps until
 * `nextDeadline()` and calls `flushDue` (Broker.ts), woken through `signal`
 * when the first message is staged.
 *
 * A message falls due outside any reader's batch, so when its recipient's
 * outbox is full there is no sender to slow and no batch to park it with
 * (parked, it would hold back whichever reader came next; queued past the
 * bounds, a recipient that never reads would grow without limit). It stays
 * staged instead, *due*: out of the deadline order (the fiber sleeps on; it
 * never spins on it), still counted against the caps (so a sender that keeps
 * staging for such a recipient is refused, not remembered), still replaced
 * by a later message of its key, dropped like any staged message when its
 * recipient leaves. Its recipient's writer taking its outbox makes room
 * (`roomFor`, from OutputWrites.roomMade): the due messages for that recipient
 * go then, in the order they fell due, as many as fit — one lookup per
 * write when none wait.
 *
 * Senders are told what became of a message they were acknowledged for with
 * `delivery_queued`: replaced → a `superseded` receipt; dropped because its
 * recipient left → an `expired` receipt (the receipts a lost or superseded
 * message gets elsewhere), kept for a sender that is away like the mailbox's
 * lost-mail notices. A staged *ask* whose sender leaves is dropped (C-DLV-9)
 * and its sender gets an `expired` receipt saying so when it registers again:
 * a sender whose connection dropped comes back with a client still waiting
 * for the answer, which the receipt ends. Its other staged messages are
 * delivered at once (see `hooks`); one that must wait for room (its
 * sender's connection closed, so there is no batch to park it with) holds
 * that sender's `session_left` back from its recipient, and from it only,
 * until it is queued or dropped (`DepartureGate`, WithheldDepartures.ts's
 * `withholdDeparture`); a takeover of that recipient moves the hold to
 * its new connection with the sender's withheld return, where the message
 * then goes (`moveDepartureHold`). Its sender may withdraw a staged message
 * (`withdraw`: `cancel_message`, `cancel_ask`).
 */
import { DeliveryCode, Reason } from "../protocol/delivery.ts"
import { acceptedLater } from "./BrokerStamps.ts"
import { fingerprintOfMail, type Outcome } from "./DeliveryRecords.ts"
import * as Encode from "./encode.ts"
import type { Mail, Peer } from "./Peer.ts"
import type { RegistrationHooks } from "./Registration.ts"
import type { Session } from "./Registry.ts"
import type { RouterContext } from "./RouterContext.ts"
import type { Refusal, SendAttempt } from "./SendStage.ts"

/** Staged replace messages one sender may have at once (C-DLV-8). */
export const MAX_STAGED_PER_SENDER = 100

/** Staged replace messages the broker keeps at once, overall (C-DLV-8). */
export const MAX_STAGED = 1_000

/**
 * Staged replace messages for one recipient at once (ours; see the module
 * header): a quarter of MAX_STAGED, so one recipient that never reads cannot
 * refuse replace sends to every other. Below it, a recipient takes a new
 * place only while it holds fewer than the places still free (its share).
 */
export const MAX_STAGED_PER_RECIPIENT = 250

/** One staged message: the latest of its key. */
export interface Staged {
  readonly key: string
  readonly attempt: SendAttempt
  readonly mail: Mail
  readonly threadId: string
  /** When the window of its key closes (kept when a later message replaces it). */
  readonly deliverAt: number
}

/**
 * Delivers a staged message whose window closed to its recipient, now live
 * as `target` (Send.deliverStaged): true when it was taken, false when the
 * recipient's outbox has no room for it now. With `leaving` (its sender
 * leaves), inside the sender's own batch, it is queued with that batch.
 */
export type DeliverStaged = (staged: Staged, target: Session, leaving: boolean) => boolean

/** Sends a notice to a sender now, or keeps it until it registers again (MailDelivery.notify). */
export type NotifySender = (senderKey: string, notice: string) => void

/**
 * Holds a departed sender's `session_left` back from one recipient while its
 * replace messages wait for room there (WithheldDepartures.withholdDeparture and
 * releaseDeparture, by the sender's session id): one hold per (sender,
 * recipient), released once.
 */
export interface DepartureGate {
  /** Takes a hold on `recipient`'s departure of session `senderId`. */
  readonly withhold: (recipient: Peer, senderId: string) => void
  /** Releases the hold `withhold` took. */
  readonly release: (recipient: Peer, senderId: string) => void
}

/** A departed sender's due messages for one recipient, whose `session_left` waits for them. */
interface WaitingDeparture {
  /** The recipient's connection, where the hold stands (moved to the next one at a takeover: `moveDepartureHold`). */
  recipient: Peer
  readonly senderId: string
  /** Its due messages still waiting for room there. */
  count: number
}

/** `session "<name>" (<id>)`, or `session <id>`, for a refusal naming the recipient. */
const labelOf = (target: Session): string => {
  const name = target.fields.name
  return name === undefined ? `session ${target.id}` : `session "${name}" (${target.id})`
}

/** Takes one off `key`'s count in `counts`, forgetting a count that reaches zero. */
const decrement = (counts: Map<string, number>, key: string): void => {
  const count = (counts.get(key) ?? 1) - 1
  if (count === 0) counts.delete(key)
  else counts.set(key, count)
}

/** The staging area; see the module header. */
export class ReplaceStaging {
  private readonly ctx: RouterContext
  private readonly deliver: DeliverStaged
  private readonly notify: NotifySender
  private readonly wake: () => void
  private readonly departures: DepartureGate
  /** Departures held back from a recipient for a departed sender's due messages, by `sender\0recipient` key. */
  private readonly waitingDepartures = new Map<string, WaitingDeparture>()
  /** Staged messages whose window is open, by key, in the order their keys were first staged: deadlines ascend. */
  private readonly staged = new Map<string, Staged>()
  /** Due messages waiting for room, by recipient key, then by key in the order they fell due. */
  private readonly due = new Map<string, Map<string, Staged>>()
  /** Due messages waiting for room, over all recipients. */
  private dueCount = 0
  /** Staged and due messages by sender key (C-DLV-8). */
  private readonly perSender = new Map<string, number>()
  /** Staged and due messages by recipient key (MAX_STAGED_PER_RECIPIENT). */
  private readonly perRecipient = new Map<string, number>()
  /**
   * The broker's own shutdown has begun (`brokerStopping`): a session its closing connections end keeps its staged
   * messages (review fixq1).
   */
  private stopping = false

  /**
   * @param deliver hands a due message to the send pipeline's live delivery.
   * @param notify tells a sender (now, or when it is back) what became of a staged message.
   * @param wake tells the broker's staging fiber that a deadline may be nearer.
   * @param departures holds a departed sender's `session_left` back from a recipient its due messages wait for.
   */
  constructor(
    ctx: RouterContext,
    deliver: DeliverStaged,
    notify: NotifySender,
    wake: () => void,
    departures: DepartureGate
  ) {
    this.ctx = ctx
    this.deliver = deliver
    this.notify = notify
    this.wake = wake
    this.departures = departures
  }

  /** Messages staged now: those whose window is open and those due that wait for room. */
  get size(): number {
    return this.staged.size + this.dueCount
  }

  /** Due messages that wait for room in their recipients' outboxes. */
  get waiting(): number {
    return this.dueCount
  }

  /** When the oldest staged message's window closes, or undefined when no window is open (due messages have none). */
  nextDeadline(): number | undefined {
    for (const entry of this.staged.values()) return entry.deliverAt
    return undefined
  }

  /**
   * Stages `mail` for `target` on `threadId`: replaces the staged message of
   * the same key (its sender gets a `superseded` receipt) or takes a new
   * place, within the caps. The staged entry, or the cap's refusal.
   */
  stage(attempt: SendAttempt, mail: Mail, target: Session, threadId: string): Staged | Refusal {
    const key = `${attempt.sender.key}\u0000${target.key}\u0000${threadId}`
    // Due and waiting for room, it is still staged: replaced in its place.
    const dueFor = this.dueCount === 0 ? undefined : this.due.get(target.key)
    const previousDue = dueFor?.get(key)
    const previous = previousDue ?? this.staged.get(key)
    if (previous === undefined) {
      const count = this.perSender.get(attempt.sender.key) ?? 0
      if (count >= MAX_STAGED_PER_SENDER) return { code: DeliveryCode.ReplaceQueueFull, reason: Reason.replaceQueueFull }
      // By the mail's recipient key, as `uncount` takes it off (a P49 sole holder's differs from `target.key`).
      const forTarget = this.perRecipient.get(mail.targetKey) ?? 0
      if (forTarget >= MAX_STAGED_PER_RECIPIENT) {
        return { code: DeliveryCode.ReplaceQueueFull, reason: Reason.replaceQueueFullFor(labelOf(target), MAX_STAGED_PER_RECIPIENT) }
      }
      const free = MAX_STAGED - this.size
      if (free <= 0) return { code: DeliveryCode.ReplaceQueueFull, reason: Reason.replaceQueueFull }
      // Its share: no more than the places still free, so that a few recipients cannot fill the room together.
      if (forTarget >= free) {
        return { code: DeliveryCode.ReplaceQueueFull, reason: Reason.replaceQueueShareFull(labelOf(target), forTarget) }
      }
      this.perSender.set(attempt.sender.key, count + 1)
      this.perRecipient.set(mail.targetKey, forTarget + 1)
    }
    const entry: Staged = {
      key,
      attempt,
      mail,
      threadId,
      deliverAt: previous?.deliverAt ?? attempt.now + this.ctx.options.replaceWindowMs
    }
    // Map.set on an existing key keeps its place: deadlines stay in ascending order, due ones in theirs.
    if (dueFor !== undefined && previousDue !== undefined) dueFor.set(key, entry)
    else this.staged.set(key, entry)
    if (previous !== undefined) {
      this.tell(previous, target.infoJson, "superseded", Reason.replaced(mail.message.id, threadId), DeliveryCode.DeliverySuperseded)
    } else if (this.staged.size === 1) {
      this.wake()
    }
    return entry
  }

  /**
   * Takes `senderKey`'s staged message `messageId` out before its window
   * closed (`cancel_message`, or with `asksOnly` `cancel_ask`, which takes
   * only an ask): its replay record says cancelled, and it is never
   * delivered. Under a reused id staged for several recipients, the newest
   * (`newestOf`), the message the id stands for now (task stgnew); with
   * `asksOnly`, the newest ask, the message a `cancel_ask` names, whatever
   * plain message was staged under the id after it (review rvstg probe 2).
   * Undefined when no such message is staged. A walk over the staged
   * messages (at most MAX_STAGED): a cancel, not the per-frame path.
   */
  withdraw(senderKey: string, messageId: string, asksOnly: boolean): Staged | undefined {
    const found = this.newestOf(senderKey, messageId, asksOnly)
    if (found === undefined) return undefined
    const { entry, dueFor } = found
    if (dueFor === undefined) {
      this.staged.delete(entry.key)
      this.uncount(entry)
    } else {
      this.takeDue(entry, dueFor)
    }
    this.cancel(entry)
    return entry
  }

  /**
   * `senderKey`'s newest message `messageId` staged or due (`newestOf`), or undefined: a cancel under a reused id
   * compares it with the mailbox's newest under the id (Cancels.ts). A size check while nothing is staged.
   */
  stagedMessage(senderKey: string, messageId: string): Staged | undefined {
    return this.newestOf(senderKey, messageId, false)?.entry
  }

  /**
   * `senderKey`'s newest ask (`expectsReply`) `messageId` staged or due (`newestOf`), or undefined: accepted
   * already (`delivery_queued`), so a durable question under its id is refused (Questions.ts, review revcf R1),
   * naming the recipient of the ask a `cancel_ask` would withdraw (review rvstg probe 2). On a `question_ask`, not
   * the per-frame path; a size check while nothing is staged.
   */
  stagedAsk(senderKey: string, messageId: string): Staged | undefined {
    return this.newestOf(senderKey, messageId, true)?.entry
  }

  /**
   * `senderKey`'s message `messageId` staged or due accepted last (`acceptedLater`: one id may be staged for
   * several recipients, task stgnew) — with `asksOnly`, of its asks only — with the due map that holds it if it
   * is due. A walk over the staged and due messages (at most MAX_STAGED), on a cancel or a `question_ask`, not the
   * per-frame path; a size check while nothing is staged.
   */
  private newestOf(
    senderKey: string,
    messageId: string,
    asksOnly: boolean
  ): { readonly entry: Staged; readonly dueFor?: Map<string, Staged> } | undefined {
    if (this.size === 0) return undefined
    let newest: { readonly entry: Staged; readonly dueFor?: Map<string, Staged> } | undefined
    const isNewer = (entry: Staged): boolean =>
      entry.mail.senderKey === senderKey && entry.mail.message.id === messageId &&
      (!asksOnly || entry.mail.message.expectsReply === true) &&
      (newest === undefined || acceptedLater(entry.mail, newest.entry.mail))
    for (const entry of this.staged.values()) if (isNewer(entry)) newest = { entry }
    for (const dueFor of this.due.values()) {
      for (const entry of dueFor.values()) if (isNewer(entry)) newest = { entry, dueFor }
    }
    return newest
  }

  /**
   * A due message that its recipient may no longer get: the send rules that
   * depend on the moment (an ask's reply, a mutual ask) refused it now. Its
   * replay record and its sender (an `expired` receipt) say why.
   */
  refuseDue(entry: Staged, targetInfo: string, refusal: Refusal): void {
    this.tell(entry, targetInfo, "expired", refusal.reason, refusal.code)
  }

  /**
   * Hands every message whose window closed to its recipient, oldest first;
   * one whose recipient's outbox has no room stays staged, due, until
   * `roomFor` (see the module header). Nothing once the broker's own shutdown
   * has begun (`brokerStopping`): the staging fiber runs until the stop's
   * closes are done, and a window closing then would drop a message whose
   * recipient the stop closed (review rvfin probe 3); it stays staged and
   * stored, as a crash leaves it.
   */
  flushDue(now: number): void {
    if (this.stopping) return
    for (const entry of this.staged.values()) {
      if (entry.deliverAt > now) return
      this.staged.delete(entry.key)
      this.handOver(entry, false)
    }
  }

  /**
   * `peer`'s writer took its outbox (OutputWrites.roomMade): the due messages for
   * its session go, in the order they fell due, until one does not fit. One
   * lookup when none wait for it.
   */
  roomFor(peer: Peer): void {
    if (this.dueCount === 0) return
    const target = peer.session
    if (target === undefined || target.peer !== peer || peer.state !== "registered") return
    const dueFor = this.due.get(target.key)
    if (dueFor === undefined) return
    for (const entry of dueFor.values()) {
      if (!this.deliver(entry, target, false)) return
      this.takeDue(entry, dueFor)
    }
  }

  /**
   * A staged message whose window closed (or whose sender leaves) goes to its
   * recipient's live delivery, or is dropped if the recipient left; kept due
   * when the recipient's outbox has no room, behind those already due for it.
   */
  private handOver(entry: Staged, leaving: boolean): void {
    const target = this.liveTarget(entry)
    if (target === undefined) {
      this.uncount(entry)
      return this.dropForRecipient(entry, undefined)
    }
    const dueFor = this.dueCount === 0 ? undefined : this.due.get(target.key)
    // Behind older due ones it waits its turn, unless its sender leaves (it goes with the leaving batch).
    if ((dueFor === undefined || leaving) && this.deliver(entry, target, leaving)) return this.uncount(entry)
    if (dueFor === undefined) this.due.set(target.key, new Map([[entry.key, entry]]))
    else dueFor.set(entry.key, entry)
    this.dueCount++
  }

  /** `entry`'s recipient, when it is live and registered. */
  private liveTarget(entry: Staged): Session | undefined {
    const target = this.ctx.registry.byKey.get(entry.mail.targetKey)
    return target === undefined || target.peer.state !== "registered" ? undefined : target
  }

  /**
   * The broker's own shutdown begins (Router.stopping, before its connections close): from now on a session that
   * leaves keeps what it staged and what was staged for it, neither dropped (its sender owed `expired`) nor handed
   * over, so the store's last commit keeps those rows as a crash does and the next start restores them (as queued mail, docs/store.md). Before,
   * the stop's closes dropped a staged message for a recipient closed first, and a staged ask of an asker closed
   * first, and its sender was told `expired` after the restart (helper fixq1).
   */
  brokerStopping(): void {
    this.stopping = true
  }

  /**
   * A recipient that leaves loses what was staged for it; a sender that
   * leaves, its staged asks, and is told (C-DLV-9). The rest a sender that
   * leaves had staged is delivered at once, as at its window's close: no
   * later message of its can replace it now, and delivered now it reaches
   * its recipient before the sender's `session_left` (OutputWrites.takeForWrite),
   * which a client takes as the end of its asks waiting on that sender
   * (C-BRK-33) — a staged reply behind it would be lost. One that must wait
   * for room (no batch of its sender's to park it with: its connection
   * closed) holds that `session_left` back from its recipient until it goes
   * (`withholdDepartures`). Not at the broker's own shutdown (`brokerStopping`):
   * the sessions its closes end keep what they staged, stored, as a crash does.
   */
  readonly hooks: RegistrationHooks = {
    left: (session) => {
      if (this.size === 0 || this.stopping) return
      // Due ones first: they fell due before any window still open closes.
      if (this.dueCount > 0) {
        for (const dueFor of this.due.values()) {
          for (const entry of dueFor.values()) {
            if (entry.mail.targetKey === session.key) {
              this.takeDue(entry, dueFor)
              this.dropForRecipient(entry, session.infoJson)
            } else if (entry.mail.senderKey === session.key) {
              if (entry.mail.message.expectsReply === true) {
                this.takeDue(entry, dueFor)
                this.dropForAsker(entry, session)
              } else {
                const target = this.liveTarget(entry)
                if (target !== undefined && this.deliver(entry, target, true)) this.takeDue(entry, dueFor)
              }
            }
          }
        }
      }
      for (const entry of this.staged.values()) {
        if (entry.mail.targetKey === session.key) {
          this.staged.delete(entry.key)
          this.uncount(entry)
          this.dropForRecipient(entry, session.infoJson)
        } else if (entry.mail.senderKey === session.key) {
          this.staged.delete(entry.key)
          if (entry.mail.message.expectsReply === true) {
            this.uncount(entry)
            this.dropForAsker(entry, session)
          } else this.handOver(entry, true)
        }
      }
      if (this.dueCount > 0) this.withholdDepartures(session)
    }
  }

  /**
   * `sender` left with non-ask messages due, waiting for room in their
   * recipients' outboxes: each such recipient gets its `session_left` only
   * after them (C-BRK-33), without the outbox going past its bounds. A
   * recipient in another scope (a rerouted reply) does not see the departure
   * in its feed: nothing to hold. A walk over the due messages: a leave, not
   * the per-frame path.
   */
  private withholdDepartures(sender: Session): void {
    for (const [targetKey, dueFor] of this.due) {
      let count = 0
      for (const entry of dueFor.values()) if (entry.mail.senderKey === sender.key) count++
      if (count === 0) continue
      const target = this.ctx.registry.byKey.get(targetKey)
      if (target === undefined || target.space !== sender.space) continue
      const pair = `${sender.key}\u0000${targetKey}`
      // Left before, came back and left again: the hold of that departure, still waiting, covers this one.
      const waiting = this.waitingDepartures.get(pair)
      if (waiting !== undefined && waiting.recipient === target.peer) {
        waiting.count = count
        continue
      }
      if (waiting !== undefined) this.departures.release(waiting.recipient, waiting.senderId)
      this.waitingDepartures.set(pair, { recipient: target.peer, senderId: sender.id, count })
      this.departures.withhold(target.peer, sender.id)
    }
  }

  /**
   * `next` took session `recipientKey` over from `previous` (P16) while the
   * departure of session `senderKey` is held back from `previous` for its
   * due messages (`withholdDepartures`): they go to `next` (`roomFor` finds
   * the session's current connection), so the hold stands on `next` from now
   * on and is released there (WithheldDepartures.takenOver, which counts it
   * on the withheld return it moves there). True when there was one. A look-up,
   * per takeover of a recipient withholding a return only.
   */
  moveDepartureHold(previous: Peer, next: Peer, senderKey: string, recipientKey: string): boolean {
    if (this.waitingDepartures.size === 0) return false
    const waiting = this.waitingDepartures.get(`${senderKey}\u0000${recipientKey}`)
    if (waiting === undefined || waiting.recipient !== previous) return false
    waiting.recipient = next
    return true
  }

  /** A due message left: the last of a departed sender's for its recipient releases the departure held behind them. */
  private departureWaited(entry: Staged): void {
    const pair = `${entry.mail.senderKey}\u0000${entry.mail.targetKey}`
    const waiting = this.waitingDepartures.get(pair)
    if (waiting === undefined || --waiting.count > 0) return
    this.waitingDepartures.delete(pair)
    this.departures.release(waiting.recipient, waiting.senderId)
  }

  /**
   * A staged ask whose asker left (C-DLV-9): dropped, and its asker told why
   * with an `expired` receipt, kept until it registers again — a connection
   * that dropped comes back to a client still waiting for the answer — and
   * its replay record says the same to a retry. A short-lived session does
   * not come back: only its record is rewritten.
   */
  private dropForAsker(entry: Staged, asker: Session): void {
    const info = asker.ephemeral
      ? undefined
      : this.ctx.registry.byKey.get(entry.mail.targetKey)?.infoJson ??
        this.ctx.registry.recent.get(entry.mail.spaceKey, entry.mail.targetId)?.infoJson
    this.tell(entry, info, "expired", Reason.stagedAskerLeft, DeliveryCode.DeliveryExpired)
  }

  /**
   * `entry`, taken out of staging and its counts, is cancelled for good, unsent: its replay record says so (its
   * sender asked) — its own only, not another message's under the id (`rewrite`'s owner; review rrmk item 3).
   */
  private cancel(entry: Staged): void {
    this.ctx.records.rewrite(entry.mail.senderKey, entry.mail.message.id, {
      ok: false,
      code: DeliveryCode.DeliveryCancelled,
      reason: Reason.cancelled,
      retryable: false
    }, undefined, entry.mail.targetKey, () => fingerprintOfMail(entry.mail))
  }

  /** A due message taken out of `dueFor` (its recipient's due messages), and out of the counts. */
  private takeDue(entry: Staged, dueFor: Map<string, Staged>): void {
    dueFor.delete(entry.key)
    if (dueFor.size === 0) this.due.delete(entry.mail.targetKey)
    this.dueCount--
    this.uncount(entry)
    // After its delivery (the callers queue it first): the departure comes after it.
    if (this.waitingDepartures.size > 0) this.departureWaited(entry)
  }

  /** A message that leaves staging no longer counts against its sender's cap, nor its recipient's. */
  private uncount(entry: Staged): void {
    decrement(this.perSender, entry.mail.senderKey)
    decrement(this.perRecipient, entry.mail.targetKey)
  }

  private dropForRecipient(entry: Staged, targetInfo: string | undefined): void {
    const info = targetInfo ?? this.ctx.registry.recent.get(entry.mail.spaceKey, entry.mail.targetId)?.infoJson
    this.tell(entry, info, "expired", Reason.stagedRecipientLeft, DeliveryCode.DeliveryExpired)
  }

  /**
   * Rewrites `entry`'s own replay record (P46; not another message's under the id: `rewrite`'s owner, review rrmk
   * item 3) and tells the sender, now or when it is back, with a receipt about `entry`.
   */
  private tell(
    entry: Staged,
    targetInfo: string | undefined,
    status: "superseded" | "expired",
    detail: string,
    code: DeliveryCode
  ): void {
    const outcome: Outcome = { ok: false, code, reason: detail, retryable: false }
    this.ctx.records.rewrite(entry.mail.senderKey, entry.mail.message.id, outcome, undefined, entry.mail.targetKey, () => fingerprintOfMail(entry.mail))
    if (targetInfo === undefined) return
    const notice = Encode.receiptFrame(targetInfo, {
      messageId: entry.mail.message.id,
      status,
      timestamp: this.ctx.now(),
      detail
    })
    this.notify(entry.mail.senderKey, notice)
  }
}
