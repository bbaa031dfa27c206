/**
 * Asks and replies (P60–P64) in the send pipeline: a delivered
 * `expectsReply` message opens an ask edge, a `replyTo` is accepted only along
 * an open edge from the target to the replier and closes it, an ask towards a
 * session that waits for the asker is refused, and asks are never queued for
 * an absent session. `cancel_ask` drops the caller's own edge.
 *
 * An edge lives for the broker's ask timeout, or for the timeout its asker
 * announced in the `send` (`ask-timeout-v1`), counted from when the broker
 * received the ask, so a reply the broker reads within that is accepted.
 * (The asker's own wait counts from the acknowledgement, a little later: a
 * reply held up on its way to the broker until just past the deadline is
 * refused while the asker still waits.) A reply that closed it but was lost
 * before it reached the asker (dropped from the mailbox: evicted, expired,
 * cancelled) opens it again until that deadline (`answerLost`).
 *
 * An ask whose copy went back to the mailbox (its recipient's connection
 * closed before it confirmed reading it) is over when its edge is: withdrawn
 * by `cancel_ask`, or expired. The mailbox is told (`askClosed`), and drops
 * that copy rather than ask a question nobody waits for (MailDelivery.ts).
 * The other way round, a copy the mailbox drops before the deadline
 * (evicted, expired there), its asker told `expired`, ends the ask: its
 * edge closes as a withdrawn one's (`askLost`).
 * Such a copy given back past its deadline was reported expired even when
 * the ask had been answered or withdrawn: the edge is gone either way. So
 * a withdrawal before the deadline is remembered (AskWithdrawals.ts), and
 * a reply marks each copy of its ask that may still come back
 * (AnsweredCopies.ts): `withdrawnEarly` and `answeredCopy` tell them from
 * an ask that expired. A copy in the mailbox when the reply is accepted is
 * dropped then, as answered (`askClosed` with the reply). Per reply that
 * costs the bounded scan AnsweredCopies.ts describes and a look-up in the
 * mailbox; nothing per plain message (`replies` returns at once without a
 * `replyTo`). Edges whose asker was granted `ask-expiry-v1` expire on time
 * (AskExpiry.ts).
 *
 * One scale: an ask's life is measured on the broker's stamps
 * (BrokerStamps.ts), never half on the clock — its edge's `deadline` and
 * `openedAt` from its mail's `brokerReceivedAt`, its withdrawals stamped as
 * made (AskWithdrawals.withdrawNow, `withdraw`), so that "withdrawn before
 * the deadline" and "this edge is that copy's" (`askLost`, StaleAsks'
 * by-key memory) hold while the clock reads behind the last stamp (it
 * stepped back; review revbq) — a withdrawal is told from another ask's
 * under its key by the ask it withdrew, not by its stamp
 * (AskWithdrawals.askOf; review revcb item 2, revdc). Only
 * the firing is on the clock: an edge expires at its own due time there
 * (`AskEdge.dueAt`: the clock when the ask was received plus its timeout,
 * `Mail.askDueAt`, stored with both and restored as they are, review
 * revby by1), so an ask sent
 * while the stamps lead the clock still closes at its own timeout (review
 * revbu bu1). A durable supervisor question's edge (Questions.ts) is on the
 * clock throughout.
 *
 * A reply along an open edge, addressed to a live session that is not its
 * asker while the asker has left (by a name a new session now holds), is
 * told so (`Reason.replyAskerLeft`), rather than only that it does not match.
 *
 * This module wires the concern (its frame, stages, hooks and what the
 * Router calls) and owns when an edge opens, closes on a reply, or opens
 * again (`answerLost`, `openStaged`). Which sends the ask stages refuse is
 * AskAdmission.ts's; when an ask counts as withdrawn, and the memory of
 * it, AskWithdrawals.ts's; the edges AskEdges.ts's; which reply answered
 * an ask AnsweredAsks.ts's; the answered copies AnsweredCopies.ts's; the
 * expiry timer AskExpiry.ts's.
 */
