/**
 * Size: about 720 lines, past the ~400 guideline: one concept, the ask edges' lifecycle in the send pipeline; telling
 * an ask that closed early from one that expired (`withdrawnEarly`, `answeredCopy`, which copies a reply marks where,
 * `markHeld`, and which withdrawals count: `withdrawnWithin`, `askOf`) and which reply answered an ask
 * (`answered`, reply-elsewhere-v1, with its registration hook `hooks`, restored with a reply: `restoreAnswered`) grew it,
 * and not opening an edge again under a durable question's key (`questionHold`).
 *
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
 * a withdrawal before the deadline is remembered (`withdrawn`), and a reply
 * accepted while the replier's connection still holds the ask unconfirmed
 * (a client confirming what it handled replies first) marks that copy
 * (`answeredUnconfirmed`), as it does the copy an old connection of the
 * replier's session holds that a takeover by another instance has not
 * closed yet: `withdrawnEarly` and `answeredCopy` tell them from an ask
 * that expired (helpers staleans, fixsa, replyclose). So does it a copy not
 * written yet, or not all: in the replier's outbox or write in progress
 * (given back to its connection at a rejoin, its client having read it on
 * the one it left), in an awaited old connection's write in progress or
 * its untaken rest, or kept by that takeover's hold (helper answerwip). A
 * copy in the mailbox when the reply is accepted is dropped then, as
 * answered (`askClosed` with the reply). Per reply that costs, on the
 * replier's connection and each old one a hold waits for, a scan of at most
 * `ANSWERED_SCAN` items of each of custody, write in progress, untaken
 * rest and (the replier's) outbox — a size check of each that is empty —
 * the same of what the hold keeps (a size check while no hold exists), and
 * a look-up in the mailbox; nothing per plain message (`replies` returns
 * at once without a `replyTo`).
 *
 * An edge whose asker was granted `ask-expiry-v1` (`AskEdge.notify`) is
 * pruned on time, not at the next send: the broker's expiry fiber sleeps
 * until `nextExpiry` (woken through `wake` when such an edge opens with an
 * earlier deadline) and closes the edges due then (`Router.expireAsks`:
 * this module's `prune` alone, whatever else pruned in that millisecond, so
 * an edge that opened already past its deadline cannot stay due); the asker is told (`ask_expired`,
 * through `tellAsker`: on its FIFO outbox, behind any reply accepted before,
 * when it is connected and granted the extension; an asker that is away is
 * not owed it). A `list` from such a client prunes first too (Discovery.ts),
 * so the asker's round trip at its own deadline reads the verdict before the
 * answer (Ask.ts) — and a reply accepted but parked behind its sender's mail
 * to a full outbox, which the answer to that round trip (marked `settle`)
 * is held for (Output.enqueueSettleAnswer, ParkedReplies.ts). Withdrawn or
 * answered edges are deleted, not expired: no notice.
 *
 * One scale: an ask's life is measured on the broker's stamps
 * (BrokerStamps.ts), never half on the clock — its edge's `deadline` and
 * `openedAt` from its mail's `brokerReceivedAt`, its withdrawals stamped as
 * made (`withdraw`), so that "withdrawn before the deadline" and "this edge
 * is that copy's" (`askLost`, StaleAsks' by-key memory) hold while the
 * clock reads behind the last stamp (it stepped back; review revbq) —
 * a withdrawal is told from another ask's under its key by the ask it
 * withdrew, not by its stamp (`askOf`; review revcb item 2, revdc). Only
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
 */
