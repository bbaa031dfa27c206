/**
 * Size: about 660 lines, one concept — the session runtime's error catalogue (one small
 * class or union per failure, each with its user-facing text).
 *
 * Typed errors of the session runtime. Each `message` is the exact text a
 * tool result shows (C-TOOL, C-TGT, C-ASK, C-RPL); `intercom()` turns every
 * one of them into an error result, never a throw.
 *
 * Field vocabulary, shared with `effect-intercom/client`'s errors:
 * - `_tag` — the kind of error; tool results name it as `details.error`;
 * - `reason` — a human-readable explanation of what went wrong (for
 *   `NotDelivered`, the broker's reason verbatim), never a code or a kind;
 * - `code` — the broker's `E_…` delivery code, when it gave one;
 * - `message` — the full text shown to the person or the model, built from
 *   the fields above.
 *
 * @since 0.1.0
 */
import { Data } from "effect"
import type {
  ConnectionLost,
  IntercomNotConnected,
  QuestionRefused,
  QuestionsUnavailable,
  RequestTimeout,
  ResultRefused,
  ResultsUnavailable,
  TopicRefused,
  TopicsUnavailable
} from "../client/errors.ts"
import { MAX_ASK_TIMEOUT_MS } from "../protocol/constants.ts"
import type { Message } from "../protocol/frames.ts"
import type { TopicSessionChanged } from "./topicErrors.ts"
import { formatSpan, formatWait, MISSING_SELF } from "./render.ts"
import type { WorkerFailure } from "./Workers.ts"

/**
 * `Missing 'to' or 'message' parameter` / `Missing 'message' parameter` (C-TOOL-2).
 *
 * @category errors
 * @since 0.1.0
 */
export class MissingParameter extends Data.TaggedError("MissingParameter")<{
  /** Which parameters the action needs. */
  readonly required: "to and message" | "message"
}> {
  override get message(): string {
    return this.required === "message" ? "Missing 'message' parameter" : "Missing 'to' or 'message' parameter"
  }
}

/**
 * `Unknown action: <x>` (C-TOOL-1).
 *
 * @category errors
 * @since 0.1.0
 */
export class UnknownAction extends Data.TaggedError("UnknownAction")<{ readonly action: string }> {
  override get message(): string {
    return `Unknown action: ${this.action}`
  }
}

/**
 * A parameter breaks C-TOOL-5 (attachments) or C-TOOL-6 (control
 * characters); nothing was sent. `Invalid message: <reason>`.
 *
 * @category errors
 * @since 0.1.0
 */
export class InvalidInput extends Data.TaggedError("InvalidInput")<{
  /** What is wrong, e.g. `message contains a control character (…)`. */
  readonly reason: string
}> {
  override get message(): string {
    return `Invalid message: ${this.reason}`
  }
}

/**
 * `Cannot message the current session`: the target resolves to the caller
 * (C-TOOL-3, C-TGT-4), here or in the broker (`E_SELF_TARGET`).
 *
 * @category errors
 * @since 0.1.0
 */
export class SelfTargetRefused extends Data.TaggedError("SelfTargetRefused")<{}> {
  override get message(): string {
    return "Cannot message the current session"
  }
}

/**
 * An ambiguous or too-short target (C-TGT-2, C-TGT-3, C-TGT-5); nothing was
 * sent. The `reason` is the whole message.
 *
 * @category errors
 * @since 0.1.0
 */
export class TargetUnresolved extends Data.TaggedError("TargetUnresolved")<{
  /** The target as the caller wrote it. */
  readonly target: string
  /** Why it did not resolve, with the candidates (`Multiple sessions named "<x>" …`). */
  readonly reason: string
}> {
  override get message(): string {
    return this.reason
  }
}

/**
 * `Nothing was sent to "<to>": the broker did not answer the lookup of the
 * target …`: a send or ask looks its target up first (a `list`), and the
 * broker did not answer that, so the message was never sent — sending it
 * again cannot deliver it twice. With the broker named, its pid and what to
 * try (`RequestTimeout.advice`): a broker that answers nothing is frozen.
 *
 * @category errors
 * @since 0.1.0
 */
export class TargetLookupUnanswered extends Data.TaggedError("TargetLookupUnanswered")<{
  /** The target as the caller wrote it. */
  readonly to: string
  /** The lookup's timeout, with the broker when the client named it. */
  readonly timeout: RequestTimeout
}> {
  override get message(): string {
    const advice = this.timeout.advice
    return `Nothing was sent to "${this.to}": the broker did not answer the lookup of the target within ` +
      `${this.timeout.timeoutMs / 1000} s (${this.timeout.summary}), so the send was not made.` +
      (advice === "" ? "" : ` ${advice}`)
  }
}