import { MAX_ASK_TIMEOUT_MS } from "../protocol/constants.ts"
import { decodeClientFrame, isFrameDecodeError } from "../protocol/decode.ts"
import { ASK_EXPIRY_V1, REPLY_ELSEWHERE_V1 } from "../protocol/features.ts"
import { askRefusal, replyRefusal } from "./AskAdmission.ts"
import { type AskEdge, askDueOf, AskEdges, dueOf } from "./AskEdges.ts"
import { AskExpiry } from "./AskExpiry.ts"
import { AskWithdrawals } from "./AskWithdrawals.ts"
import { AnsweredCopies } from "./AnsweredCopies.ts"
import { AnsweredAsks, type AskIdentity } from "./AnsweredAsks.ts"
import { recordKeyOf } from "./DeliveryRecords.ts"
import * as Encode from "./encode.ts"
import { OutboundRecord } from "./OutboundRecord.ts"
import type { Mail } from "./Peer.ts"
import type { QuestionHold } from "./Questions.ts"
import type { RegistrationHooks } from "./Registration.ts"
import type { FrameHandlers, RouterContext } from "./RouterContext.ts"
import type { SendAttempt, SendStage } from "./SendStage.ts"

/** The asks concern: its `cancel_ask` frame, two send stages (`replies`, `asks`) and edge expiry. */
export class Asks {
  private readonly ctx: RouterContext
  readonly edges: AskEdges

  private readonly withdrawStaged: (senderKey: string, messageId: string) => boolean
  private readonly askClosed: (messageKey: string, now: number, answeredBy?: Mail) => void
  private readonly questionHold: (senderKey: string, messageId: string) => QuestionHold | undefined
  /** The withdrawn asks, and the identities of the asks this run opened (AskWithdrawals.ts). */
  private readonly withdrawals: AskWithdrawals
  /** The edges' expiry on time: the expiry fiber's wake-up and each expired edge's notice (AskExpiry.ts). */
  private readonly expiry: AskExpiry
  /** The reply that answered each recently answered ask (`reply-elsewhere-v1`, AnsweredAsks.ts). */
  readonly answered: AnsweredAsks
  /** The copies of asks answered before their client confirmed them (AnsweredCopies.ts). */
  private readonly copies = new AnsweredCopies()

  /**
   * @param withdrawStaged takes a sender's staged `replace` ask out (ReplaceStaging.withdraw); true when it did.
   * @param askClosed told of an ask withdrawn by `cancel_ask`, whose edge expired, or answered (with the reply
   *   that answered it, `answeredBy`) (MailDelivery.askClosed).
   * @param tellAsker writes an `ask_expired` to a live asker granted `ask-expiry-v1`, else drops it (MailDelivery.tellLive).
   * @param wake wakes the broker's expiry fiber: an edge to tell of opened before it was due to wake.
   * @param answeredWindowMs how long which reply answered an ask is kept (the replay records' retention).
   * @param questionHold how a durable question holds a sender's message id (Questions.holdOf): an ask's edge is
   *   not opened again under its key (`answerLost`, `openStaged`).
   */
  constructor(
    ctx: RouterContext,
    withdrawStaged: (senderKey: string, messageId: string) => boolean,
    askClosed: (messageKey: string, now: number, answeredBy?: Mail) => void,
    tellAsker: (askerKey: string, frame: string) => void = () => undefined,
    wake: () => void = () => undefined,
    answeredWindowMs: number = MAX_ASK_TIMEOUT_MS,
    questionHold: (senderKey: string, messageId: string) => QuestionHold | undefined = () => undefined
  ) {
    this.questionHold = questionHold
    this.ctx = ctx
    this.answered = new AnsweredAsks(answeredWindowMs)
    this.withdrawStaged = withdrawStaged
    this.askClosed = askClosed
    const journal = ctx.journal
    this.edges = new AskEdges(
      journal === undefined
        ? undefined
        : { opened: (edge) => journal.edgeOpened(edge), closed: (messageKey) => journal.edgeClosed(messageKey) }
    )
    this.withdrawals = new AskWithdrawals(ctx, this.edges, this.answered)
    this.expiry = new AskExpiry(this.edges, tellAsker, askClosed, wake)
  }

