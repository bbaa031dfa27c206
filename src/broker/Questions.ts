/**
 * Size: one concept, about 955 lines, past the ~400 guideline — the Router's side of durable questions (its six
 * frames, the send stages that turn a reply into an answer, size it as one and refuse a send under a question's id, the small
 * tables below with their per-sender count (`liveBy`), and their hand-over on a takeover and release on a leave, indexed by session key); the SQL side is
 * QuestionWorker.ts and QuestionStore, a new question's notification and size check QuestionSize.ts (helper qs). The tables, the stages and the takeover hand-over read and write the same
 * waiters and notices in one synchronous pass (a refused answer's `reopen` too), so they stay together; the frame handlers are the part to split out.
 *
 * Durable supervisor questions on the Router's side (extension
 * `questions-v1`, C-SUP-18, C-DQ): the synchronous half of the concern. It
 * never runs SQL: each question frame becomes a `QuestionWork` item offered
 * to the broker's question fiber (QuestionWorker.ts), which uses the
 * QuestionStore and then calls back here, between two yields, to change
 * routing state and write frames.
 *
 * What it owns, all live state of this broker process:
 *
 * - `waiters`: the child session waiting on each question right now (set
 *   when its `question_ask` was saved, gone when the session leaves);
 * - `notices`: the questions whose supervisor has been notified through this
 *   broker, by the record key of the child's question — the open ask edge that
 *   lets the supervisor's ordinary `reply` through (with no ordinary ask
 *   timeout: the edge is opened for MAX_ASK_TIMEOUT_MS, C-DQ-16), and what
 *   turns that reply into the same durable answer (C-DQ-7);
 * - `edgeKeys`: the keys of every open question edge by its question id, so a question settled by id closes each
 *   of its edges — one restored at a durable start, which no waiter names, and one under another session key of its
 *   child (back in another group after a restart, asking again) — not only its waiter's;
 * - `present`: the live sessions granted `questions-v1` by id, to tell a child
 *   that is away (revival, C-DQ-10) from one that is reconnecting;
 * - `replying`: questions whose live reply is on its way to the store, so a
 *   supervisor that reconnects meanwhile is not asked them again;
 * - `asking`: questions asked (`question_ask` queued for the fiber) and not
 *   handled yet, by the record key of the child's question;
 * - `liveBy`: per session key, how many entries of `asking`, `waiters` and
 *   open question edges it has — the send stage's gate.
 *
 * A question id is a message id of its child (its notification is a message
 * from the child under it), and a question's edge is keyed as the child's
 * ordinary ask under that id would be: one id for both would have the edge
 * opened last replace the other's, and the supervisor's client drops a
 * second message from the child under one id as one it has had (P50). So the
 * child is refused the second use (helpers askqkey, oneid2): a
 * `question_ask` under the id of its ordinary ask still open, or accepted
 * and `replace`-staged (no edge until its window closes;
 * ReplaceStaging.stagedAsk, review revcf R1), or of any message it sent that
 * P46's record of it still names (`sentUnder`), fails `QuestionIdTaken`; a
 * send (an ask, a plain message or a reply) under the id of a question it
 * asked (`asking`), waits on (`waiters`) or whose edge is open (restored at a
 * durable broker's start before the child asks again; review revcf R4) fails
 * `E_MESSAGE_ID_REUSE` in this concern's send stage. Its cost on the send
 * path: one size check per send while no question is asked, waited on or has
 * an edge open, else one lookup of the sender's key in `liveBy` (its count of
 * those); only a sender with one builds the message's record key (review
 * revdb DB1). The send stage reads live state only, the question's
 * check live state and P46's records: once both are over its id is free
 * again (docs/protocol.md). Asks.ts reads `holdOf` too: an ask's edge is
 * never opened again under a question's key — also while the question is
 * only asked, even if the fiber then refuses it (a known limit,
 * docs/protocol.md).
 *
 * Waiters and notices are indexed by the session key of the child and of the
 * supervisor, so a session leaving touches only its own entries. A takeover
 * of an id (P16) hands that session's entries to the new session (one that is
 * not granted `questions-v1` drops them, as if the old one left).
 *
 * A reply carrying `replyError` (a recipient-turn failure) is not an answer
 * (C-DQ-8): the edge is opened again and the question keeps waiting. Any
 * other reply from the supervisor notified is the answer, so the send stage
 * sizes it as one before it is delivered (C-BRK-3, helper qsize): against
 * the room the question leaves (QuestionWorker.answerRoom, kept with the
 * notice), refused `E_MESSAGE_TOO_LARGE` with nothing delivered or saved.
 * The supervisor is known by its session key, not its connection's session (a staged reply is delivered with the
 * session it was staged from). A reply along a question's edge with no notice here (the supervisor back before it is
 * notified again, a durable restart) could be neither sized nor saved: refused, retryable (`unnotified`), while its
 * id has a live `questions-v1` session under its key (`present`); else that session can neither be notified again nor
 * answer by id (review revfixqs2 D1), so the reply is delivered at once, in its sender's order, and its answer queued
 * to the fiber from the same `delivered` hook as a notified supervisor's (`unnotifiedAnswer`, qbase2). A reply queued
 * in the mailbox of a child away (only along an edge restored at a durable start) is the answer too, from the
 * `queued` hook (task qqueued): the mailbox's later delivery runs no send stage, and the reply may expire there. Either
 * way the reply's write and the answer's save are not ordered (durable: two stores' commits): a crash between them
 * leaves the answer saved and the reply unwritten, or the reply delivered and the question `awaiting_input`, as a store
 * failure (logged) does (review rvq2, suspicion 1).
 *
 * A question is size-checked before it is queued (C-BRK-3, helper qnotify;
 * the check is QuestionSize.questionTooLarge): its notification with every extension field it carries, by the send
 * pipeline's check (RecipientFrames.fitsFrame), and the frames a
 * one-character answer makes of it (QuestionWorker.answerTooLarge: its
 * receipt, a `question_get` or re-ask `question_result`, to the longest
 * request id), so a saved question always takes a short answer (helper
 * fixqa, review revqanswer #1). The ask carries the child's name and SessionInfo as they were measured, and the
 * fiber saves that name and sends that SessionInfo in the first notification, so a `presence` between the ask and
 * the save cannot take either frame past the bound (helper qs). Either over 1 MiB is
 * carried with the queued ask (`tooLarge`), and the question fiber refuses
 * it `QuestionTooLarge`, nothing saved, when the store does not hold its id;
 * before, it was saved and answered, and the writer's guard dropped the
 * frame. A re-ask of a saved question (C-DQ-6) is answered from the saved
 * record, whatever it weighs now (helper fixqn): refused here, a child back
 * on longer session fields was told "Nothing was saved" and never got its
 * answer (review revqnotify D1).
 */