import { isAskTimeoutMs, MAX_ASK_TIMEOUT_MS } from "../protocol/constants.ts"
import { decodeClientFrame, isFrameDecodeError } from "../protocol/decode.ts"
import { DeliveryCode, Reason } from "../protocol/delivery.ts"
import { ASK_EXPIRY_V1, ASK_TIMEOUT_V1, REPLY_ELSEWHERE_V1 } from "../protocol/features.ts"
import type { Message } from "../protocol/frames.ts"
import { type AskEdge, askDueOf, AskEdges, dueOf } from "./AskEdges.ts"
import { AgedMap } from "./AgedMap.ts"
import { AnsweredAsks, type AskIdentity } from "./AnsweredAsks.ts"
import { recordKeyOf } from "./DeliveryRecords.ts"
import * as Encode from "./encode.ts"
import { mailAmong } from "./OutboundItems.ts"
import { OutboundRecord } from "./OutboundRecord.ts"
import type { Mail, Peer } from "./Peer.ts"
import type { QuestionHold } from "./Questions.ts"
import type { RegistrationHooks } from "./Registration.ts"
import type { FrameHandlers, RouterContext } from "./RouterContext.ts"
import type { Refusal, SendAttempt, SendStage } from "./SendStage.ts"

/** Open asks one session may have at once; past it a new ask is refused (`E_TOO_MANY_ASKS`). */
export const MAX_ASKS_PER_SESSION = 1024

/** Open asks the broker keeps at once, overall. */
export const MAX_ASKS = 262_144

/** Withdrawn asks that `Asks` remembers (`withdrawn`); past it the oldest go. */
const MAX_WITHDRAWN = 4096

/** Withdrawals remembered under one key (`Withdrawal.earlier`, the newest included); past it the oldest go. */
const MAX_WITHDRAWN_PER_KEY = 4

/**
 * One remembered withdrawal (`Asks.withdrawn`'s value), tied to the ask it
 * withdrew (`ask`), so that it counts for that ask's copies and no other's.
 */
interface Withdrawal {
  readonly messageKey: string
  /** Its stamp (as the map's entry has it; `earlier` entries have no entry of their own). */
  readonly at: number
  /**
   * The ask it withdrew, as this run opened it (`askOf`); undefined for a withdrawal restored from the
   * store or of an ask restored from it (its edge, or its answer), which this run did not open.
   */
  readonly ask: AskIdentity | undefined
  /**
   * The withdrawal it replaced under its key (an earlier ask's, or an earlier one of the same ask), which a copy of
   * its ask given back later is still judged by (`withdrawnWithin`). Newest first, at most `MAX_WITHDRAWN_PER_KEY`
   * in all (`withdraw` cuts the oldest off); each lives as long as the newest, the map's entry.
   */
  earlier: Withdrawal | undefined
}
/** How many of a replier's oldest unconfirmed items a reply looks through for the ask it answers (`answeredBy`). */
const ANSWERED_SCAN = 64

/** The announced timeout of an ask, undefined when none was announced, or a refusal. */
const announcedTimeout = (attempt: SendAttempt): number | undefined | Refusal => {
  const value = attempt.frame.askTimeoutMs
  if (value === undefined || !attempt.sender.peer.features.has(ASK_TIMEOUT_V1)) return undefined
  if (isAskTimeoutMs(value)) return value
  return { code: DeliveryCode.InvalidMessage, reason: Reason.invalidAskTimeout(MAX_ASK_TIMEOUT_MS) }
}

/**
 * How long an ask stays open: the timeout its asker announced, else the
 * broker's (`askTimeoutMs`); undefined for a message that is not an ask. Only
 * called for a send the `asks` stage let through (the announcement is valid).
 */
export const askTimeoutOf = (attempt: SendAttempt, brokerDefaultMs: number): number | undefined => {
  if (attempt.message.expectsReply !== true) return undefined
  const announced = announcedTimeout(attempt)
  return typeof announced === "number" ? announced : brokerDefaultMs
}

/** The asks concern: its `cancel_ask` frame, two send stages (`replies`, `asks`) and edge expiry. */
export class Asks {
  private readonly ctx: RouterContext
  readonly edges: AskEdges

