/**
 * Replace coalescing (extension `delivery-v1`, C-DLV-5…9): a `send` with
 * `delivery: "queue"`, `queueMode: "replace"` and a `threadId` to a live
 * recipient is staged here instead of delivered. Per (sender, recipient,
 * threadId) only the latest staged message is kept; when the coalescing
 * window (`replaceWindowMs`, from the first message staged for the key)
 * closes, that one message is handed to the send pipeline's delivery, exactly
 * once. A message once handed over can no longer be replaced: a later one
 * starts a new window (C-DLV-7).
 *
 * Owns the staged messages and their per-sender counts. Bounded: 100 staged
 * per sender and 1,000 overall (C-DLV-8); replacing a staged key never counts.
 * Timed work runs on the broker's clock: a broker fiber sleeps until
 * `nextDeadline()` and calls `flushDue` (Broker.ts), woken through `signal`
 * when the first message is staged.
 *
 * Senders are told what became of a message they were acknowledged for with
 * `delivery_queued`: replaced → a `superseded` receipt; dropped because its
 * recipient left → an `expired` receipt (the receipts a lost or superseded
 * message gets elsewhere), kept for a sender that is away like the mailbox's
 * lost-mail notices. A staged *ask* whose sender leaves is dropped (C-DLV-9)
 * and its sender gets an `expired` receipt saying so when it registers again:
 * a sender whose connection dropped comes back with a client still waiting
 * for the answer, which the receipt ends. Its other staged messages are
 * delivered at once (see `hooks`). Its sender may withdraw a staged
 * message (`withdraw`: `cancel_message`, `cancel_ask`).
 */
import { DeliveryCode, Reason } from "../protocol/delivery.ts"
import * as Encode from "./encode.ts"
import type { Mail } from "./Peer.ts"
import type { RegistrationHooks } from "./Registration.ts"
import type { Session } from "./Registry.ts"
import type { RouterContext } from "./RouterContext.ts"
import type { Refusal, SendAttempt } from "./SendStage.ts"

/** Staged replace messages one sender may have at once (C-DLV-8). */
export const MAX_STAGED_PER_SENDER = 100

/** Staged replace messages the broker keeps at once, overall (C-DLV-8). */
export const MAX_STAGED = 1_000

/** One staged message: the latest of its key. */
export interface Staged {
  readonly key: string
  readonly attempt: SendAttempt
  readonly mail: Mail
  readonly threadId: string
  /** When the window of its key closes (kept when a later message replaces it). */
  readonly deliverAt: number
}

/** Delivers a staged message whose window closed to its recipient, now live as `target`. */
export type DeliverStaged = (staged: Staged, target: Session) => void

/** Sends a notice to a sender now, or keeps it until it registers again (MailDelivery.notify). */
export type NotifySender = (senderKey: string, notice: string) => void

/** The staging area; see the module header. */
export class ReplaceStaging {
  private readonly ctx: RouterContext
  private readonly deliver: DeliverStaged
  private readonly notify: NotifySender
  private readonly wake: () => void
  /** Staged messages by key, in the order their keys were first staged: deadlines ascend. */
  private readonly staged = new Map<string, Staged>()
  private readonly perSender = new Map<string, number>()

  /**
   * @param deliver hands a due message to the send pipeline's live delivery.
   * @param notify tells a sender (now, or when it is back) what became of a staged message.
   * @param wake tells the broker's staging fiber that a deadline may be nearer.
   */
  constructor(ctx: RouterContext, deliver: DeliverStaged, notify: NotifySender, wake: () => void) {
    this.ctx = ctx
    this.deliver = deliver
    this.notify = notify
    this.wake = wake
  }

  /** Messages staged now. */
  get size(): number {
    return this.staged.size
  }