/**
 * The broker (or the connection) did not deliver: `Message to "<to>" was not
 * delivered: <reason>` (C-TOOL-4, C-ASK-6), or `Reply to "<x>" …` for `reply`.
 *
 * @category errors
 * @since 0.1.0
 */
export class NotDelivered extends Data.TaggedError("NotDelivered")<{
  readonly kind: "Message" | "Reply"
  /** The target as the caller wrote it (for `reply`, the answered sender's name or id). */
  readonly to: string
  /** The broker's reason verbatim, or why the connection could not tell. */
  readonly reason: string
  /** The broker's code (`E_…`) when it gave one. */
  readonly code?: string | undefined
}> {
  override get message(): string {
    return `${this.kind} to "${this.to}" was not delivered: ${this.reason}`
  }
}

/**
 * The broker never confirmed the message, so whether it arrived is unknown:
 * `Message to "<to>" may or may not have been delivered: <reason>`. The
 * connection was lost before the acknowledgement, or the acknowledgement did
 * not come within the send timeout (C-BRK-10). Unlike {@link NotDelivered}, the
 * recipient may have it: sending it again can deliver it twice.
 *
 * @category errors
 * @since 0.1.0
 */
export class DeliveryUnknown extends Data.TaggedError("DeliveryUnknown")<{
  readonly kind: "Message" | "Reply"
  /** The target as the caller wrote it. */
  readonly to: string
  /** Why no answer came (the connection was lost, or the timeout). */
  readonly reason: string
  /**
   * True when the send timeout ran out with the connection live (not a lost
   * connection): an ask then settles with the broker before it ends so
   * (`settleUnacknowledged`, Ask.ts).
   */
  readonly sendTimedOut?: boolean
}> {
  override get message(): string {
    return `${this.kind} to "${this.to}" may or may not have been delivered: ${this.reason}. ` +
      `Check with the recipient before sending it again, or it may arrive twice.`
  }
}

/**
 * The connection was lost before the broker confirmed the message, and the
 * broker reached after the reconnect refused its re-send because its record
 * says the first attempt was delivered to the very session `to` resolves to
 * now (the client's `ConnectionLost` marked `firstWriteDeliveredHere`): it
 * arrived, so it must not be sent again. `send`, `reply`, a
 * `progress_update` and an ask to a busy peer (which waits for nothing) turn
 * it into their success (`Sent.deliveredBeforeLoss`); an ask that waits
 * (and a blocking `contact_supervisor`) ends on it, marked
 * `askEnded`, as it ended before on the loss: its text says the question
 * arrived and that the ask no longer waits for its answer.
 *
 * @category errors
 * @since 0.1.0
 */
export class DeliveredBeforeLoss extends Data.TaggedError("DeliveredBeforeLoss")<{
  readonly kind: "Message" | "Reply"
  /** The target as the caller wrote it. */
  readonly to: string
  /** What the broker answered the re-send: its refusal, quoted, and what its record says. */
  readonly reason: string
  /** Set by an ask, which ends on it: the ask stopped waiting and withdrew the question (`cancel_ask`). */
  readonly askEnded?: boolean
}> {
  override get message(): string {
    const delivered = `${this.kind} to "${this.to}" was delivered before the connection to the broker was lost: ` +
      `${this.reason}. Do not send it again: that session has it.`
    return this.askEnded === true
      ? `${delivered} This ask has ended without waiting for the answer, and asked the broker to withdraw the ` +
        `question (cancel_ask): a reply to it may be refused, or arrive later as a new message.`
      : delivered
  }
}

/**
 * The same error marked `askEnded` (for an ask, which ends on it); any other
 * error as it is.
 *
 * @category errors
 * @since 0.1.0
 */
export const askEndedOn = <E>(error: E): E | DeliveredBeforeLoss =>
  error instanceof DeliveredBeforeLoss ? new DeliveredBeforeLoss({ kind: error.kind, to: error.to, reason: error.reason, askEnded: true }) : error

/**
 * `Already waiting for a reply`: another blocking call holds the single
 * reply-waiter slot (C-ASK-1).
 *
 * @category errors
 * @since 0.1.0
 */
export class AlreadyWaiting extends Data.TaggedError("AlreadyWaiting")<{}> {
  override get message(): string {
    return "Already waiting for a reply"
  }
}

/**
 * `No reply from "<target>" within N minutes` (C-ASK-5).
 *
 * @category errors
 * @since 0.1.0
 */