  private readonly withdrawStaged: (senderKey: string, messageId: string) => boolean
  private readonly askClosed: (messageKey: string, now: number, answeredBy?: Mail) => void
  private readonly tellAsker: (askerKey: string, frame: string) => void
  private readonly wake: () => void
  private readonly questionHold: (senderKey: string, messageId: string) => QuestionHold | undefined
  /** The deadline the expiry fiber sleeps until (`nextExpiry`), undefined while it waits for `wake`. */
  private scheduled: number | undefined = undefined
  /** Told of each expired edge: its asker told when it asked for it, its mailbox copy dropped. */
  private readonly expired = (edge: AskEdge, now: number): void => {
    // Only to a live connection granted the extension (MailDelivery.tellLive): not owed to an asker that is away.
    if (edge.notify === true) this.tellAsker(edge.askerKey, Encode.askExpiredFrame(edge.messageId, now))
    this.askClosed(edge.messageKey, now)
  }
  /**
   * Asks their asker withdrew (`cancel_ask`, `cancel_message`) while the
   * broker knew them open or answered — an edge open before its deadline,
   * or a reply recorded as answering it (`answered`, kept the replay
   * window) — by message key (the value names the key too, so that what the
   * bound pushes out is known), with when, for as long as an ask can last
   * (bounded: MAX_WITHDRAWN). A cancel of an id the broker does not know
   * as such (never sent, not an ask, expired already) adds nothing, so one
   * session cannot push out another's withdrawals but by asks of its own.
   * A withdrawal counts only for the ask it withdrew (`Withdrawal.ask`,
   * `withdrawnWithin`), not for an earlier or later ask under the same id;
   * a later withdrawal under the key keeps the one it replaces behind it
   * (`Withdrawal.earlier`, at most `MAX_WITHDRAWN_PER_KEY` a key, in memory:
   * the store keeps the newest): should its reply be lost, the ask stays
   * withdrawn (`answerLost` does not open it again), and a copy of it given
   * back past its deadline did not expire (`withdrawnEarly`). A durable
   * broker stores them (`StoreJournal.askWithdrawn`, WithdrawnAsks.ts), so
   * a reply restored after a restart and lost then does not reopen its ask.
   */
  private readonly withdrawn = new AgedMap<string, Withdrawal>(MAX_WITHDRAWN)
  /**
   * Each ask this run opened, by its edge and by its message: an identity of
   * its own (`AskIdentity`, its record key only: a withdrawal kept 30 days
   * holds no text, review revdg DG2), which names the ask a withdrawal
   * withdrew (`Withdrawal.ask`). Its
   * stamp could not: stamps hold still while they lead the clock, so asks
   * under one id may share a receipt stamp, and a withdrawal of one may carry
   * the stamp of a later ask's life (review revcb item 2, review revdc DC2,
   * DC3). Keyed by the message, not its `Mail`: every copy of the mail
   * (`{ ...mail }`: given back to the mailbox, MailReturns.requeue; put back,
   * MailDelivery.askAgain; kept or given, WithdrawnCopies) shares it, so each
   * copy is judged as the ask (review revch CH2); an edge opened again
   * (`answerLost`) takes its entry along. Nothing goes on the wire or into the
   * store. Weak: it goes with the ask's objects. An ask restored from the
   * store (its mail, its edge) has none: judged by stamps (`withdrawnWithin`).
   */
  private readonly askOf = new WeakMap<Message | AskEdge, AskIdentity>()
  /** The reply that answered each recently answered ask (`reply-elsewhere-v1`, AnsweredAsks.ts). */
  readonly answered: AnsweredAsks
  /**
   * Asks answered while their message was still held, unconfirmed, on the
   * replier's connection (`answeredBy`), marked on that message's `Mail`
   * object with the reply (which carries the edge it closed): should the connection drop, the
   * copy it gives back past its deadline was answered, not expired
   * (`answeredCopy`). Weak: the mark goes with the object, when its client
   * confirms it or the copy is dropped. Nothing is marked for an ask
   * confirmed before its reply.
   */
  private readonly answeredUnconfirmed = new WeakMap<Mail, Mail>()
  /** Edges closed by a reply that was lost before it reached its asker (`answerLost`): that ask is unanswered again. */
  private readonly lostAnswers = new WeakSet<AskEdge>()

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
    this.tellAsker = tellAsker
    this.wake = wake
    const journal = ctx.journal
    this.edges = new AskEdges(
      journal === undefined
        ? undefined
        : { opened: (edge) => journal.edgeOpened(edge), closed: (messageKey) => journal.edgeClosed(messageKey) }
    )
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
        // Remembered withdrawn too (`withdrawNow`): a copy of it given back past its deadline did not expire.
        if (edge !== undefined && edge.askerKey === session.key) this.withdrawNow(edge, now)
        // A staged `replace` ask has no edge yet: withdrawn, it never reaches its target.
        else if (edge === undefined && this.withdrawStaged(session.key, frame.messageId)) this.ctx.journal?.mark(peer)
        // Answered already (a reply closed the edge): should that reply be lost, the ask is not reopened.
        else if (edge === undefined && this.answered.has(key)) this.withdrawAnswered(key, now)
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
      const withdrawn = this.withdrawn
      for (const told of this.answered.elsewhereOnReturn(peer, now, (askKey) => withdrawn.size > 0 && withdrawn.has(askKey))) {
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
    check: (attempt) => {
      const replyTo = attempt.message.replyTo
      // The ask it answers is the target's own message: keyed by the target and its id (`replyKey`).
      if (replyTo === undefined || attempt.replyKey === undefined) return undefined
      // Edges past their deadline are closed already: every check runs after the send's sweep (Send.prune).
      const edge = this.edges.get(attempt.replyKey)
      if (edge === undefined) {
        if (!this.edges.isAsked(attempt.sender.key, replyTo)) return { code: DeliveryCode.ReplyTarget, reason: Reason.replyNoAsk }
        // Asked that id by someone else: the reply goes to the wrong session — in place of an asker that
        // left, when a live session answers to the name it was sent to (say so, and how to reach the asker).
        const asked = attempt.target === undefined ? undefined : this.edges.soleAsk(attempt.sender.key, replyTo)
        const askerLeft = asked !== undefined && !this.ctx.registry.byKey.has(asked.askerKey)
        return { code: DeliveryCode.ReplyTarget, reason: askerLeft ? Reason.replyAskerLeft : Reason.replyWrongAsk }
      }
      if (edge.askerKey !== attempt.targetKey || edge.targetKey !== attempt.sender.key) {
        return { code: DeliveryCode.ReplyTarget, reason: Reason.replyWrongAsk }
      }
      return undefined
    },
    delivered: (attempt, reply) => this.answeredBy(attempt, reply),
    queued: (attempt, reply) => this.answeredBy(attempt, reply)
  }