import { Queue } from "effect"
import { MAX_ASK_TIMEOUT_MS, MAX_FRAME_BYTES } from "../protocol/constants.ts"
import { decodeClientFrame, isFrameDecodeError } from "../protocol/decode.ts"
import { DeliveryCode, Reason } from "../protocol/delivery.ts"
import { QUESTIONS_V1, SUPERVISOR_V1 } from "../protocol/features.ts"
import { QUESTION_ID_PATTERN } from "../protocol/questions.ts"
import type { PageRequest, QuestionReason, QuestionRecord } from "../store/questionModel.ts"
import { checkPage } from "../store/questionModel.ts"
import { answerOverRoom, answerRoom, roomLeft, shorterAnswer } from "./QuestionWorker.ts"
import { childNameOf, notificationOf, questionTooLarge, type QuestionTooLarge } from "./QuestionSize.ts"
import { messageFrameFor } from "./RecipientFrames.ts"
import { type AskEdges, dueOf } from "./AskEdges.ts"
import { replyErrorOf } from "./ReplyErrors.ts"
import { recordKeyOf } from "./DeliveryRecords.ts"
import { SetIndex } from "./Indexes.ts"
import type { Mail } from "./Peer.ts"
import type { RegistrationHooks } from "./Registration.ts"
import type { Session } from "./Registry.ts"
import type { FrameHandlers, RouterContext } from "./RouterContext.ts"
import type { Refusal, SendAttempt, SendStage } from "./SendStage.ts"

/**
 * One piece of question work for the question fiber, in arrival order.
 *
 * @category models
 * @since 0.1.0
 */
export type QuestionWork =
  | {
    readonly _tag: "Ask"
    readonly session: Session
    readonly requestId: string
    readonly questionId: string
    readonly reason: QuestionReason
    readonly text: string
    readonly ownerId: string
    readonly at: number
    /**
     * The child's name (or id) and SessionInfo JSON as it asked: what `questionTooLarge` measured, so what the fiber saves
     * (`childName`) and the first notification carries (`fromJson`), whatever a `presence` renamed meanwhile.
     */
    readonly childName: string
    readonly fromJson: string
    /**
     * Why the question would not fit a frame as a new one (`QuestionSize.questionTooLarge`), or undefined. The fiber refuses it
     * only when the store does not hold its id: a re-ask of a saved question (C-DQ-6) is answered from the saved
     * record, whatever its text or the session's fields now.
     */
    readonly tooLarge: QuestionTooLarge | undefined
  }
  | { readonly _tag: "Received"; readonly session: Session; readonly questionId: string; readonly at: number }
  | {
    readonly _tag: "Answer"
    /** Who answered; undefined for a live reply (nobody waits for a result). */
    readonly session: Session | undefined
    readonly requestId: string | undefined
    readonly questionId: string
    readonly ownerId: string
    readonly text: string
    readonly at: number
    /**
     * The notice a `question_answer` closed when it arrived (so no live reply races it), or undefined: the fiber
     * opens it again (`reopen`) when it refuses the answer and the question still waits.
     */
    readonly closed: QuestionNotice | undefined
    /**
     * Sized as the answer already, by the send stage against the room kept with the notice (`replyTooLarge`: a
     * notified supervisor's live reply); else the fiber sizes it against the saved question before it saves it
     * (a `question_answer`, or a reply with no notice here, `unnotifiedAnswer`).
     */
    readonly sized: boolean
  }
  | {
    readonly _tag: "Stop"
    readonly session: Session
    readonly requestId: string
    readonly questionId: string
    /** The owner the caller acts for, or the caller itself (the asking child may cancel its own question). */
    readonly by: string
    readonly at: number
  }
  | { readonly _tag: "List"; readonly session: Session; readonly requestId: string; readonly ownerId: string; readonly page: PageRequest }
  | {
    readonly _tag: "Get"
    readonly session: Session
    readonly requestId: string
    readonly questionId: string
    readonly ownerId: string
  }
  | { readonly _tag: "SupervisorBack"; readonly session: Session }

/**
 * A bound child's supervisor: its session id and registry key.
 *
 * @category models
 * @since 0.1.0
 */
export interface SupervisorRef {
  readonly id: string
  readonly key: string
}

/**
 * A notified question: who asked, who was notified — what keeps its edge open for the supervisor's reply.
 *
 * @category models
 * @since 0.1.0
 */
export interface QuestionNotice {
  readonly questionId: string
  readonly ownerId: string
  readonly child: Session
  readonly supervisor: Session
  /** The supervisor connection that was sent the notification: notified once per connection. */
  readonly sentTo: Session["peer"]
  /**
   * How many bytes, as JSON text, the question leaves its answer (QuestionWorker.answerRoom): the send stage refuses
   * a live reply longer than that before it is delivered or saved (helper qsize).
   */
  readonly room: number
}

/**
 * How a durable question holds its child's message id (`Questions.holdOf`): `asked` while its `question_ask` is
 * queued for the question fiber and nothing else holds the id (the fiber may still refuse it), `taken` once its
 * child waits on it or its edge is open.
 *
 * @category models
 * @since 0.1.0
 */
