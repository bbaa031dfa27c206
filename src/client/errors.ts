/**
 * Size note: about 465 lines, one error class per failure a caller can meet,
 * each with its JSDoc and user-facing text; one vocabulary, kept together.
 *
 * Typed client errors. Every message is written for the person reading a tool
 * result or a terminal: it says what failed and, where it helps, what to do.
 *
 * Field vocabulary, shared with `effect-intercom/session`'s errors:
 * - `_tag` — the kind of error;
 * - `reason` — a human-readable explanation of what went wrong (for a
 *   delivery error, the broker's reason verbatim), never a code or a kind;
 * - `code` — the broker's `E_…` delivery code;
 * - `message` — the full text shown to a person, built from the fields above.
 */
import { REPLAY_WINDOW_MS } from "../protocol/constants.ts"
import { Data } from "effect"
import { DeliveryCode } from "../protocol/delivery.ts"
import { causeText } from "../protocol/causeText.ts"

/**
 * What the broker said when another connection registered this client's
 * session id and took it over (`taken_over`, extension `takeover-v1`): the
 * pid that registration gave. The client does not reconnect while that
 * holder is live; it takes the id back once the holder has left.
 */
export interface TakenOver {
  readonly sessionId: string
  /** The pid in the new holder's registration, when the broker sent one. */
  readonly pid: number | undefined
}

/** What a client says after a takeover, without its `Intercom not connected: ` prefix; `hint` says how to take the id back. */
export const takenOverReason = (takenOver: TakenOver, hint: string): string =>
  `this session was taken over by another process${
    takenOver.pid === undefined ? "" : ` (pid ${takenOver.pid})`
  } that registered the same session id (${takenOver.sessionId}); intercom moved there, and this process no longer receives its messages. ${hint}`

/**
 * The broker could not be reached or started, or registration failed, or
 * another process took the session over (C-TOOL-12):
 * `Intercom not connected: <reason>`.
 */
export class IntercomNotConnected extends Data.TaggedError("IntercomNotConnected")<{
  /** Why there is no connection, e.g. `no connection within 10000 ms (last error: …)`. */
  readonly reason: string
  /** Set when the session was taken over (`takeover-v1`): on a broker that granted `reclaim-v1` the client is back once the other holder has left. */
  readonly takenOver?: TakenOver | undefined
  /**
   * Set when a registration that asked for the id only if free (`ifFree`, `reclaim-v1`: taking it back
   * after a takeover) was refused because a live connection holds it, or (`ifReleased`,
   * `reclaim-released-v1`) because its last holder did not give it up on that broker.
   */
  readonly sessionHeld?: boolean | undefined
  /**
   * Set (with `sessionHeld`) when an `ifReleased` registration was refused because the id was given
   * up less than `RELEASE_GRACE_MS` ago (`E_SESSION_RELEASED_RECENTLY`): asked again after that long,
   * it is judged afresh.
   */
  readonly releasedRecently?: boolean | undefined
}> {
  override get message(): string {
    return `Intercom not connected: ${causeText(this.reason)}`
  }
}

/**
 * An `IntercomClientOptions` value the client cannot use, found when the
 * client is made (`IntercomClient.make`, `IntercomClient.layer`) before
 * anything is dialled or spawned: sent as given, the broker would refuse
 * every registration. Names the option, what it allows and the value.
 */
export class IntercomOptionError extends Data.TaggedError("IntercomOptionError")<{
  /** The option's name in `IntercomClientOptions` (`instanceId`). */
  readonly option: string
  /** What it allows, in words ("at most 256 characters"). */
  readonly allowed: string
  /** The value given, as the message shows it (a long one by its length). */
  readonly value: string
  /** What to do instead. */
  readonly hint: string
}> {
  override get message(): string {
    return `IntercomClient option ${this.option} must be ${this.allowed}, got ${this.value}. ${this.hint}`
  }
}

/**
 * A request was sent but the connection dropped before its answer: the outcome is unknown. For a send that the
 * broker reached next then refused (afterLoss.ts), that refusal is `refusal`, said in the message.
 */