  /**
   * A reply `attempt` (its mail `reply`) along an open edge was delivered or
   * queued: the edge closes, and which reply answered it is kept
   * (AnsweredAsks.ts). Wherever a copy of the ask may still come back, it
   * is looked for and, found, marked answered (`answeredUnconfirmed`,
   * `markHeld`): on the replier's connection (its custody: read and
   * answered before its client confirmed it; its outbox or write in
   * progress: given back there at a rejoin after its client read it on the
   * connection it left), on the old connections a takeover's hold for the
   * replier's session waits for (CustodyHolds.awaitedFor), and among what
   * that hold keeps (CustodyHolds.keptFor) — each a size check while empty
   * or while no hold exists. Only the `ANSWERED_SCAN` oldest items of each
   * place are looked at, so a reply costs a bounded scan: an ask deeper in
   * a backlog is not marked, and given back past its deadline it counts as
   * expired, as before. A copy in the mailbox goes now, as answered
   * (MailDelivery.askClosed).
   */
  private answeredBy(attempt: SendAttempt, reply: Mail): void {
    const key = attempt.replyKey
    if (key === undefined) return
    this.edges.delete(key)
    const edge = reply.answers
    // The edge it closed, kept on its mail (Send.ts): its deadline bounds whom a registration tells.
    const ask = edge === undefined ? undefined : this.askOf.get(edge)
    this.answered.answered(key, attempt.targetKey, edge === undefined ? attempt.now : dueOf(edge), attempt.record, attempt.now, edge?.openedAt, ask)
    if (edge === undefined) return
    // Its client read the ask on a connection it left (a rejoin): a copy given back to this one may not be
    // written yet, in its outbox or write in progress.
    this.markHeld(attempt.sender.peer, key, reply, true)
    // Another client instance took the session over and answered: the copy the old connection still holds,
    // given back at its close, was answered too (CustodyHold.ts: a hold waits for that close), as was one
    // the hold keeps (handed over from the old outbox).
    const holds = this.ctx.output.holds
    const old = holds.awaitedFor(attempt.sender.key)
    if (old !== undefined) for (const peer of old) this.markHeld(peer, key, reply, false)
    this.mark(mailAmong(holds.keptFor(attempt.sender.key), key, ANSWERED_SCAN), reply)
    // A copy back in the mailbox already (a staged reply accepted after its sender left) goes now, as answered.
    this.askClosed(key, attempt.now, reply)
  }