export type QuestionHold = "asked" | "taken"

/** The refusals of question requests made before any work is queued. */
export const QuestionText = {
  notChild:
    "Only a delegated child bound to its supervisor (supervisor-v1 with a capability) can ask a durable question",
  badId: "Invalid question: the question id must match [A-Za-z0-9_-]+",
  emptyText: "Invalid question: the question text is empty",
  childOwner: "A delegated child cannot act for a supervisor: answer, list and stop belong to the supervisor session",
  /** `QuestionIdTaken` for a question under the id of its child's ordinary ask still open (to `target`, a session id). */
  idOfAsk: (questionId: string, target: string) =>
    `Question id "${questionId}" is the id of an ask this session sent to ${target}, still open; message ids (a question's too) must be unique per sender. Ask the question with a new id`,
  /** `QuestionIdTaken` for a question under the id of a message its child sent (to `target`, a session id) that P46's record still names. */
  idOfMessage: (questionId: string, target: string) =>
    `Question id "${questionId}" is the id of a message this session sent to ${target}; message ids (a question's too) must be unique per sender, and a recipient drops a second message under one id as one it has had. Ask the question with a new id`,
  /**
   * `E_MESSAGE_TOO_LARGE` for the supervisor's live reply to question `questionId`: saved as its answer, it would make
   * a frame of `bytes` bytes; the question leaves `room` bytes (as JSON text) for an answer, or none (`room` not
   * above 0: `QuestionWorker.roomLeft`, `shorterAnswer`, worded as `AnswerTooLarge`).
   */
  replyTooLarge: (questionId: string, bytes: number, room: number) =>
    `Reply is too large to answer durable question ${questionId}: saved as its answer, it would make a frame of ${bytes} bytes (the question and the answer whole, as a later question_get or an answer receipt carries them), over the ${MAX_FRAME_BYTES}-byte frame limit; ${
      roomLeft(questionId, room)
    }. Nothing was delivered or saved, and the question still waits; ${shorterAnswer(questionId, room, "reply")}`,
  /**
   * `E_DELIVERY_FAILED` (retryable: not recorded) for the supervisor's reply along the open edge of question
   * `questionId` while this broker holds no notice for it — the supervisor registered again, or the broker restarted,
   * since it was notified — so the reply could be neither sized nor saved as the answer (`Questions.unnotified`).
   */
  replyUnnotified: (questionId: string) =>
    `Reply to durable question ${questionId} cannot be taken yet: the broker has not notified this session of it since it registered again or the broker restarted, so it cannot save the reply as the answer. Nothing was delivered or saved, and the question still waits. Send the reply again once the question is notified again (under a new message id if this came as a replace-staged reply's receipt: its id keeps this outcome), or answer it with question_answer`
} as const

/**
 * The durable question `mail` answered, if it is a supervisor's reply that `Questions.stage` took as one when it was
 * delivered or queued (`replySent`): a reply along a question's edge (`Mail.answers`, restored with the mail after a
 * durable restart) from the supervisor the question was asked of, with no `replyError` (C-DQ-8: not an answer).
 * Such a reply, queued for its child away or delivered, cannot be withdrawn by its sender: its answer was saved from
 * it (tasks fixq2, fixq3, `Cancels`). Read on the cancel path, and as a route is kept (`Receipts.addRoute` marks the
 * route of such a reply: one field read for any other mail).
 *
 * @category questions
 * @since 0.1.0
 */
export const questionAnsweredBy = (mail: Mail): string | undefined => {
  const edge = mail.answers
  return edge?.question === true && edge.targetKey === mail.senderKey && mail.replyError === undefined
    ? edge.messageId
    : undefined
}

/** The question concern's Router half; see the module header. */
export class Questions {
  private readonly ctx: RouterContext
  private readonly edges: AskEdges
  private readonly work: Queue.Queue<QuestionWork>
  /** The supervisor a bound child was admitted with (Supervisor.ts), undefined for anyone else. */
  private readonly supervisorOf: (session: Session) => SupervisorRef | undefined
  /** The recipient key of a sender's `replace`-staged ask under a message id (ReplaceStaging.stagedAsk), if one is. */
  private readonly stagedAskTo: (senderKey: string, messageId: string) => string | undefined
  private readonly waiters = new Map<string, Session>()
  /** Question ids of `waiters` by the waiting session's key. */
  private readonly waitingBy = new SetIndex<string, string>()
  private readonly notices = new Map<string, QuestionNotice>()
  /** Record keys of `notices` by the notified supervisor's session key. */
  private readonly noticesTo = new SetIndex<string, string>()
  private readonly present = new Map<string, Session>()
  private readonly replying = new Set<string>()
  /** Record keys of questions asked and not handled yet by the fiber (`asked`), with how many `question_ask`s each. */
  private readonly asking = new Map<string, number>()
  /**
   * By sender key: how many entries of `asking` (one per key, not per `question_ask`), of `waiters` and open
   * question edges (AskEdges.watchQuestions) it has; no entry at 0. A send whose sender has none holds no question's
   * id: the send stage's one lookup (review revdb DB1).
   */
  private readonly liveBy = new Map<string, number>()
  /**
   * The keys of the open question edges by their question id (AskEdges.watchQuestions): how a question settled by id
   * finds every edge to close — one restored at a durable broker's start, which no waiter names (helper fixqs3), and
   * one under another session key of its child, which asked again from another group after a restart (review rrsq
   * probe 2: one key per id kept the newest only, and the other edge stayed open, and stored, for its 30 days).
   */
  private readonly edgeKeys = new SetIndex<string, string>()
  /**
   * The broker's own shutdown has begun (`brokerStopping`): a session its closing connections end keeps its questions'
   * edges open, so the store's last commit keeps them as a crash does (review rvw72 probe 1).
   */
  private stopping = false