export class ConnectionLost extends Data.TaggedError("ConnectionLost")<{
  /** `send`, `list`, `cancel`, or `post` (a frame without an answer). */
  readonly operation: string
  /** For a send: its message id, safe to resend. */
  readonly messageId?: string
  /**
   * For a send: the refusal the broker reached after the loss answered its last write with — what that broker holds
   * now (the target not connected, say), or its record of the first write (an expiry, an eviction, an id reuse),
   * neither of which tells whether the first write reached its recipient unless marked below. Absent when none stood.
   */
  readonly refusal?: DeliveryError
  /**
   * For a send: `refusal` is the broker's record of the first write itself — an id reuse, the record under this id
   * naming the session `to` meant then, another holding that name now, and saying it was delivered there
   * (afterLoss.ts `received`; `Reason.messageIdReuseDelivered`). Most likely it arrived there. Absent otherwise.
   */
  readonly firstWriteReceived?: boolean
  /**
   * For a send: as `firstWriteReceived`, but the record names as the session that got the first write the very
   * session the target resolves to now (P49: it took the mail queued for the one the target named then; afterLoss.ts
   * `deliveredHere`; `Reason.messageIdReuseDeliveredHere`; review revdh DH1). It arrived where a re-send would go.
   * Absent otherwise.
   */
  readonly firstWriteDeliveredHere?: boolean
  /**
   * For a send: as `firstWriteReceived`, but the record says the first write is queued for that earlier session, no
   * delivery confirmed — it may have been written to a client of it that dropped before confirming (afterLoss.ts
   * `queued`; `Reason.messageIdReuseQueued`; reviews revda DA2, revdh DH4). Absent otherwise.
   */
  readonly firstWriteQueued?: boolean
}> {
  override get message(): string {
    if (this.messageId === undefined) return `Intercom connection lost during ${this.operation}`
    const lost = `Intercom connection lost before the broker confirmed message ${this.messageId}`
    if (this.refusal !== undefined && this.firstWriteReceived === true) {
      return `${lost}; the broker took the first attempt: it refused the re-send «${this.refusal.reason}» (${this.refusal.code}) because its record of this message id names the session the target meant then, and another session holds that name now. The first attempt most likely reached that earlier session: this was its re-send, not another message under its id. Do not send it again unless that session's owner says it did not arrive, and then under a new message id.`
    }
    if (this.refusal !== undefined && this.firstWriteDeliveredHere === true) {
      return `${lost}; the broker took the first attempt and delivered it to the session the target resolves to now: it refused the re-send «${this.refusal.reason}» (${this.refusal.code}) because its record of this message id names the session the target meant then, while the mail queued for that session went to the one holding the name now. Do not send it again: that session has it.`
    }
    if (this.refusal !== undefined && this.firstWriteQueued === true) {
      return `${lost}; the broker took the first attempt and holds it for the session the target named then, with no delivery confirmed (it may have been written to a client of that session that dropped before confirming): it refused the re-send «${this.refusal.reason}» (${this.refusal.code}) because its record of this message id says the message is queued for that session, and another session holds that name now. The broker does not send it again under this id for the target as it resolves now; the queued mail may go to a session that registers later with that earlier session's id, or with its name and directory (P49: another session than the earlier one, then), if one does before the mailbox expires or evicts it. To reach the session holding the name now, send the message again under a new message id, and cancel this one by its id if the queued mail should not be delivered.`
    }
    if (this.refusal === undefined) {
      return `${lost}; it may or may not have been delivered. Retrying with the same message id within ${REPLAY_WINDOW_MS / 60_000} minutes of the first attempt is safe while the broker keeps its record of it (a durable broker does across restarts; one in memory mode forgets it when it restarts): it answers the retry from that record and does not deliver the message twice.`
    }
    return `${lost}; it may or may not have been delivered. The broker reached since refused the re-send: «${this.refusal.reason}» (${this.refusal.code}), which does not tell whether the first attempt reached its recipient. A retry with the same message id within ${REPLAY_WINDOW_MS / 60_000} minutes of the first attempt is answered from the broker's record of it while the broker keeps one (a durable broker does across restarts; one in memory mode forgets it when it restarts), so it does not deliver the message twice; where that record is what refused the re-send (an expiry, an eviction), it refuses every retry the same way.`
  }
}

/**
 * A broker that is there but does not answer, as the client found it: the
 * socket it waited on, and its pid when `broker.pid` names a live process.
 */
