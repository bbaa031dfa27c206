/**
 * The supersede send stage (P72): a send whose `supersedes` names its
 * sender's earlier message first tells that message's receiver it is
 * superseded, with a `message_control` sent along the message's receipt
 * route (Receipts.ts), and rewrites the old message's own record to say so
 * (never a later send's under the id: review revdd DD1). It
 * reads the routes through Receipts and keeps no state of its own; its
 * `delivered` records the new message's route (Receipts.addRoute).
 *
 * A `supersedes` naming a message its sender cancelled or superseded already
 * is refused (`E_SUPERSEDE_TARGET`, the reason saying which), though its
 * route, which outlives both, still matches — judged before the route, so a
 * restart that took the route still gets that reason (review revd D4). A
 * `replace`-staged message whose target
 * its sender cancelled or superseded while it waited (C-DLV-6 acknowledged
 * it queued) is not refused when its window closes but delivered alone: no
 * control, the record left as it is (review revd D3). A supersede of an
 * ask withdraws it as a cancel does (`forget`: its edge closes; review
 * revd D5). A `supersedes` naming a supervisor's reply that a durable
 * question took as its answer is refused (`E_SUPERSEDE_TARGET`), as its
 * cancel is (Cancels.ts): the saved answer stays, and the child is told
 * nothing (`OutboundRecords.answeredBy`, marked as the reply was routed).
 *
 * A supersede's
 * control does not wait for a `received-v1` receiver: its new message goes
 * at once right behind it (StoreJournal.markDelivery), and the control must
 * come first; a crash before the commit leaves the old message's record
 * saying delivered while the receiver dropped it, which hides no loss — it
 * was delivered, the new message that replaces it was written with the
 * control, and its sender's retry of the new one follows the record to the
 * receiver again (docs/protocol.md). A base receiver's waits with its new
 * message (its outbox is held for the commit).
 *
 * A supersede goes to the receiver only when the client instance its route
 * names was given the old message (Receipts.ts). Unlike a cancel it does not
 * wait for a takeover's custody hold (its new message goes now): it
 * is recorded and its new message delivered alone, and the old message,
 * given back at that close, is withdrawn on its way — so the new instance
 * gets the new message alone either way. A copy of the old message waiting
 * in the mailbox for another session of its identity goes with it when the
 * told reader read that very copy (MailDelivery.superseded, by
 * WithdrawnCopies' read mark), never a later message under a reused id.
 */
import { DeliveryCode, Reason } from "../protocol/delivery.ts"
import { ControlFrame } from "./ControlFrame.ts"
import { type Outcome, recordKeyOf } from "./DeliveryRecords.ts"
import * as Encode from "./encode.ts"
import type { MailDelivery } from "./MailDelivery.ts"
import { mayStillWait } from "./MayStillWait.ts"
import type { Receipts } from "./Receipts.ts"
import { mayHold } from "./Registry.ts"
import type { RouterContext } from "./RouterContext.ts"
import type { SendStage } from "./SendStage.ts"

/** What the supersede stage reads and keeps of the receipt routes (Receipts.ts). */
type SupersedeRoutes = Pick<
  Receipts,
  "addRoute" | "keepWithdrawal" | "liveRoute" | "recordedRoute" | "routeOf" | "withdrawnBy" | "withdrawnRowKey"
>

/**
 * P72: a `supersedes` must name this sender's earlier message to this
 * (live) receiver, by its route or its record (`recordedRoute`), that its
 * sender has not cancelled or superseded already (`withdrawnBy`).
 *
 * @param mail the mailbox, whose copy of a superseded message its told reader read goes with it (`superseded`).
 * @param receipts the routes it reads, and keeps the new message's route in (`delivered`).
 * @param forget drops what other concerns keep for a withdrawn ask (its edge; Receipts' constructor).
 */