  constructor(
    ctx: RouterContext,
    edges: AskEdges,
    work: Queue.Queue<QuestionWork>,
    supervisorOf: (session: Session) => SupervisorRef | undefined,
    stagedAskTo: (senderKey: string, messageId: string) => string | undefined
  ) {
    this.ctx = ctx
    this.edges = edges
    this.work = work
    this.supervisorOf = supervisorOf
    this.stagedAskTo = stagedAskTo
    edges.watchQuestions((edge, delta) => {
      this.count(edge.askerKey, delta)
      if (delta > 0) this.edgeKeys.add(edge.messageId, edge.messageKey)
      else this.edgeKeys.delete(edge.messageId, edge.messageKey)
    })
  }

  readonly frames: FrameHandlers = {
    question_ask: { handle: (peer, raw) => this.guard(peer, raw, (session) => this.onAsk(session, raw)) },
    question_received: { handle: (peer, raw) => this.guard(peer, raw, (session) => this.onReceived(session, raw)) },
    question_answer: { handle: (peer, raw) => this.guard(peer, raw, (session) => this.onAnswer(session, raw)) },
    question_stop: { handle: (peer, raw) => this.guard(peer, raw, (session) => this.onStop(session, raw)) },
    question_list: { handle: (peer, raw) => this.guard(peer, raw, (session) => this.onList(session, raw)) },
    question_get: { handle: (peer, raw) => this.guard(peer, raw, (session) => this.onGet(session, raw)) }
  }

  readonly hooks: RegistrationHooks = {
    registered: (session, previous) => {
      const features = session.peer.features
      if (previous !== undefined) {
        if (features.has(QUESTIONS_V1)) this.handOver(previous, session)
        else this.drop(previous)
      }
      if (!features.has(QUESTIONS_V1)) return
      this.present.set(session.id, session)
      // A supervisor (back): its unresolved questions are notified again (C-DQ-6).
      if (features.has(SUPERVISOR_V1) && this.supervisorOf(session) === undefined) this.offer({ _tag: "SupervisorBack", session })
    },
    left: (session) => this.drop(session)
  }

  /**
   * The live path (C-DQ-7, C-DQ-8): a supervisor's reply to a notified
   * question is its durable answer, delivered or queued for its child away
   * (`replySent`). Runs after the asks stage closed the reply's edge. (A reply to a question whose child left finds no edge and is
   * refused as any late reply; the notification says how to answer instead.)
   */
  readonly stage: SendStage = {
    // Any send under the id of a question its sender asked or waits on (module header): an ask's edge would
    // replace the question's, and any message would be a second one from the child under the notification's id.
    // A sender with no question live (`liveBy`) holds no id: one lookup by its key, no record key built.
    // (The size of a reply that would be an answer is `replySize`'s, after every other stage.)
    check: (attempt) => {
      const sender = attempt.sender.key
      if (this.liveBy.size === 0 || !this.liveBy.has(sender)) return undefined
      const id = attempt.message.id
      return this.holds(sender, id) ? { code: DeliveryCode.MessageIdReuse, reason: Reason.messageIdOfQuestion(id) } : undefined
    },
    delivered: (attempt, mail) => this.replySent(attempt, mail),
    // A reply queued for its child away (P49) settles its question as one delivered does (task qqueued): the
    // mailbox's later delivery runs no send stage, and the reply may expire there undelivered.
    queued: (attempt, mail) => this.replySent(attempt, mail)
  }

  /**
   * A reply `attempt` (its mail `mail`) was delivered to its recipient or queued in its mailbox (`stage`): when it
   * answers a durable question — along a notified question's edge from the supervisor notified, or along an edge with
   * no notice here (`unnotifiedAnswer`) — its answer is queued to the question fiber.
   */
  private replySent(attempt: SendAttempt, mail: Mail): void {
    const key = attempt.replyKey
    if (key === undefined) return
    const notice = this.notices.size === 0 ? undefined : this.notices.get(key)
    if (notice === undefined) {
      this.unnotifiedAnswer(attempt, mail)
      return
    }
    // The supervisor by its key: a `replace`-staged reply is delivered with the attempt it was staged with, whose
    // session a takeover may have replaced meanwhile (review revqs 4).
    if (notice.supervisor.key !== attempt.sender.key) return
    if (mail.replyError !== undefined) {
      // C-DQ-8: a failed turn is not an answer; the question keeps waiting on a fresh edge.
      this.openEdge(notice, attempt.now)
      return
    }
    this.deleteNotice(key)
    // Until the fiber has saved it, a supervisor notified again is not asked this question.
    this.replying.add(notice.questionId)
    this.offer({
      _tag: "Answer",
      session: undefined,
      requestId: undefined,
      questionId: notice.questionId,
      ownerId: notice.ownerId,
      text: mail.message.content.text,
      at: attempt.now,
      closed: undefined,
      sized: true
    })
  }

  /**
   * A reply delivered or queued along a durable question's edge (the one it closed, `Mail.answers`) with no notice
   * here: only a reply `replySize` let through, from a supervisor id with no live `questions-v1` session under its key
   * — a base supervisor back (a pi-intercom client), or a session without the extension that took the id over inside a
   * `replace` window. It is the question's answer as a notified supervisor's reply is (qbase2): queued to the fiber
   * from `replySent`, after the reply was queued to the child or its mailbox in its sender's order, so nothing is held
   * and the question is marked answered — a `questions-v1` supervisor back later is not notified of it again. A reply carrying
   * `replyError` is not an answer (C-DQ-8); with no notice there is no edge to open again, so the question waits
   * edgeless, as before. With no notice there was no room to size it against before delivery either: the fiber sizes
   * it as it does a `question_answer` and, too large, does not save it (logged; the reply went on). Before,
   * nothing was saved and the question stayed `awaiting_input` (helper fixqs3).
   */
  private unnotifiedAnswer(attempt: SendAttempt, mail: Mail): void {
    const edge = mail.answers
    if (edge?.question !== true || edge.targetKey !== attempt.sender.key || mail.replyError !== undefined) return
    // Until the fiber has saved it, a supervisor notified again is not asked this question.
    this.replying.add(edge.messageId)
    this.offer({
      _tag: "Answer",
      session: undefined,
      requestId: undefined,
      questionId: edge.messageId,
      ownerId: attempt.sender.id,
      text: mail.message.content.text,
      at: attempt.now,
      closed: undefined,
      // Nothing sized it: with no notice there was no room to size it against (`replyTooLarge`).
      sized: false
    })
  }