  /**
   * Marks the ask `key` answered by `reply` (`answeredUnconfirmed`) where
   * `peer` may still give it back: among the `ANSWERED_SCAN` oldest items
   * of its custody, of its write in progress, of that write's untaken rest
   * and (`outbox`: the replier's own connection; a takeover's old one had
   * its outbox handed over) of its outbox. A size check of each that holds
   * nothing.
   */
  private markHeld(peer: Peer, key: string, reply: Mail, outbox: boolean): void {
    const custody = peer.custody
    if (custody !== undefined && custody.size > 0) this.mark(custody.heldMail(key, ANSWERED_SCAN), reply)
    this.mark(mailAmong(peer.writer.inFlight?.returnable, key, ANSWERED_SCAN), reply)
    this.mark(mailAmong(peer.untakenRest, key, ANSWERED_SCAN), reply)
    if (outbox) this.mark(mailAmong(peer.outbox, key, ANSWERED_SCAN), reply)
  }

  /** Marks the copy `ask`, when found, answered by `reply` (`answeredUnconfirmed`). */
  private mark(ask: Mail | undefined, reply: Mail): void {
    if (ask !== undefined) this.answeredUnconfirmed.set(ask, reply)
  }

  /**
   * Whether the ask `mail`, whose edge is closed, was withdrawn by its asker
   * before its deadline (`withdrawn`): a copy given back so past its deadline
   * goes silently (StaleAsks.drop). A `cancel_ask` or
   * `cancel_message` after the deadline (IntercomSession's wait sends one
   * as it times out), or one made for an earlier ask under the same id, is
   * not such a withdrawal: the ask expired.
   */
  withdrawnEarly(mail: Mail): boolean {
    return mail.askTimeoutMs !== undefined &&
      this.withdrawnWithin(mail.recordKey, mail.brokerReceivedAt, mail.brokerReceivedAt + mail.askTimeoutMs, this.askOf.get(mail.message))
  }

  /**
   * The reply (with the edge it closed, `answers`) that answered this very
   * copy of the ask `mail`, while its client had not confirmed it
   * (`answeredUnconfirmed`), when that
   * reply was not lost since (`answerLost`); else undefined. A copy given back
   * so past its deadline goes silently (StaleAsks.drop, which owes its
   * asker the `expired` after all should that reply be lost later). Not known
   * for a copy answered while it was deeper in a place `answeredBy` scans
   * than `ANSWERED_SCAN`, nor after a restart for one answered before it:
   * such a copy counts as expired.
   */
  answeredCopy(mail: Mail): Mail | undefined {
    const reply = this.answeredUnconfirmed.get(mail)
    return reply?.answers !== undefined && !this.lostAnswers.has(reply.answers) ? reply : undefined
  }