export const supersedeStage = (
  ctx: RouterContext,
  mail: MailDelivery,
  receipts: SupersedeRoutes,
  forget: (messageKey: string) => void
): SendStage => {
  const routes = ctx.records.table
  return {
    check: (attempt) => {
      const supersedes = attempt.message.supersedes
      if (supersedes === undefined) return undefined
      if (attempt.target === undefined) {
        return { code: DeliveryCode.SupersedeTarget, reason: Reason.supersedeDisconnected }
      }
      // Its fate settled already by this sender (a route outlives a cancel or supersede): a second control or a
      // rewritten record would tell its receiver, and a retry, another fate. Judged before the route, which a
      // restart or the routes' bound may have taken (`recordedRoute` turns a settled record away), so the
      // refusal says which. A staged message checked again as its window closes was accepted before that: it
      // goes alone (`beforeDelivery`).
      const settled = receipts.withdrawnBy(attempt.sender, supersedes, attempt.now)
      if (settled !== undefined && !settled.ok) {
        if (attempt.staged) return undefined
        const reason = settled.code === DeliveryCode.DeliveryCancelled
          ? Reason.supersedeCancelled
          : Reason.supersedeSuperseded(settled.reason)
        return { code: DeliveryCode.SupersedeTarget, reason }
      }
      const route = receipts.liveRoute(attempt.sender.key, supersedes, attempt.now) ??
        receipts.recordedRoute(attempt.sender, supersedes, attempt.now)
      if (route === undefined || route.sender !== attempt.sender || route.receiver !== attempt.target) {
        return { code: DeliveryCode.SupersedeTarget, reason: Reason.supersedeNoRoute }
      }
      // A supervisor's reply saved as a durable question's answer, marked on its record as it was routed
      // (Receipts.addRoute): refused as its cancel is (Cancels.ts), or the child would be told to withdraw its answer.
      const record = routes.find(attempt.sender.key, supersedes)
      const answered = record === undefined ? undefined : routes.answeredBy(record)
      if (answered !== undefined) return { code: DeliveryCode.SupersedeTarget, reason: Reason.supersedeAnswer(answered) }
      return undefined
    },
    // Settled meanwhile, a staged message's `supersedes` goes too: with no control before it, the field would tell
    // a receiver whose control was dropped (a restart) to withdraw the old message again, under another fate (bt1).
    supersedesSettled: (attempt) =>
      attempt.staged && attempt.message.supersedes !== undefined &&
      receipts.withdrawnBy(attempt.sender, attempt.message.supersedes, attempt.now) !== undefined,
    // The receiver learns of the supersede before the new message.
    beforeDelivery: (attempt, target) => {
      const { message, sender } = attempt
      if (message.supersedes === undefined) return
      // Settled already (a `replace`-staged message whose sender cancelled or superseded its target while it
      // waited: the check let it through): the new message goes alone — no control, the record left as it is, and
      // no `supersedes` (`supersedesSettled`).
      if (receipts.withdrawnBy(sender, message.supersedes, attempt.now) !== undefined) return
      // Only to the client instance given the superseded message (a takeover's new one cannot act on it; it
      // gets the new message alone, and the old one never: MailReturns.requeue).
      // With no route (a durable broker restarted), the one its replay record implies (`recordedRoute`,
      // which the check above passed).
      const route = receipts.routeOf(sender.key, message.supersedes)
      const recorded = route === undefined ? receipts.recordedRoute(sender, message.supersedes, attempt.now) : undefined
      // Kept behind the superseded message wherever that still waits for the receiver (ControlFrame.ts).
      const text = Encode.controlFrame(sender.infoJson, {
        messageId: message.supersedes,
        action: "supersede",
        supersededBy: message.id,
        timestamp: attempt.stamp
      })
      const messageKey = recordKeyOf(sender.key, message.supersedes)
      const control = new ControlFrame(text, target.key, sender.key, sender.presentSince, messageKey, target.instance)
      const waiting = mayStillWait(target.peer, control, ctx.output)
      // Never by a takeover's custody hold (review revb D1): whether the new instance gets the superseded
      // message is known only at the old close, while the new message goes now. Not sent, the old one given
      // back at that close is withdrawn on its way, so the new instance gets the new message alone either way.
      const told = route !== undefined ? mayHold(route.receiverInstance, target) : recorded?.receiver === target
      if (told) ctx.output.enqueue(target.peer, control)
      const superseded: Outcome = {
        ok: false,
        code: DeliveryCode.DeliverySuperseded,
        reason: Reason.superseded(message.id),
        retryable: false
      }
      // A copy of it waiting in the mailbox for another session of its identity (given back by P49's other holder,
      // told now) goes with it: only the copy that reader read, told by the mark on that mail object, never a
      // later message under a reused id, which must not be lost (reviews revcc item 1, revcg CG1) — nor its stored
      // row: the rewrite drops only the row the superseded message was stored under — the session its send named,
      // not `target`'s when P49's other holder took it (`withdrawnRowKey`; review rrmk probe 1); the copy's own row
      // goes with it (`superseded`) — so another message under the id, queued or held unconfirmed by another
      // session, keeps its row (review revmailkey2 probe 1). Found by its route, only
      // its own replay record is rewritten, not a later send's under the id kept after its record left (`route`;
      // review revdd DD1); found by its record (`recordedRoute`), that record is its own.
      if (told) mail.superseded(messageKey, target)
      ctx.records.rewrite(sender.key, message.supersedes, superseded, route, receipts.withdrawnRowKey(sender.key, message.supersedes, route, target))
      // Kept with the route too, which may outlive the record (`withdrawnBy`) — or, with the route gone (the
      // check followed the replay record), with that record (review revau AU1) — past both while the message
      // may still wait unwritten (`keepWithdrawal`).
      receipts.keepWithdrawal(route ?? routes.find(sender.key, message.supersedes), superseded, waiting, attempt.now, target.key)
      // An ask superseded is withdrawn by its asker, as a cancelled one is: its edge closes (the receiver may
      // ask back; a reply to it is refused as to any ask that is over).
      if ((route ?? routes.find(sender.key, message.supersedes))?.expectsReply === true) forget(messageKey)
    },
    delivered: (attempt, mail, target) => receipts.addRoute(mail, attempt.sender.key, target, attempt.now, attempt.record)
  }
}