  readonly frames: FrameHandlers = {
    cancel_ask: {
      handle: (peer, raw) => {
        const frame = decodeClientFrame.cancel_ask(raw)
        if (isFrameDecodeError(frame)) return this.ctx.protocolError(peer, frame.message)
        const session = peer.session
        if (session === undefined) return
        const key = recordKeyOf(session.key, frame.messageId)
        const edge = this.edges.get(key)
        const now = this.ctx.now()
        // Remembered withdrawn too (AskWithdrawals.withdrawNow): a copy of it given back past its deadline did not expire.
        if (edge !== undefined && edge.askerKey === session.key) this.withdrawals.withdrawNow(edge, now)
        // A staged `replace` ask has no edge yet: withdrawn, it never reaches its target.
        else if (edge === undefined && this.withdrawStaged(session.key, frame.messageId)) this.ctx.journal?.mark(peer)
        // Answered already (a reply closed the edge): should that reply be lost, the ask is not reopened.
        else if (edge === undefined && this.answered.has(key)) this.withdrawals.withdrawAnswered(key, now)
        // Its copy waiting in the mailbox, if any, is not asked any more.
        this.askClosed(key, now)
      }
    }
  }

  /**
   * `reply-elsewhere-v1` at a registration: a connection granted it is told
   * of each of its session's asks whose reply went for good to another
   * client instance of the session (`ask_answered_elsewhere`,
   * AnsweredAsks.elsewhereOnReturn) — its client, having read the ask's
   * acknowledgement, will not send it again to be told so. Observed after
   * the mailbox's hooks: a reply its flush gives this connection names it by
   * then, and is not told of. An ask the session withdrew is left out. A
   * takeover notes the connection taken over (AnsweredAsks.tookOver): while
   * its write is in progress, what it holds may come back here.
   */
  readonly hooks: RegistrationHooks = {
    registered: (session, previous, now) => {
      const peer = session.peer
      if (this.answered.size === 0) return
      // Whatever its features: a later taker of this session inherits what the old connection may give back.
      if (previous !== undefined) this.answered.tookOver(peer, previous.peer)
      if (!peer.features.has(REPLY_ELSEWHERE_V1)) return
      this.answered.prune(now)
      const withdrawals = this.withdrawals
      for (const told of this.answered.elsewhereOnReturn(peer, now, (askKey) => withdrawals.has(askKey))) {
        this.ctx.output.enqueue(peer, Encode.askAnsweredElsewhereFrame(told.messageId, told.replyId))
      }
    }
  }

  /**
   * P62: a `replyTo` must follow an open edge from the target to the replier;
   * delivering it, or queueing it for an asker that is away, closes the edge
   * (one answer per ask: a second reply is refused either way).
   */
  readonly replies: SendStage = {
    check: (attempt) => replyRefusal(this.edges, this.ctx.registry, attempt),
    delivered: (attempt, reply) => this.answeredBy(attempt, reply),
    queued: (attempt, reply) => this.answeredBy(attempt, reply)
  }

  /**
   * A reply `attempt` (its mail `reply`) along an open edge was delivered or
   * queued: the edge closes, and which reply answered it is kept
   * (AnsweredAsks.ts). Wherever a copy of the ask may still come back, it
   * is looked for and, found, marked answered (AnsweredCopies.markAnswered:
   * on the replier's connection, on the old connections a takeover's hold
   * for the replier's session waits for, and among what that hold keeps — a
   * bounded scan of each). A copy in the mailbox goes now, as answered
   * (MailDelivery.askClosed).
   */
  private answeredBy(attempt: SendAttempt, reply: Mail): void {
    const key = attempt.replyKey
    if (key === undefined) return
    this.edges.delete(key)
    const edge = reply.answers
    // The edge it closed, kept on its mail (Send.ts): its deadline bounds whom a registration tells.
    const ask = edge === undefined ? undefined : this.withdrawals.askOf(edge)
    this.answered.answered(key, attempt.targetKey, edge === undefined ? attempt.now : dueOf(edge), attempt.record, attempt.now, edge?.openedAt, ask)
    if (edge === undefined) return
    // Wherever a copy of the ask may still come back (AnsweredCopies.markAnswered).
    this.copies.markAnswered(this.ctx.output.holds, attempt.sender, key, reply)
    // A copy back in the mailbox already (a staged reply accepted after its sender left) goes now, as answered.
    this.askClosed(key, attempt.now, reply)
  }

  /** Whether the ask `mail`, whose edge is closed, was withdrawn by its asker before its deadline (AskWithdrawals.withdrawnEarly). */
  withdrawnEarly(mail: Mail): boolean {
    return this.withdrawals.withdrawnEarly(mail)
  }