  /**
   * Whether the ask `messageKey` whose message this run opened as `ask`
   * (`askOf`; undefined for an ask restored from the store) was withdrawn at
   * or after `from` and before `until` (its life: see `withdrawn`). Only a
   * withdrawal of that very ask counts (`Withdrawal.ask`): never one of an
   * earlier or a later ask under the same id, whatever its stamp. Withdrawals
   * of asks this run did not open (restored, or of a restored edge or
   * answer) count, by their stamps alone, only for such an ask. Each
   * withdrawal kept under the key is looked at (`Withdrawal.earlier`, newest
   * first, at most `MAX_WITHDRAWN_PER_KEY`). Give-back and lost-reply paths only.
   */
  private withdrawnWithin(messageKey: string, from: number, until: number, ask: AskIdentity | undefined): boolean {
    if (this.withdrawn.size === 0) return false
    for (let withdrawal = this.withdrawn.get(messageKey); withdrawal !== undefined; withdrawal = withdrawal.earlier) {
      if (withdrawal.ask === ask && from <= withdrawal.at && withdrawal.at < until) return true
    }
    return false
  }

  /** P60, P63: asks go only to a live session that is not waiting for the asker; delivery opens the edge. */
  readonly asks: SendStage = {
    check: (attempt) => {
      if (attempt.message.expectsReply !== true) return undefined
      if (attempt.target === undefined) {
        return { code: DeliveryCode.TargetDisconnected, reason: Reason.targetDisconnected }
      }
      if (this.edges.isWaiting(attempt.target.key, attempt.sender.key, attempt.replyKey)) {
        return { code: DeliveryCode.MutualAsk, reason: Reason.mutualAsk }
      }
      // Edges are state the broker keeps for a long time: bounded per asker and overall.
      if (this.edges.openOf(attempt.sender.key) >= MAX_ASKS_PER_SESSION) {
        return { code: DeliveryCode.TooManyAsks, reason: Reason.tooManyAsks(MAX_ASKS_PER_SESSION) }
      }
      if (this.edges.size >= MAX_ASKS) return { code: DeliveryCode.TooManyAsks, reason: Reason.tooManyAsksOverall }
      const timeout = announcedTimeout(attempt)
      return typeof timeout === "object" ? timeout : undefined
    },
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
      // The ask's identity for its withdrawals (`askOf`): its edge and every copy of its mail name it.
      const identity: AskIdentity = { askKey: mail.recordKey }
      this.askOf.set(mail.message, identity)
      this.askOf.set(edge, identity)
      this.open(edge)
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
    this.lostAnswers.add(edge)
    if (dueOf(edge) <= now) return false
    // A durable question of its asker's took the id meanwhile (asked, waited on, notified — its edge then is the
    // one open under the key): the edge is the question's to open, and an ask's under its key would replace it or
    // be replaced (helper oneid2). One only asked keeps it closed too, though the fiber may still refuse it: an edge
    // reopened then could outlive the asker's withdrawal or its `expired` (review revdg DG1), a wrong verdict where
    // this is a silent one. Its asker moved the id on before the ask's deadline: told so (review revdg DG3).
    if (this.questionHold(edge.askerKey, edge.messageId) !== undefined) return true
    if (this.edges.get(edge.messageKey) !== undefined) return false
    // Its asker withdrew it after the reply had closed it: it stays closed.
    const ask = this.askOf.get(edge)
    if (this.withdrawnWithin(edge.messageKey, edge.openedAt ?? Number.NEGATIVE_INFINITY, edge.deadline, ask)) return false
    // A copy: the deadline heap tells an open edge from a closed one's leftover entry by identity. The same ask.
    const again = { ...edge }
    if (ask !== undefined) this.askOf.set(again, ask)
    this.open(again)
    return false
  }