export interface SilentBroker {
  readonly socketPath: string
  readonly pid: number | undefined
}

/** Why a live broker may not answer (one wording for `BrokerNotAnswering` and `RequestTimeout`). */
export const SILENT_BROKER_CAUSES = "it may be stopped (SIGSTOP), swapping, or paused in a debugger"

/** What to try about a live broker that does not answer: resume it or stop it, by pid when known. */
export const silentBrokerRemedy = (pid: number | undefined): string => {
  const resume = pid === undefined ? "Resume it" : `Resume it (kill -CONT ${pid})`
  const stop = pid === undefined ? "stop it" : `stop it (kill ${pid})`
  return `${resume}, or ${stop} and try again.`
}

/** `The intercom broker (pid N)`, or `The intercom broker` without a pid. */
export const silentBrokerName = (pid: number | undefined): string =>
  pid === undefined ? "The intercom broker" : `The intercom broker (pid ${pid})`

/**
 * The broker did not answer in time (P41: "Send timeout"; P31: "List sessions
 * timeout"). With `broker` (the client looked it up), the message goes on to
 * name the broker, its pid, and what to try.
 */
export class RequestTimeout extends Data.TaggedError("RequestTimeout")<{
  readonly operation: "send" | "list" | "cancel" | "connect" | "authorize" | "topic" | "result" | "question"
  readonly timeoutMs: number
  /** The broker that did not answer, when the client looked it up. */
  readonly broker?: SilentBroker | undefined
}> {
  override get message(): string {
    return this.broker === undefined ? this.summary : `${this.summary}. ${this.advice}`
  }

  /**
   * `<Broker> did not answer on <socket> within <n> ms: it may be stopped …
   * Resume it (kill -CONT <pid>), or stop it (kill <pid>) and try again.`;
   * empty without `broker`.
   */
  get advice(): string {
    const broker = this.broker
    if (broker === undefined) return ""
    return `${silentBrokerName(broker.pid)} did not answer on ${broker.socketPath} within ${this.timeoutMs} ms: ` +
      `${SILENT_BROKER_CAUSES}. ${silentBrokerRemedy(broker.pid)}`
  }

  /** The protocol's short text for the operation (`List sessions timeout`, `Send timeout`, …). */
  get summary(): string {
    switch (this.operation) {
      case "send":
        return "Send timeout"
      case "list":
        return "List sessions timeout"
      case "cancel":
        return "Cancel timeout"
      case "connect":
        return "Connection timeout"
      case "authorize":
        return "Supervisor authorization timeout"
      case "topic":
        return "Topic request timeout: the broker did not confirm it, no topic state was saved"
      case "result":
        return "Result archive timeout: the broker did not answer; a report being stored may or may not have been " +
          "stored (list the results before storing it again)"
      case "question":
        return "Question request timeout: the broker did not answer; check the question's state with `intercom questions` before retrying"
    }
  }
}

/**
 * The broker issued no capability for a child (`supervisor-v1`): this session
 * registered without an owner token, the child name was blank, or a capability
 * being restored no longer checks (C-SUP-8, C-SUP-15). A launcher must not
 * start the child with a supervisor channel then (C-SUP-7).
 */
export class SupervisorAuthorizationFailed extends Data.TaggedError("SupervisorAuthorizationFailed")<{
  readonly childName: string
  /** The broker's reason, verbatim. */
  readonly reason: string
}> {
  override get message(): string {
    return `Supervisor authorization for child "${this.childName}" failed: ${this.reason}`
  }
}

/**
 * The broker does not offer topics (`topics-v1` not granted, C-TOP-16): topic
 * actions are unavailable; ordinary messaging is untouched.
 */
export class TopicsUnavailable extends Data.TaggedError("TopicsUnavailable")<{}> {
  override get message(): string {
    return "Topics are unavailable: the running broker does not support topics (topics-v1). Ordinary messaging is " +
      "unaffected; once the sessions of the old broker have closed and it has exited, reconnect and retry"
  }
}

/**
 * The broker does not offer the result archive (`results-v1` not granted):
 * storing and reading results is unavailable; ordinary messaging is untouched.
 */