export class ReplyTimeout extends Data.TaggedError("ReplyTimeout")<{
  readonly target: string
  readonly timeoutMs: number
}> {
  override get message(): string {
    return `No reply from "${this.target}" within ${formatWait(this.timeoutMs)}`
  }
}

/**
 * `Reply peer disconnected before answering: <id>`: the asked peer left the
 * broker before answering (C-ASK-9, C-BRK-33). With a `reason`, it says how
 * that was found, in parentheses — `(not on the broker after a reconnect)`
 * when the asker's connection dropped and the broker it reached again did not
 * have the peer once the rejoin grace was over (C-ASK-2).
 *
 * @category errors
 * @since 0.1.0
 */
export class ReplyPeerDisconnected extends Data.TaggedError("ReplyPeerDisconnected")<{
  readonly peerId: string
  readonly reason?: string | undefined
}> {
  override get message(): string {
    return `Reply peer disconnected before answering: ${this.peerId}${this.reason === undefined ? "" : ` (${this.reason})`}`
  }
}

/**
 * `The broker restarted without its saved state; the question to <target>
 * was lost. Ask again.`: the connection dropped and the broker reached again
 * holds another state than the one the question was left in
 * (`state-epoch-v1`: a memory-mode broker restarted), so it never heard of
 * the question, and a reply could not reach this session — the wait ends at
 * once rather than at its timeout. A durable broker's restart keeps its
 * state, and does not end a wait.
 *
 * @category errors
 * @since 0.1.0
 */
export class BrokerStateLost extends Data.TaggedError("BrokerStateLost")<{
  /** The question's message id. */
  readonly questionId: string
  /** The asked session's id, and its name when known. */
  readonly peerId: string
  readonly peerName?: string | undefined
}> {
  override get message(): string {
    const target = this.peerName === undefined || this.peerName === this.peerId ? this.peerId : `${this.peerName} (${this.peerId})`
    return `The broker restarted without its saved state; the question to ${target} was lost. Ask again.`
  }
}

/**
 * `The broker dropped this ask before delivering it: <reason>`: the broker
 * told the asker (an `expired` receipt about the question) that the ask will
 * never reach its target — a staged `replace` ask whose asker's connection
 * closed (C-DLV-9), or one refused when its window closed — so no reply can
 * come and the wait ends now rather than at its timeout.
 *
 * @category errors
 * @since 0.1.0
 */
export class AskExpired extends Data.TaggedError("AskExpired")<{
  /** The question's message id. */
  readonly questionId: string
  /** The broker's reason, verbatim. */
  readonly reason: string
}> {
  override get message(): string {
    return `The broker dropped this ask before delivering it: ${this.reason}`
  }
}

/**
 * The asked session answered with a correlated failure (`replyError`,
 * C-ASK-7): the ask ended as an error whose text is exactly that string.
 *
 * @category errors
 * @since 0.1.0
 */
export class ReplyFailed extends Data.TaggedError("ReplyFailed")<{
  /** The asked session as the caller wrote it. */
  readonly target: string
  /** The answering session's id. */
  readonly fromId: string
  /** The failure reply itself (its id, `replyTo`, any text and attachments it carries). */
  readonly reply: Message
  /** The destination's failure text, verbatim. */
  readonly reason: string
}> {
  override get message(): string {
    return this.reason
  }
}

/**
 * `Intercom session ended`: the session generation closed while a call was
 * running (C-ORD-35).
 *
 * @category errors
 * @since 0.1.0
 */
export class SessionEnded extends Data.TaggedError("SessionEnded")<{}> {
  override get message(): string {
    return "Intercom session ended"
  }
}

/**
 * `reply` found nothing (or too much) to answer (C-RPL-3, C-RPL-4). The
 * `reason` is the whole message.
 *
 * @category errors
 * @since 0.1.0
 */
export class NoReplyContext extends Data.TaggedError("NoReplyContext")<{
  /** E.g. `No active intercom context to reply to`, ``Multiple pending asks — specify `to` ``. */
  readonly reason: string
}> {
  override get message(): string {
    return this.reason
  }
}

/**
 * `reply` named an ask (by `replyTo`, or as the current turn's message) that
 * is no longer open: its asker stopped waiting, so no answer can reach that
 * ask. Either this session saw it expire (`expiredMs`: how long ago, on the
 * clock of `askExpiresAt`; nothing was sent), or its asker withdrew it (a
 * P73 `cancel`/`supersede` seen here, `withdrawn`; nothing was sent), or the
 * broker refused the reply because it holds no open ask of that id (`code`
 * `E_REPLY_TARGET`: it expired there first, or its asker withdrew it). The text says what to do:
 * send the answer as a plain message if the asker still needs it.
 *
 * @category errors
 * @since 0.1.0
 */