  /**
   * The size of a supervisor's reply that would be a question's answer (`replyTooLarge`), and the refusal of a
   * reply along a question's edge this broker holds no notice for (`unnotified`): for a reply, one size check while
   * no question is asked, waited on or has an edge open (`liveBy`: a question's edge counts for its child), else one
   * lookup by its reply key. The Router adds it after every other send stage, so a reply that breaks another rule
   * too — a bad `supersedes`, say — is refused for that first, as a send's own size check follows the stages
   * (docs/protocol.md "Sending"; before helper qs it ran before `Receipts.supersedes`).
   */
  readonly replySize: SendStage = {
    check: (attempt) => {
      const key = attempt.replyKey
      return key === undefined || this.liveBy.size === 0 ? undefined : this.replyTooLarge(key, attempt)
    }
  }

  /**
   * C-BRK-3 for the live path (helper qsize): a reply along the edge of notified question `key` from the supervisor
   * notified, with no `replyError` (C-DQ-8: not an answer), is refused `E_MESSAGE_TOO_LARGE` when its text, saved as
   * the answer, would make a frame over 1 MiB (`answerOverRoom` with the notice's `room`). Refused by `replySize`'s
   * check, before the asks stage's edge is used, nothing is delivered or saved and the question waits on its edge. Before, the reply
   * reached the child and was saved, and every later frame carrying the question with it (a `question_get`, a
   * re-ask's `question_result`, an answer receipt) was dropped by the writer's guard.
   */
  private replyTooLarge(key: string, attempt: SendAttempt): Refusal | undefined {
    const notice = this.notices.get(key)
    // No notice, and the sender's id has no live `questions-v1` session under its key (back without it, or taken
    // over by a session without it inside a `replace` window): it can neither be notified again nor answer by id
    // (review revfixqs2 D1), so the reply goes on unsized and `stage`'s `delivered` queues it as the answer
    // (`unnotifiedAnswer`, qbase2).
    if (notice === undefined) {
      return this.present.get(attempt.sender.id)?.key === attempt.sender.key ? this.unnotified(key) : undefined
    }
    // By key, as `stage`'s `delivered`: a staged reply is checked again with the session it was staged from.
    if (notice.supervisor.key !== attempt.sender.key) return undefined
    if (replyErrorOf(attempt.frame, attempt.sender.peer) !== undefined) return undefined
    const over = answerOverRoom(notice.questionId, notice.room, attempt.message.content.text)
    return over === undefined
      ? undefined
      : { code: DeliveryCode.MessageTooLarge, reason: QuestionText.replyTooLarge(notice.questionId, over.bytes, over.room) }
  }

  /**
   * A reply along question `key`'s open edge (the asks stage let it through: from the supervisor the edge was opened
   * to) while this broker holds no notice for the question — its supervisor left and registered again before the
   * fiber notified it again (`SupervisorBack`), or a durable broker restored the edge at its start before the child
   * asked again. With no notice there is no room to size the reply against and nothing that would save it as the
   * answer, so it is refused, retryable, and the question waits on its edge (review revqs 1; before, it was
   * delivered, closing the edge, neither sized nor saved: C-DQ-7). Once the question is notified again, the same
   * reply goes through as the answer. Not a question's edge: undefined.
   */
  private unnotified(key: string): Refusal | undefined {
    const edge = this.edges.get(key)
    if (edge?.question !== true) return undefined
    return { code: DeliveryCode.DeliveryFailed, reason: QuestionText.replyUnnotified(edge.messageId) }
  }

  /**
   * Does a question of this broker's live state hold `senderKey`'s message id `messageId` — asked and not handled yet,
   * waited on by its child, or with its edge open? What the send stage refuses a send under. One lookup by
   * `senderKey` when it has no question live; the record key is built only for a sender that has one.
   */
  holds(senderKey: string, messageId: string): boolean {
    return this.holdOf(senderKey, messageId) !== undefined
  }

  /**
   * How a question holds `senderKey`'s message id `messageId` (`QuestionHold`), or undefined. What Asks.ts reads
   * before it opens an ask's edge again (`answerLost`: `asked` too, though the fiber may still refuse the question)
   * or for a restored staged ask (`openStaged`): that edge would replace the
   * question's, or be replaced by it. `taken`: its child waits on it, or its edge is open — notified through this
   * broker, or restored at startup before its child asked again (C-DQ-6; review revcf R4).
   */
  holdOf(senderKey: string, messageId: string): QuestionHold | undefined {
    if (this.liveBy.size === 0 || !this.liveBy.has(senderKey)) return undefined
    const key = recordKeyOf(senderKey, messageId)
    if (this.waiters.get(messageId)?.key === senderKey || this.edges.get(key)?.question === true) return "taken"
    return this.asking.has(key) ? "asked" : undefined
  }

  /** Questions notified through this broker and still open, and waiters: for stats and tests. */
  get sizes(): { readonly notices: number; readonly waiters: number } {
    return { notices: this.notices.size, waiters: this.waiters.size }
  }

  // --- called by the question fiber, between two yields ----------------------

  /** The session, if it is still the live one for its key. */
  isLive(session: Session): boolean {
    return this.ctx.registry.byKey.get(session.key) === session
  }

  /** Whether a session with this id and `questions-v1` is live: a child that is only reconnecting is not revived. */
  isPresent(sessionId: string): boolean {
    return this.present.has(sessionId)
  }