  /**
   * The sender of the message `messageKey` cancelled it (`cancel_message`):
   * an ask's edge closes, and the ask is remembered as withdrawn as by
   * `cancel_ask` (see `withdrawn`), also when a reply closed its edge
   * already; the cancel of anything else leaves nothing here.
   */
  cancelled(messageKey: string, now: number): void {
    const edge = this.edges.get(messageKey)
    if (edge !== undefined) this.withdrawNow(edge, now)
    else if (this.answered.has(messageKey)) this.withdrawAnswered(messageKey, now)
  }

  /**
   * The mailbox dropped a copy of the ask `messageKey` (evicted, expired
   * there, or for a short-lived recipient that ended) and told its asker
   * with an `expired` receipt: the question will not be asked, so the ask
   * ends, its edge closed and remembered as withdrawn (a copy of it that
   * comes back later goes silently: the asker was told already). Nothing
   * when no edge is open under the key, or past its deadline: that ask
   * expired, and the sweep closes its edge, telling its asker (`expired`);
   * nor when the edge open under the key is not that copy's — its
   * `deadline` (the copy's receipt plus its timeout) another: an ask that
   * reused the id past the replay window (review revae AE1). Never a
   * durable question's edge: its notification is a frame, not mail, so no
   * lost copy is ever its. A child is refused a question under the id of
   * its ask still open or staged, or of any message P46's record still
   * names (Questions.ts, helpers askqkey and oneid2, review revcf R1), so
   * the two share a key only once the ask's edge has closed and its record
   * gone while a copy of it is still out (one its recipient read and did not
   * confirm, given back later). The guard matters there only if the copy's
   * deadline (its receipt stamp plus its timeout) equals the question's (the
   * clock at its notification plus MAX_ASK_TIMEOUT_MS), which takes the
   * stamps having led the clock at the ask's receipt by at least
   * MAX_ASK_TIMEOUT_MS less the ask's own timeout (a clock set back that
   * far). test/broker/ask-lost-question-guard.test.ts builds that world on
   * the TestClock (review revcf R5: it fails without the guard).
   */
  askLost(messageKey: string, deadline: number, now: number): void {
    const edge = this.edges.get(messageKey)
    if (edge === undefined || edge.question === true) return
    if (edge.deadline === deadline && dueOf(edge) > now) this.withdrawNow(edge, now)
  }

  /**
   * Its asker withdraws the ask of the open `edge`: the edge closes, and the
   * ask is remembered as withdrawn unless its deadline has passed (it
   * expired: a copy of it given back after that owes its asker `expired`).
   * Stamped now, but never below the ask's receipt (`openedAt`): an ask
   * restored from a store whose stamps were past the capped floor
   * (Router.restore) was received above every stamp this run gives for a
   * while, and its withdrawal must fall within its life (`withdrawnWithin`).
   */
  private withdrawNow(edge: AskEdge, now: number): void {
    this.edges.delete(edge.messageKey)
    if (dueOf(edge) <= now) return
    const stamp = this.ctx.stamps.at(now)
    this.withdraw(edge.messageKey, edge.openedAt !== undefined && edge.openedAt > stamp ? edge.openedAt : stamp, this.askOf.get(edge))
  }

  /**
   * The answered ask `messageKey` (its edge closed by a reply) withdrawn at
   * `now`, unless that ask (`AnsweredAsks.askOf`; by stamps alone for one
   * restored from the store) already was within the replay window: its
   * earliest withdrawal stands, so a second cancel after its deadline does
   * not move the time out of the ask's life (`withdrawnWithin`; review revs
   * S3). Never stamped below the ask's receipt, as `withdrawNow`.
   */
  private withdrawAnswered(messageKey: string, now: number): void {
    const at = this.ctx.stamps.at(now)
    const openedAt = this.answered.openedAtOf(messageKey)
    const stamp = openedAt !== undefined && openedAt > at ? openedAt : at
    const ask = this.answered.askOf(messageKey)
    if (!this.withdrawnWithin(messageKey, stamp - this.answered.windowMs, stamp + 1, ask)) this.withdraw(messageKey, stamp, ask)
  }