export class AskNoLongerOpen extends Data.TaggedError("AskNoLongerOpen")<{
  /** The asker as `reply` names it: its name, or its session id. */
  readonly to: string
  /** The ask's message id. */
  readonly askId: string
  /** How long ago the ask expired here (ms), when this session saw it expire. */
  readonly expiredMs?: number | undefined
  /** Its asker withdrew or replaced it (P73), as this session was told. */
  readonly withdrawn?: boolean | undefined
  /** The broker's code (`E_REPLY_TARGET`) when the broker refused the reply. */
  readonly code?: string | undefined
}> {
  override get message(): string {
    const what = this.withdrawn === true
      ? `The ask ${this.askId} from ${this.to} was withdrawn by ${this.to}: ${this.to} no longer waits for an answer, ` +
        `so this reply was not sent`
      : this.expiredMs !== undefined
      ? `The ask ${this.askId} from ${this.to} expired ${formatSpan(this.expiredMs)} ago: ${this.to} no longer waits ` +
        `for an answer, so this reply was not sent`
      : `Reply to "${this.to}" was not delivered: the broker no longer holds the ask ${this.askId} (it expired, or ` +
        `${this.to} withdrew it), so ${this.to} no longer waits for an answer`
    return `${what}. If ${this.to} still needs it, send it to ${this.to} as a plain message (a send without replyTo).`
  }
}

/**
 * `Current session is missing from intercom session list.` (C-TOOL-9).
 *
 * @category errors
 * @since 0.1.0
 */
export class SelfNotListed extends Data.TaggedError("SelfNotListed")<{}> {
  override get message(): string {
    return MISSING_SELF
  }
}

/**
 * An ask's `timeoutMs` (or the session's `askTimeoutMs` it defaults to) that
 * the broker would refuse: not a whole number of milliseconds from 1 to
 * `MAX_ASK_TIMEOUT_MS` (30 days). Nothing is sent.
 *
 * @category errors
 * @since 0.1.0
 */
export class InvalidTimeout extends Data.TaggedError("InvalidTimeout")<{ readonly value: number }> {
  override get message(): string {
    return `Invalid timeoutMs: ${this.value} (must be a whole number of milliseconds from 1 to ${MAX_ASK_TIMEOUT_MS}, 30 days)`
  }
}

/**
 * A `scope` other than `"project"` or `"all"` (C-TOOL-16).
 *
 * @category errors
 * @since 0.1.0
 */
export class InvalidScope extends Data.TaggedError("InvalidScope")<{ readonly value: string }> {
  override get message(): string {
    return `Invalid scope: ${JSON.stringify(this.value)} (use "project" or "all")`
  }
}

/**
 * A `group` parameter on `send`, `ask` or `reply` that is not the session's
 * own group (C-GRP-6): `group` only selects what `list`/`status` look at;
 * sending stays in the own group. Nothing was sent.
 *
 * @category errors
 * @since 0.1.0
 */
export class GroupReadOnly extends Data.TaggedError("GroupReadOnly")<{
  /** The action that was refused. */
  readonly action: string
  /** The `group` the call named (trimmed). */
  readonly requested: string
  /** The session's home group. */
  readonly own: string
}> {
  override get message(): string {
    return `The 'group' parameter is read-only: ${this.action} is locked to this session's own group ` +
      `${JSON.stringify(this.own)}, so it cannot reach group ${JSON.stringify(this.requested)}. Nothing was sent. ` +
      `Leave out 'group' (or pass ${JSON.stringify(this.own)}); use list with group to look at another group.`
  }
}

/**
 * A `group` parameter the broker would refuse: longer than 256 characters,
 * or holding a control character (C-TOOL-6). Nothing was asked of the broker.
 *
 * @category errors
 * @since 0.1.0
 */
export class InvalidGroup extends Data.TaggedError("InvalidGroup")<{
  /** What is wrong with it. */
  readonly reason: string
}> {
  override get message(): string {
    return `Invalid group: ${this.reason}`
  }
}

// ---------------------------------------------------------------------------
// How each action fails
// ---------------------------------------------------------------------------

/**
 * The client's own failures, passed through unchanged.
 *
 * @category errors
 * @since 0.1.0
 */
export type ClientFailure = IntercomNotConnected | RequestTimeout | ConnectionLost

/**
 * Why a topic action failed: refused (invalid, or the broker's bound),
 * unavailable (C-TOP-16), the session changed meanwhile (C-TOP-17), or no connection.
 *
 * @category errors
 * @since 0.1.0
 */