export class ResultsUnavailable extends Data.TaggedError("ResultsUnavailable")<{}> {
  override get message(): string {
    return "The result archive is unavailable: the running broker does not support it (results-v1). Ordinary " +
      "messaging is unaffected; once the sessions of the old broker have closed and it has exited, reconnect and retry"
  }
}

/**
 * The broker refused a result request (`result_failed`) or its input was
 * invalid: nothing was stored. Not found, a bad ref, offset or limit, or
 * storage that failed — the reason says which and what to do.
 */
export class ResultRefused extends Data.TaggedError("ResultRefused")<{
  /** The broker's (or the local check's) reason, verbatim. */
  readonly reason: string
}> {
  override get message(): string {
    return this.reason
  }
}

/** The broker refused a topic request (`topic_failed`) or its input was invalid: nothing was saved. */
export class TopicRefused extends Data.TaggedError("TopicRefused")<{
  /** The broker's (or the local check's) reason, verbatim. */
  readonly reason: string
}> {
  override get message(): string {
    return this.reason
  }
}

/**
 * Durable questions are unavailable: the broker keeps none (memory-only or an
 * older broker without `questions-v1`). A child then asks with the ordinary
 * ask and its timeout (contracts.md open question 2).
 */
export class QuestionsUnavailable extends Data.TaggedError("QuestionsUnavailable")<{}> {
  override get message(): string {
    return "Durable supervisor questions are unavailable: the running broker keeps no questions (questions-v1). " +
      "Start the broker with its durable store (the default) and reconnect"
  }
}

/** The broker refused a question request (`question_failed`): nothing changed. `error` names why (e.g. `AnswerConflict`). */
export class QuestionRefused extends Data.TaggedError("QuestionRefused")<{
  /** The broker's error tag: QuestionNotFound, EmptyAnswer, AnswerConflict, QuestionCancelled, … */
  readonly error: string
  /** The broker's reason, verbatim. */
  readonly reason: string
}> {
  override get message(): string {
    return this.reason
  }
}

interface DeliveryFailure {
  readonly messageId: string
  /** The broker's `E_…` code, or `""` when the frame had none. */
  readonly code: string
  /** The broker's reason, verbatim; also the error's `message`. */
  readonly reason: string
  /** Whether a resend with the same message id may succeed (from our broker: `TargetRebound`, `ReplaceQueueFull`, `DeliveryFailed`). */
  readonly retryable: boolean
}

type DeliveryFields = DeliveryFailure & { readonly message: string }

/** `E_INVALID_MESSAGE`: the message or `to` is malformed (P48); the client refuses such a send (a `NaN` timestamp, say) before sending it, too. */
export class InvalidMessage extends Data.TaggedError("InvalidMessage")<DeliveryFields> {}
/** `E_SENDER_NOT_FOUND`: the sending connection was not, or no longer, registered when the send arrived (e.g. another connection took over its id). */
export class SenderNotFound extends Data.TaggedError("SenderNotFound")<DeliveryFields> {}
/** `E_INVALID_TARGET`: an exact send carried only one of `targetId`/`targetEpoch`, or an empty one (P47). */
export class InvalidTarget extends Data.TaggedError("InvalidTarget")<DeliveryFields> {}
/** `E_TARGET_NOT_FOUND`: no live or recently disconnected session matches `to`, or the exact `targetId` is not live (P43, P47). */
export class TargetNotFound extends Data.TaggedError("TargetNotFound")<DeliveryFields> {}
/** `E_TARGET_REBOUND`: the exact target re-registered with a new endpoint epoch; retryable: list again and resend with the same message id (P47). */
export class TargetRebound extends Data.TaggedError("TargetRebound")<
  DeliveryFields & {
    /**
     * The client's own mark: the refusal answered a write after the message was lost with a connection on the
     * way (`Resending`), so it says only what the broker reached next knows — an earlier write may have been
     * delivered. Absent when the refusal answered the first write.
     */
    readonly afterLoss?: boolean
  }
> {}
/**
 * `rebound` as read after its message was lost with a connection on the way: marked `afterLoss` (the same
 * object when it is already).
 */