  /**
   * Remembers the ask `messageKey`, whose message this run opened as `ask` (`askOf`), as withdrawn at `stamp`
   * (see `withdrawn`; a stamp, on its mail's `brokerReceivedAt` scale), in the store too when there is one.
   */
  private withdraw(messageKey: string, stamp: number, ask: AskIdentity | undefined): void {
    // The one it replaces (an earlier ask's, task stamps4 item 3) stays behind it, for a copy of that ask.
    const earlier = this.withdrawn.size === 0 ? undefined : this.withdrawn.get(messageKey)
    if (earlier !== undefined) {
      let last = earlier
      for (let kept = 2; last.earlier !== undefined && kept < MAX_WITHDRAWN_PER_KEY; kept++) last = last.earlier
      last.earlier = undefined
    }
    const evicted = this.withdrawn.set(messageKey, { messageKey, at: stamp, ask, earlier }, stamp)
    const journal = this.ctx.journal
    if (journal === undefined) return
    journal.askWithdrawn(messageKey, stamp)
    for (const gone of evicted) journal.withdrawalGone(gone.messageKey)
  }

  /**
   * A withdrawal the store kept (at startup, oldest first): remembered as
   * it was made, until no ask can outlive it. One the bound pushes out
   * leaves the store too.
   */
  restoreWithdrawn(messageKey: string, at: number, now: number): void {
    if (at <= now - MAX_ASK_TIMEOUT_MS) return
    const evicted = this.withdrawn.set(messageKey, { messageKey, at, ask: undefined, earlier: undefined }, at)
    for (const gone of evicted) this.ctx.journal?.withdrawalGone(gone.messageKey)
  }

  /**
   * A message the store kept (at startup) that is a reply, carrying the edge
   * it closed (`answers`): its ask is known answered again (`answered`), as
   * it was before the restart, so a `cancel_ask` or `cancel_message` of it
   * is remembered (`withdrawAnswered`) and the reply, lost then, does not
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
    // Restored: no identity (`askOf`), judged as every ask restored from the store is, by stamps.
    if (dueAt <= now || this.withdrawnWithin(mail.recordKey, mail.brokerReceivedAt, deadline, undefined)) return
    this.open({
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

  /** Opens `edge`, waking the expiry fiber when its asker is to be told and it is due before the fiber wakes. */
  private open(edge: AskEdge): void {
    this.edges.open(edge)
    if (edge.notify === true && (this.scheduled === undefined || dueOf(edge) < this.scheduled)) {
      this.scheduled = dueOf(edge)
      this.wake()
    }
  }

  /**
   * When the expiry fiber should next prune (broker clock, ms): the earliest
   * deadline while an edge whose asker is told is open, else undefined (it
   * waits for `wake`). Edges nobody is told of expire at the next send, as
   * they always did.
   */
  nextExpiry(): number | undefined {
    this.scheduled = this.edges.notifyingCount > 0 ? this.edges.nextDeadline() : undefined
    return this.scheduled
  }

  /** Is the ask `messageKey` still open at `now`: its edge open, its deadline not passed? */
  isOpen(messageKey: string, now: number): boolean {
    const edge = this.edges.get(messageKey)
    return edge !== undefined && dueOf(edge) > now
  }

  /** Closes edges past their deadline (the mailbox told: `askClosed`), and forgets withdrawals no ask can outlive. */
  prune(now: number): void {
    this.edges.prune(now, this.expired)
    if (this.withdrawn.size > 0) this.withdrawn.expire(now - MAX_ASK_TIMEOUT_MS)
    this.answered.prune(now)
  }
}