export type TopicFailure = ClientFailure | TopicRefused | TopicsUnavailable | TopicSessionChanged

/**
 * Why a result archive action (`results`, `result`) failed: refused (a bad
 * ref, offset or limit, not found, storage failed), unavailable (the broker
 * has no `results-v1`), or no answer — never a page (C-WKR-15, C-WKR-16).
 *
 * @category errors
 * @since 0.1.0
 */
export type ResultFailure = ClientFailure | ResultRefused | ResultsUnavailable

/**
 * Why a question action (`questions`, `question`, `answer`, `stop`) failed:
 * the broker refused it (its `error` says why, e.g. `AnswerConflict`), it
 * keeps no questions, a parameter is missing, or the connection failed.
 *
 * @category errors
 * @since 0.1.0
 */
export type QuestionFailure = ClientFailure | QuestionRefused | QuestionsUnavailable | MissingQuestionParam

/**
 * A question action without the parameter it needs (`questionId`, or the answer's `message`).
 *
 * @category errors
 * @since 0.1.0
 */
export class MissingQuestionParam extends Data.TaggedError("MissingQuestionParam")<{
  readonly action: string
  readonly param: string
}> {
  override get message(): string {
    return `Missing '${this.param}' parameter for action '${this.action}'.`
  }
}

/**
 * How `list` fails.
 *
 * @category errors
 * @since 0.1.0
 */
export type ListError = ClientFailure | SelfNotListed

/**
 * How `send` fails.
 *
 * @category errors
 * @since 0.1.0
 */
export type SendFailure =
  | ClientFailure
  | MissingParameter
  | InvalidInput
  | SelfTargetRefused
  | TargetUnresolved
  | TargetLookupUnanswered
  | NotDelivered
  | DeliveryUnknown
  | SessionEnded

/**
 * `This ask was replaced before delivery and will get no reply: <reason>`:
 * a staged `replace` ask (`delivery-v1`) that a later message of its sender
 * on the same thread replaced within the window — the broker delivers only
 * the latest and told the asker with a `superseded` receipt about the
 * question — so no reply can come and the wait ends now rather than at its
 * timeout. Ask again, or send the question as the thread's last message.
 *
 * @category errors
 * @since 0.1.0
 */
export class AskSuperseded extends Data.TaggedError("AskSuperseded")<{
  /** The question's message id. */
  readonly questionId: string
  /** The broker's reason, verbatim. */
  readonly reason: string
}> {
  override get message(): string {
    return `This ask was replaced before delivery and will get no reply: ${this.reason}`
  }
}

/**
 * `Your question to <target> was answered (reply <id>), but another client
 * of your session read the reply …; ask again if you still need the answer`:
 * the broker told the asker (`ask_answered_elsewhere`, `reply-elsewhere-v1`)
 * that the question had been answered, and the reply handed
 * for good to another client that held the session meanwhile (a takeover)
 * — no reply can come to this one, so the wait ends now rather than at its
 * timeout. The reply is not lost: that client has it; this one never will.
 *
 * @category errors
 * @since 0.1.0
 */
export class AskAnsweredElsewhere extends Data.TaggedError("AskAnsweredElsewhere")<{
  /** The question's message id. */
  readonly questionId: string
  /** The reply's message id. */
  readonly replyId: string
  /** Whom the question went to: the asked session's name, or its id. */
  readonly target: string
}> {
  override get message(): string {
    return `Your question to ${this.target} was answered (reply ${this.replyId}), but another client of your session ` +
      `read the reply while it held the session, so it is not shown here. Ask again if you still need the answer.`
  }
}

/**
 * How `ask` fails.
 *
 * @category errors
 * @since 0.1.0
 */
export type AskFailure =
  | SendFailure
  | InvalidTimeout
  | AlreadyWaiting
  | ReplyTimeout
  | ReplyPeerDisconnected
  | BrokerStateLost
  | AskExpired
  | AskSuperseded
  | AskAnsweredElsewhere
  | ReplyFailed
  | DeliveredBeforeLoss
  | SessionEnded

/**
 * How `reply` fails.
 *
 * @category errors
 * @since 0.1.0
 */
export type ReplyFailure = SendFailure | NoReplyContext | AskNoLongerOpen

/**
 * Every error of the session's actions; `intercom` turns each into an error result.
 *
 * @category errors
 * @since 0.1.0
 */
export type IntercomSessionError =
  | QuestionFailure
  | WorkerFailure
  | TopicFailure
  | ResultFailure
  | ListError
  | AskFailure
  | ReplyFailure
  | UnknownAction
  | InvalidScope
  | GroupReadOnly
  | InvalidGroup