  /** The child waiting on `questionId` right now, if any. */
  waiterOf(questionId: string): Session | undefined {
    return this.waiters.get(questionId)
  }

  /** `session` waits on `questionId` (its `question_ask` was saved). */
  wait(questionId: string, session: Session): void {
    if (!this.isLive(session)) return
    this.deleteWaiter(questionId)
    this.waiters.set(questionId, session)
    this.waitingBy.add(session.key, questionId)
    this.count(session.key, 1)
  }

  /**
   * The fiber handled a `question_ask` of `session` for `questionId` (after `wait`), saved or refused: one fewer
   * `asking`.
   */
  asked(session: Session, questionId: string): void {
    const key = recordKeyOf(session.key, questionId)
    const count = this.asking.get(key)
    if (count === undefined) return
    if (count > 1) {
      this.asking.set(key, count - 1)
    } else {
      this.asking.delete(key)
      this.count(session.key, -1)
    }
  }

  /** The live reply to `questionId` was handled by the fiber (saved or refused). */
  replied(questionId: string): void {
    this.replying.delete(questionId)
  }

  /** Writes a frame to a session if it is still live. */
  write(session: Session, frame: string): void {
    if (this.isLive(session)) this.ctx.output.enqueue(session.peer, frame)
  }

  /**
   * Steers the supervisor (C-SUP-18): the question as a `message` from the
   * waiting child on the supervisor channel, with its id and how to answer;
   * its edge lets an ordinary `reply` through. Once per supervisor
   * connection while its notice lasts (the notice goes with the child's leave:
   * a child back that asks again has the same connection notified again, a
   * duplicate its client drops, docs/protocol.md); a question whose child is not here waits until it asks again
   * (or is listed with `question_list`). `fromJson`: the child's SessionInfo JSON the notification carries — the
   * one its ask was sized with (`QuestionWork` Ask's `fromJson`) when the fiber saved or re-asked it; else the
   * child's now (a supervisor back, C-DQ-6).
   */
  notify(record: QuestionRecord, supervisor: Session | undefined, fromJson?: string): void {
    const child = this.waiters.get(record.id)
    if (child === undefined || !this.isLive(child) || this.replying.has(record.id)) return
    const target = supervisor ?? this.supervisorSessionOf(child)
    if (target === undefined || !this.isLive(target) || target.id !== record.ownerId) return
    const now = this.ctx.now()
    const key = recordKeyOf(child.key, record.id)
    const known = this.notices.get(key)
    const notice: QuestionNotice = {
      questionId: record.id,
      ownerId: record.ownerId,
      child,
      supervisor: target,
      sentTo: target.peer,
      // Sized once per question notified (the record is the same while it waits unanswered).
      room: known?.room ?? answerRoom(record, now)
    }
    this.setNotice(key, notice)
    this.openEdge(notice, now)
    if (known?.sentTo === target.peer) return
    const notification = notificationOf(record)
    const mail: Mail = {
      ...notification,
      recordKey: key,
      senderKey: child.key,
      senderId: child.id,
      senderIdentity: child.identity,
      senderEnd: child.senderEnd,
      fromJson: fromJson ?? child.infoJson,
      brokerReceivedAt: this.ctx.stamps.at(now),
      spaceKey: target.space.key,
      targetKey: target.key,
      targetId: target.id,
      targetIdentity: target.identity,
      queuedAt: now,
      askDueAt: now + MAX_ASK_TIMEOUT_MS
    }
    this.ctx.output.enqueue(target.peer, messageFrameFor(mail, target.peer, mail.brokerReceivedAt))
  }

  /**
   * The question is settled: every edge of it closes, so a late `reply` along any is refused. Its waiter's, and each
   * found by the question's id (`edgeKeys`): one restored at a durable broker's start, which no waiter or notice
   * names (helper fixqs3; review revfixqs2 D2), and one under another session key of its child (review rrsq probe 2).
   */
  close(questionId: string): void {
    this.closeWaiting(questionId)
    const keys = this.edgeKeys.get(questionId)
    if (keys === undefined) return
    for (const key of [...keys]) this.closeEdge(key)
  }

  /** The edge (and notice) of `questionId` under its waiter's key only, if a child waits on it: the question goes on. */
  private closeWaiting(questionId: string): void {
    const child = this.waiters.get(questionId)
    if (child !== undefined) this.closeEdge(recordKeyOf(child.key, questionId))
  }

  /** The question edge under `key` closes, and the notice under it goes. */
  private closeEdge(key: string): void {
    this.deleteNotice(key)
    this.edges.delete(key)
  }

  /**
   * A `question_answer` that closed `notice` was refused and the question still waits (review revqanswer #2): its
   * notice and edge are back, on a fresh 30-day edge, so the supervisor's reply to the notification it holds answers
   * it (not notified again). Only while nothing changed meanwhile: the same child session still waits, the supervisor
   * notified is still live and no other notice took the key (a stop, a leave, a takeover or a supervisor notified
   * again win).
   */
  reopen(notice: QuestionNotice): void {
    const child = this.waiters.get(notice.questionId)
    if (child !== notice.child || !this.isLive(child) || !this.isLive(notice.supervisor)) return
    const key = recordKeyOf(child.key, notice.questionId)
    if (this.notices.has(key)) return
    this.setNotice(key, notice)
    this.openEdge(notice, this.ctx.now())
  }

  /** Done with `questionId` here: no waiter, no edge. */
  forget(questionId: string): void {
    this.close(questionId)
    this.deleteWaiter(questionId)
  }

  // --- the tables and their indexes ------------------------------------------------

  private deleteWaiter(questionId: string): void {
    const waiter = this.waiters.get(questionId)
    if (waiter === undefined) return
    this.waiters.delete(questionId)
    this.waitingBy.delete(waiter.key, questionId)
    this.count(waiter.key, -1)
  }