  /**
   * The reply that answered this very copy of the ask `mail` before its
   * client confirmed it, when that reply was not lost since; else undefined
   * (AnsweredCopies.answeredCopy).
   */
  answeredCopy(mail: Mail): Mail | undefined {
    return this.copies.answeredCopy(mail)
  }

  /** P60, P63: asks go only to a live session that is not waiting for the asker; delivery opens the edge. */
  readonly asks: SendStage = {
    check: (attempt) => askRefusal(this.edges, attempt),
    delivered: (attempt, mail, target) => {
      if (mail.askTimeoutMs === undefined) return
      const edge: AskEdge = {
        messageKey: mail.recordKey,
        messageId: mail.message.id,
        askerKey: attempt.sender.key,
        targetKey: target.key,
        // On the stamps' scale, as the mail's `brokerReceivedAt` (module header, "One scale"); fired on the clock.
        deadline: mail.brokerReceivedAt + mail.askTimeoutMs,
        dueAt: askDueOf(mail, this.ctx.stamps),
        openedAt: mail.brokerReceivedAt,
        notify: attempt.sender.peer.features.has(ASK_EXPIRY_V1) ? true : undefined
      }
      // The ask's identity for its withdrawals (AskWithdrawals.askOf): its edge and every copy of its mail name it.
      const identity: AskIdentity = { askKey: mail.recordKey }
      this.withdrawals.name(mail.message, identity)
      this.withdrawals.name(edge, identity)
      this.expiry.open(edge)
    }
  }

  /**
   * A reply that closed `edge` was lost before it reached its asker (the
   * mailbox evicted it, it expired there, or its sender cancelled it): the ask
   * is unanswered again, so its edge opens again until its own deadline, and
   * the replier, told its reply was lost, can reply again. Not once the
   * deadline has passed, not over an edge opened for that ask meanwhile, not
   * under the key of a durable question its asker took the id for since
   * (asked, waited on or notified: `questionHold`, helper oneid2 — one only
   * asked keeps it closed even if the question fiber then refuses the
   * question, a known limit: docs/protocol.md), and
   * never a durable question's (its answer was saved from the reply, and its
   * edge is the Questions concern's to open and close). Edges opened so are
   * not counted against the bounds: each stands for an edge that was open,
   * and lost replies are bounded by the mailbox.
   *
   * @returns true when the ask stays closed, before its deadline, because
   *   its asker gave its id to such a question: the ask is not asked again
   *   and owes no `expired` now (StaleAsks.replyLost; review revdg DG3).
   */
  answerLost(edge: AskEdge, now: number): boolean {
    if (edge.question === true) return false
    // Not answered (open again, expired or withdrawn): nobody is told it was answered elsewhere (AnsweredAsks).
    this.answered.forget(edge.messageKey)
    // Its ask is unanswered again: a copy of it given back past its deadline expired (`answeredCopy`).
    this.copies.lost(edge)
    if (dueOf(edge) <= now) return false
    // A durable question of its asker's took the id meanwhile (asked, waited on, notified — its edge then is the
    // one open under the key): the edge is the question's to open, and an ask's under its key would replace it or
    // be replaced (helper oneid2). One only asked keeps it closed too, though the fiber may still refuse it: an edge
    // reopened then could outlive the asker's withdrawal or its `expired` (review revdg DG1), a wrong verdict where
    // this is a silent one. Its asker moved the id on before the ask's deadline: told so (review revdg DG3).
    if (this.questionHold(edge.askerKey, edge.messageId) !== undefined) return true
    if (this.edges.get(edge.messageKey) !== undefined) return false
    // Its asker withdrew it after the reply had closed it: it stays closed.
    const ask = this.withdrawals.askOf(edge)
    if (this.withdrawals.withdrawnWithin(edge.messageKey, edge.openedAt ?? Number.NEGATIVE_INFINITY, edge.deadline, ask)) return false
    // A copy: the deadline heap tells an open edge from a closed one's leftover entry by identity. The same ask.
    const again = { ...edge }
    if (ask !== undefined) this.withdrawals.name(again, ask)
    this.expiry.open(again)
    return false
  }

  /** The sender of the message `messageKey` cancelled it (`cancel_message`): see AskWithdrawals.cancelled. */
  cancelled(messageKey: string, now: number): void {
    this.withdrawals.cancelled(messageKey, now)
  }