  /** When the oldest staged message is due, or undefined when nothing is staged. */
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
    const previous = this.staged.get(key)
    if (previous === undefined) {
      const count = this.perSender.get(attempt.sender.key) ?? 0
      if (count >= MAX_STAGED_PER_SENDER || this.staged.size >= MAX_STAGED) {
        return { code: DeliveryCode.ReplaceQueueFull, reason: Reason.replaceQueueFull }
      }
      this.perSender.set(attempt.sender.key, count + 1)
    }
    const entry: Staged = {
      key,
      attempt,
      mail,
      threadId,
      deliverAt: previous?.deliverAt ?? attempt.now + this.ctx.options.replaceWindowMs
    }
    // Map.set on an existing key keeps its place: deadlines stay in ascending order.
    this.staged.set(key, entry)
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
   * delivered. Undefined when no such message is staged. A walk over the staged messages (at most MAX_STAGED):
   * a cancel, not the per-frame path.
   */
  withdraw(senderKey: string, messageId: string, asksOnly: boolean): Staged | undefined {
    if (this.staged.size === 0) return undefined
    for (const entry of this.staged.values()) {
      if (entry.mail.senderKey !== senderKey || entry.mail.message.id !== messageId) continue
      if (asksOnly && entry.mail.message.expectsReply !== true) return undefined
      this.cancel(entry)
      return entry
    }
    return undefined
  }

  /**
   * A due message that its recipient may no longer get: the send rules that
   * depend on the moment (an ask's reply, a mutual ask) refused it now. Its
   * replay record and its sender (an `expired` receipt) say why.
   */
  refuseDue(entry: Staged, targetInfo: string, refusal: Refusal): void {
    this.tell(entry, targetInfo, "expired", refusal.reason, refusal.code)
  }

  /** Hands every message whose window closed to its recipient, oldest first. */
  flushDue(now: number): void {
    for (const entry of this.staged.values()) {
      if (entry.deliverAt > now) return
      this.remove(entry)
      this.handOver(entry)
    }
  }

  /** A staged message taken out of staging goes to its recipient's live delivery, or is dropped if it left. */
  private handOver(entry: Staged): void {
    const target = this.ctx.registry.byKey.get(entry.mail.targetKey)
    if (target === undefined || target.peer.state !== "registered") return this.dropForRecipient(entry, undefined)
    this.deliver(entry, target)
  }

  /**
   * A recipient that leaves loses what was staged for it; a sender that
   * leaves, its staged asks, and is told (C-DLV-9). The rest a sender that
   * leaves had staged is delivered at once, as at its window's close: no
   * later message of its can replace it now, and delivered now it reaches
   * its recipient before the sender's `session_left` (Output.takeForWrite),
   * which a client takes as the end of its asks waiting on that sender
   * (C-BRK-33) — a staged reply behind it would be lost.
   */
  readonly hooks: RegistrationHooks = {
    left: (session) => {
      if (this.staged.size === 0) return
      for (const entry of this.staged.values()) {
        if (entry.mail.targetKey === session.key) {
          this.remove(entry)
          this.dropForRecipient(entry, session.infoJson)
        } else if (entry.mail.senderKey === session.key) {
          this.remove(entry)
          if (entry.mail.message.expectsReply === true) this.dropForAsker(entry, session)
          else this.handOver(entry)
        }
      }
    }
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

  /** Takes `entry` out for good, unsent: its replay record says cancelled (its sender asked). */
  private cancel(entry: Staged): void {
    this.remove(entry)
    this.ctx.records.rewrite(entry.mail.senderKey, entry.mail.message.id, {
      ok: false,
      code: DeliveryCode.DeliveryCancelled,
      reason: Reason.cancelled,
      retryable: false
    })
  }

  private remove(entry: Staged): void {
    this.staged.delete(entry.key)
    const count = (this.perSender.get(entry.mail.senderKey) ?? 1) - 1
    if (count === 0) this.perSender.delete(entry.mail.senderKey)
    else this.perSender.set(entry.mail.senderKey, count)
  }

  private dropForRecipient(entry: Staged, targetInfo: string | undefined): void {
    const info = targetInfo ?? this.ctx.registry.recent.get(entry.mail.spaceKey, entry.mail.targetId)?.infoJson
    this.tell(entry, info, "expired", Reason.stagedRecipientLeft, DeliveryCode.DeliveryExpired)
  }

  /** Rewrites the replay record (P46) and tells the sender, now or when it is back, with a receipt about `entry`. */
  private tell(
    entry: Staged,
    targetInfo: string | undefined,
    status: "superseded" | "expired",
    detail: string,
    code: DeliveryCode
  ): void {
    this.ctx.records.rewrite(entry.mail.senderKey, entry.mail.message.id, { ok: false, code, reason: detail, retryable: false })
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