  /** `liveBy`: `senderKey` has `delta` more entries of `asking`, `waiters` or open question edges. */
  private count(senderKey: string, delta: number): void {
    const left = (this.liveBy.get(senderKey) ?? 0) + delta
    if (left > 0) this.liveBy.set(senderKey, left)
    else this.liveBy.delete(senderKey)
  }

  private setNotice(key: string, notice: QuestionNotice): void {
    this.deleteNotice(key)
    this.notices.set(key, notice)
    this.noticesTo.add(notice.supervisor.key, key)
  }

  private deleteNotice(key: string): void {
    const notice = this.notices.get(key)
    if (notice === undefined) return
    this.notices.delete(key)
    this.noticesTo.delete(notice.supervisor.key, key)
  }

  /**
   * The broker's own shutdown begins (Router.stopping, before its connections close): from now on a session that
   * leaves keeps its questions' edges open. A durable wait outlives a disconnected broker (C-DQ-6): the edge a crash
   * leaves stored is restored at the next start, and the supervisor's reply along it reaches the child back. Closed
   * here, the store's last commit deleted it, so after a clean stop that reply was refused (review rvw72 probe 1).
   */
  brokerStopping(): void {
    this.stopping = true
  }

  /**
   * `session` is gone: its questions' edges close (the questions stay saved), its notices go. A child that really
   * left cannot take an answer along the edge, so a reply is refused and the supervisor answers by id
   * (`question_answer`), or the child's next ask notifies it again. At the broker's own shutdown (`stopping`) the edges
   * stay: the broker, not the child, went away, and the next start restores them (C-DQ-6).
   */
  private drop(session: Session): void {
    if (this.present.get(session.id) === session) this.present.delete(session.id)
    for (const questionId of [...(this.waitingBy.get(session.key) ?? [])]) {
      if (this.waiters.get(questionId) !== session) continue
      // Not settled: its other edges (another session key of its child) stay open, as the question does.
      if (!this.stopping) this.closeWaiting(questionId)
      this.deleteWaiter(questionId)
    }
    for (const key of [...(this.noticesTo.get(session.key) ?? [])]) {
      if (this.notices.get(key)?.supervisor === session) this.deleteNotice(key)
    }
  }

  /**
   * A takeover (P16): `next` has the same key as `previous`, so the ask edges
   * stay; what `previous` waited on and was notified of is now `next`'s. The
   * notice keeps the connection it was sent to, so a supervisor's new
   * connection is notified again (C-DQ-6).
   */
  private handOver(previous: Session, next: Session): void {
    if (previous.key !== next.key) return this.drop(previous)
    if (this.present.get(previous.id) === previous) this.present.delete(previous.id)
    for (const questionId of this.waitingBy.get(previous.key) ?? []) {
      if (this.waiters.get(questionId) !== previous) continue
      this.waiters.set(questionId, next)
      const key = recordKeyOf(next.key, questionId)
      const notice = this.notices.get(key)
      if (notice?.child === previous) this.notices.set(key, { ...notice, child: next })
    }
    for (const key of this.noticesTo.get(previous.key) ?? []) {
      const notice = this.notices.get(key)
      if (notice?.supervisor === previous) this.notices.set(key, { ...notice, supervisor: next })
    }
  }

  // --- frames ---------------------------------------------------------------------

  private offer(work: QuestionWork): void {
    Queue.offerUnsafe(this.work, work)
  }

  private supervisorSessionOf(child: Session): Session | undefined {
    const ref = this.supervisorOf(child)
    return ref === undefined ? undefined : this.ctx.registry.byKey.get(ref.key)
  }

  private openEdge(notice: QuestionNotice, now: number): void {
    this.edges.open({
      messageKey: recordKeyOf(notice.child.key, notice.questionId),
      messageId: notice.questionId,
      askerKey: notice.child.key,
      targetKey: notice.supervisor.key,
      // On the broker's clock, not the stamps (docs/store.md): its own due time too.
      deadline: now + MAX_ASK_TIMEOUT_MS,
      dueAt: now + MAX_ASK_TIMEOUT_MS,
      openedAt: now,
      question: true
    })
  }

  /** Only a session granted `questions-v1` may use question frames (a base client never sends them). */
  private guard(
    peer: Session["peer"],
    raw: { readonly type: string; readonly [key: string]: unknown },
    handle: (session: Session) => void
  ): void {
    if (!peer.features.has(QUESTIONS_V1)) {
      return this.ctx.protocolError(peer, `"${raw.type}" frame without the ${QUESTIONS_V1} extension`)
    }
    const session = peer.session
    if (session !== undefined) handle(session)
  }

  private fail(session: Session, requestId: string, error: string, reason: string): void {
    this.ctx.output.enqueue(session.peer, JSON.stringify({ type: "question_failed", requestId, error, reason }))
  }

  /** The owner a request acts for: `owner` if given (never by a bound child), else the caller. */
  private ownerFor(session: Session, requestId: string, owner: string | undefined): string | undefined {
    if (owner === undefined || owner === session.id) return session.id
    if (this.supervisorOf(session) !== undefined) {
      this.fail(session, requestId, "QuestionNotOwner", QuestionText.childOwner)
      return undefined
    }
    return owner
  }