export const reboundAfterLoss = (rebound: TargetRebound): TargetRebound =>
  rebound.afterLoss === true ? rebound : new TargetRebound({
    messageId: rebound.messageId,
    code: rebound.code,
    reason: rebound.reason,
    retryable: rebound.retryable,
    message: rebound.message,
    afterLoss: true
  })

/** `E_AMBIGUOUS_TARGET`: `to` matches several live sessions, or several disconnected ones that could get queued mail (P42, P49). */
export class AmbiguousTarget extends Data.TaggedError("AmbiguousTarget")<DeliveryFields> {}
/** `E_REPLY_TARGET`: `replyTo` names no open ask, or an ask that the target did not put to this session (P62). */
export class ReplyTargetMismatch extends Data.TaggedError("ReplyTargetMismatch")<DeliveryFields> {}
/**
 * `E_SUPERSEDE_TARGET`: `supersedes` names no message this session delivered to the target, or one this session
 * cancelled or superseded already (the reason says which), or the target is disconnected (P72).
 */
export class SupersedeTargetMismatch extends Data.TaggedError("SupersedeTargetMismatch")<DeliveryFields> {}
/** `E_MUTUAL_ASK`: an ask to a session that is itself waiting for this session's reply (P63). */
export class MutualAsk extends Data.TaggedError("MutualAsk")<DeliveryFields> {}
/** `E_TARGET_DISCONNECTED`: an ask (`expectsReply`) to a disconnected session; asks are not queued. */
export class TargetDisconnected extends Data.TaggedError("TargetDisconnected")<DeliveryFields> {}
/** `E_MESSAGE_ID_REUSE`: a message id sent again with another target or content (P46); the client refuses it at once while the first send is in flight. */
export class MessageIdReuse extends Data.TaggedError("MessageIdReuse")<DeliveryFields> {}
/** `E_DELIVERY_SUPERSEDED`: a resend of a message that a later message has superseded (P46, P72). */
export class DeliverySuperseded extends Data.TaggedError("DeliverySuperseded")<DeliveryFields> {}
/** `E_DELIVERY_CANCELLED`: a resend of a message its sender cancelled (P46, P71). */
export class DeliveryCancelled extends Data.TaggedError("DeliveryCancelled")<DeliveryFields> {}
/**
 * `E_DELIVERY_EXPIRED`: a resend of queued mail that expired in the mailbox before its recipient came back (P46, P49);
 * or (the client's own, `ASK_TIMED_OUT_UNWRITTEN` in requests.ts) an ask whose timeout since its first send ran out
 * before a reconnect could write it again, which was not written.
 */
export class DeliveryExpired extends Data.TaggedError("DeliveryExpired")<DeliveryFields> {}
/** `E_DELIVERY_EVICTED`: a resend of queued mail that the full mailbox evicted, or a send it could not keep at all (P46, P49). */
export class DeliveryEvicted extends Data.TaggedError("DeliveryEvicted")<DeliveryFields> {}
/** `E_SELF_TARGET` (ours): the send resolved to the sending session itself; pi-intercom's broker would deliver it (P44). */
export class SelfTarget extends Data.TaggedError("SelfTarget")<DeliveryFields> {}
/** `E_MESSAGE_TOO_LARGE` (ours): the forwarded `message` frame would exceed 1 MiB; the client refuses a `send` frame over 1 MiB before sending, too. */
export class MessageTooLarge extends Data.TaggedError("MessageTooLarge")<DeliveryFields> {}
/** `E_TOO_MANY_ASKS` (ours): this session (1,024) or the broker as a whole has as many open asks as it may; nothing was sent. */
export class TooManyAsks extends Data.TaggedError("TooManyAsks")<DeliveryFields> {}

/** `E_CROSS_GROUP` (`groups-v1`): the target is live in another group of the scope; groups do not talk (C-GRP-3). */
export class CrossGroup extends Data.TaggedError("CrossGroup")<DeliveryFields> {}

/** `E_SUPERVISOR_UNAUTHORIZED` (`supervisor-v1`): this session is not bound to a supervisor; it registered without a capability (C-SUP-12). */
export class SupervisorUnauthorized extends Data.TaggedError("SupervisorUnauthorized")<DeliveryFields> {}

/** `E_SUPERVISOR_TARGET` (`supervisor-v1`): a `supervisor_send` named someone other than the bound supervisor (C-SUP-12). */
export class SupervisorTargetMismatch extends Data.TaggedError("SupervisorTargetMismatch")<DeliveryFields> {}