  /** The mailbox dropped a copy of the ask `messageKey` and told its asker `expired`: see AskWithdrawals.askLost. */
  askLost(messageKey: string, deadline: number, now: number): void {
    this.withdrawals.askLost(messageKey, deadline, now)
  }

  /**
   * A withdrawal the store kept (at startup, oldest first): remembered as it
   * was made, until no ask can outlive it (AskWithdrawals.restore).
   */
  restoreWithdrawn(messageKey: string, at: number, now: number): void {
    this.withdrawals.restore(messageKey, at, now)
  }

  /**
   * A message the store kept (at startup) that is a reply, carrying the edge
   * it closed (`answers`): its ask is known answered again (`answered`), as
   * it was before the restart, so a `cancel_ask` or `cancel_message` of it
   * is remembered (AskWithdrawals.withdrawAnswered) and the reply, lost then, does not
   * open it again (`answerLost`; review revcb item 1). The entry is kept the
   * window from now; the reply's restored record names no client instance
   * until it is routed in this run. Nothing for any other message, for a
   * durable question's reply (its edge is the Questions concern's), or over
   * an edge open under the ask's key.
   */
  restoreAnswered(mail: Mail, now: number): void {
    const edge = mail.answers
    if (edge === undefined || edge.question === true || this.edges.get(edge.messageKey) !== undefined) return
    const id = mail.message.id
    const record = this.ctx.records.table.find(mail.senderKey, id) ?? new OutboundRecord(mail.senderKey, id, undefined)
    this.answered.answered(edge.messageKey, edge.askerKey, dueOf(edge), record, now, edge.openedAt)
  }

  /**
   * A replace-mode ask the store kept while it was staged (at startup): it
   * had no edge yet, since its window's close opens one, so its edge opens
   * now, as that close would have, until the ask's own deadline — unless its
   * asker withdrew it, or the deadline has passed (then it is stale, and the
   * mailbox drops it), or a durable question holds its key (`questionHolds`;
   * at startup only a restored question edge can, which the open edge under
   * the key already stands for: a defence, helper oneid2). One answered before the restart but never confirmed
   * read cannot be told from it, and is asked again (docs/protocol.md).
   */
  openStaged(mail: Mail, now: number): void {
    if (mail.askTimeoutMs === undefined || this.edges.get(mail.recordKey) !== undefined) return
    // Nor under a durable question's key (helper oneid2): see `answerLost`.
    if (this.questionHold(mail.senderKey, mail.message.id) !== undefined) return
    const deadline = mail.brokerReceivedAt + mail.askTimeoutMs
    const dueAt = askDueOf(mail, this.ctx.stamps)
    // Restored: no identity (AskWithdrawals.askOf), judged as every ask restored from the store is, by stamps.
    if (dueAt <= now || this.withdrawals.withdrawnWithin(mail.recordKey, mail.brokerReceivedAt, deadline, undefined)) return
    this.expiry.open({
      messageKey: mail.recordKey,
      messageId: mail.message.id,
      askerKey: mail.senderKey,
      targetKey: mail.targetKey,
      deadline,
      dueAt,
      openedAt: mail.brokerReceivedAt,
      // Whether its asker asked for `ask-expiry-v1` was not stored with the mail: told as if it did, which
      // reaches only a live asker granted it (`tellLive`); a base asker is never written the frame.
      notify: true
    })
  }

  /** When the expiry fiber should next prune (broker clock, ms), else undefined (AskExpiry.nextExpiry). */
  nextExpiry(): number | undefined {
    return this.expiry.nextExpiry()
  }

  /**
   * Is the ask `messageKey` still open at `now`: its edge open, its deadline not passed? With `question`, only an
   * edge of that kind counts: under an id its asker reused for a durable question, the question's edge (its own
   * 30-day deadline) is not the ask's (StaleAsks.replyLost; review revdg3 1).
   */
  isOpen(messageKey: string, now: number, question?: boolean): boolean {
    const edge = this.edges.get(messageKey)
    return edge !== undefined && dueOf(edge) > now && (question === undefined || (edge.question === true) === question)
  }

  /** Closes edges past their deadline (the mailbox told: `askClosed`), and forgets withdrawals no ask can outlive. */
  prune(now: number): void {
    this.expiry.prune(now)
    this.withdrawals.prune(now)
    this.answered.prune(now)
  }
}