  private onAsk(session: Session, raw: unknown): void {
    const frame = decodeClientFrame.question_ask(raw)
    if (isFrameDecodeError(frame)) return this.ctx.protocolError(session.peer, frame.message)
    const ownerId = this.supervisorOf(session)?.id
    if (ownerId === undefined) return this.fail(session, frame.requestId, "QuestionNotChild", QuestionText.notChild)
    if (!QUESTION_ID_PATTERN.test(frame.questionId)) {
      return this.fail(session, frame.requestId, "InvalidQuestion", QuestionText.badId)
    }
    if (frame.text.trim() === "") return this.fail(session, frame.requestId, "InvalidQuestion", QuestionText.emptyText)
    const now = this.ctx.now()
    const key = recordKeyOf(session.key, frame.questionId)
    // The id of its ordinary ask still open: the question's edge would replace the ask's (module header).
    // Or of its ask accepted and `replace`-staged, with no edge until its window closes (review revcf R1).
    const edge = this.edges.get(key)
    const askTo = edge !== undefined && edge.question !== true && dueOf(edge) > now
      ? edge.targetKey
      : this.stagedAskTo(session.key, frame.questionId)
    if (askTo !== undefined) {
      const target = this.ctx.registry.byKey.get(askTo)?.id ?? "a session that has left"
      return this.fail(session, frame.requestId, "QuestionIdTaken", QuestionText.idOfAsk(frame.questionId, target))
    }
    // The id of any other message it sent that P46's record still names: the notification would be a second
    // message from the child under it, which its supervisor's client may drop as one it has had (P50).
    const sentTo = this.sentUnder(session.key, frame.questionId, now)
    if (sentTo !== undefined) {
      return this.fail(session, frame.requestId, "QuestionIdTaken", QuestionText.idOfMessage(frame.questionId, sentTo))
    }
    const asking = this.asking.get(key)
    this.asking.set(key, (asking ?? 0) + 1)
    if (asking === undefined) this.count(session.key, 1)
    this.offer({
      _tag: "Ask",
      session,
      requestId: frame.requestId,
      questionId: frame.questionId,
      reason: frame.reason,
      text: frame.text,
      ownerId,
      at: now,
      // As `questionTooLarge` measures them: a rename before the fiber saves the question changes neither (helper qs).
      childName: childNameOf(session),
      fromJson: session.infoJson,
      // C-BRK-3: neither frame a new question becomes may pass 1 MiB once it is saved (the writer would drop it).
      // Refused by the fiber, which knows whether the id is new: a re-ask is answered from the saved record.
      tooLarge: questionTooLarge(session, frame, ownerId, now, this.ctx.stamps.at(now))
    })
  }

  private onReceived(session: Session, raw: unknown): void {
    const frame = decodeClientFrame.question_received(raw)
    if (isFrameDecodeError(frame)) return this.ctx.protocolError(session.peer, frame.message)
    this.offer({ _tag: "Received", session, questionId: frame.questionId, at: this.ctx.now() })
  }

  private onAnswer(session: Session, raw: unknown): void {
    const frame = decodeClientFrame.question_answer(raw)
    if (isFrameDecodeError(frame)) return this.ctx.protocolError(session.peer, frame.message)
    const ownerId = this.ownerFor(session, frame.requestId, frame.owner)
    if (ownerId === undefined) return
    // From now on a live reply races nothing: the edge is gone before the answer is saved. A refusal that leaves
    // the question waiting opens it again (`reopen`).
    const closed = this.closeOwned(frame.questionId, ownerId)
    this.offer({
      _tag: "Answer",
      session,
      requestId: frame.requestId,
      questionId: frame.questionId,
      ownerId,
      text: frame.text,
      at: this.ctx.now(),
      closed,
      sized: false
    })
  }

  private onStop(session: Session, raw: unknown): void {
    const frame = decodeClientFrame.question_stop(raw)
    if (isFrameDecodeError(frame)) return this.ctx.protocolError(session.peer, frame.message)
    const ownerId = this.ownerFor(session, frame.requestId, frame.owner)
    if (ownerId === undefined) return
    this.offer({
      _tag: "Stop",
      session,
      requestId: frame.requestId,
      questionId: frame.questionId,
      by: ownerId,
      at: this.ctx.now()
    })
  }

  private onList(session: Session, raw: unknown): void {
    const frame = decodeClientFrame.question_list(raw)
    if (isFrameDecodeError(frame)) return this.ctx.protocolError(session.peer, frame.message)
    const ownerId = this.ownerFor(session, frame.requestId, frame.owner)
    if (ownerId === undefined) return
    const page = checkPage(frame)
    if ("_tag" in page) return this.fail(session, frame.requestId, page._tag, page.message)
    this.offer({ _tag: "List", session, requestId: frame.requestId, ownerId, page })
  }

  private onGet(session: Session, raw: unknown): void {
    const frame = decodeClientFrame.question_get(raw)
    if (isFrameDecodeError(frame)) return this.ctx.protocolError(session.peer, frame.message)
    const ownerId = this.ownerFor(session, frame.requestId, frame.owner)
    if (ownerId === undefined) return
    this.offer({ _tag: "Get", session, requestId: frame.requestId, questionId: frame.questionId, ownerId })
  }

  /**
   * The session id `senderKey`'s message `messageId` was sent to, when P46's record of it is still kept (an hour at
   * most, DeliveryRecords.ts) and says the broker took it: delivered, queued or staged, or withdrawn, expired or
   * evicted since. Not for a send refused at once (a target not found or rebound): no recipient had it.
   */
  private sentUnder(senderKey: string, messageId: string, now: number): string | undefined {
    const record = this.ctx.records.get(senderKey, messageId, now)
    if (record === undefined) return undefined
    const outcome = record.outcome
    const taken = outcome.ok || outcome.code === DeliveryCode.DeliveryCancelled ||
      outcome.code === DeliveryCode.DeliverySuperseded || outcome.code === DeliveryCode.DeliveryExpired ||
      outcome.code === DeliveryCode.DeliveryEvicted
    return taken ? record.targetId : undefined
  }

  /** Closes the edge of a question if the caller is the one it was notified to: the notice closed, if any. */
  private closeOwned(questionId: string, ownerId: string): QuestionNotice | undefined {
    const child = this.waiters.get(questionId)
    if (child === undefined) return undefined
    const notice = this.notices.get(recordKeyOf(child.key, questionId))
    if (notice === undefined || notice.ownerId !== ownerId) return undefined
    // Its notice's edge only: a refused answer opens that again (`reopen`); a saved one closes the rest (`close`).
    this.closeWaiting(questionId)
    return notice
  }
}