/**
 * `E_REPLACE_QUEUE_FULL` (`delivery-v1`): replace staging is full, 100 per
 * sender or 1,000 overall (C-DLV-8), or (ours) 250 for the recipient, or the
 * recipient's share of a nearly full room (no more than the places left), which the
 * reason names; nothing was staged. `retryable`: a resend with the same id
 * once pending updates were delivered is judged afresh.
 */
export class ReplaceQueueFull extends Data.TaggedError("ReplaceQueueFull")<DeliveryFields> {}

/** `E_DELIVERY_UNSUPPORTED` (client-side, `delivery-v1`): a delivery mode other than `steer` to a broker without the extension; nothing was sent. */
export class DeliveryUnsupported extends Data.TaggedError("DeliveryUnsupported")<DeliveryFields> {}

/** `E_DELIVERY_FAILED` (a replayed failure without a code of its own), no code at all, or a code this client does not know (other brokers). */
export class DeliveryFailed extends Data.TaggedError("DeliveryFailed")<DeliveryFields> {}

/**
 * A `delivery_failed` answer to a send, one class per broker code; each
 * carries `messageId`, `code`, `retryable` and the broker's `reason` (also its
 * `message`). Match them with `Effect.catchTag`.
 */
export type DeliveryError =
  | InvalidMessage
  | SenderNotFound
  | InvalidTarget
  | TargetNotFound
  | TargetRebound
  | AmbiguousTarget
  | ReplyTargetMismatch
  | SupersedeTargetMismatch
  | MutualAsk
  | TargetDisconnected
  | MessageIdReuse
  | DeliverySuperseded
  | DeliveryCancelled
  | DeliveryExpired
  | DeliveryEvicted
  | SelfTarget
  | MessageTooLarge
  | TooManyAsks
  | CrossGroup
  | SupervisorUnauthorized
  | SupervisorTargetMismatch
  | ReplaceQueueFull
  | DeliveryUnsupported
  | DeliveryFailed

const byCode: Record<string, new(fields: DeliveryFields) => DeliveryError> = {
  [DeliveryCode.InvalidMessage]: InvalidMessage,
  [DeliveryCode.SenderNotFound]: SenderNotFound,
  [DeliveryCode.InvalidTarget]: InvalidTarget,
  [DeliveryCode.TargetNotFound]: TargetNotFound,
  [DeliveryCode.TargetRebound]: TargetRebound,
  [DeliveryCode.AmbiguousTarget]: AmbiguousTarget,
  [DeliveryCode.ReplyTarget]: ReplyTargetMismatch,
  [DeliveryCode.SupersedeTarget]: SupersedeTargetMismatch,
  [DeliveryCode.MutualAsk]: MutualAsk,
  [DeliveryCode.TargetDisconnected]: TargetDisconnected,
  [DeliveryCode.MessageIdReuse]: MessageIdReuse,
  [DeliveryCode.DeliverySuperseded]: DeliverySuperseded,
  [DeliveryCode.DeliveryCancelled]: DeliveryCancelled,
  [DeliveryCode.DeliveryExpired]: DeliveryExpired,
  [DeliveryCode.DeliveryEvicted]: DeliveryEvicted,
  [DeliveryCode.SelfTarget]: SelfTarget,
  [DeliveryCode.MessageTooLarge]: MessageTooLarge,
  [DeliveryCode.TooManyAsks]: TooManyAsks,
  [DeliveryCode.CrossGroup]: CrossGroup,
  [DeliveryCode.SupervisorUnauthorized]: SupervisorUnauthorized,
  [DeliveryCode.SupervisorTarget]: SupervisorTargetMismatch,
  [DeliveryCode.ReplaceQueueFull]: ReplaceQueueFull,
  [DeliveryCode.DeliveryUnsupported]: DeliveryUnsupported
}

/** The typed error for a `delivery_failed` frame: the class of its `code`, else `DeliveryFailed`. */
export const deliveryError = (failure: DeliveryFailure): DeliveryError => {
  const make = byCode[failure.code] ?? DeliveryFailed
  return new make({ ...failure, message: failure.reason })
}
