/**
 * One registered connection to a broker: register, then a reader fiber that
 * routes answers to the requests waiting for them (by `requestId` for lists,
 * by message id for sends and cancels) and everything else to the client's
 * sinks. When the socket closes, every request still waiting fails with
 * `ConnectionLost` — an in-flight send never vanishes silently. The reader
 * never waits to write: its `received-v1` confirmations are written by a
 * fiber of their own (Confirmations.ts). Every write, from whichever fiber,
 * goes through the connection's outbox, in order, which never starts a
 * transport write while one waits (a `Connection` takes one at a time) and
 * writes a turn's receipts together (Outbox.ts).
 *
 * Size: one concept — one connection's request/answer bookkeeping. Its parts
 * (register, the reader's dispatch and its `received-v1` confirmations, the
 * pending-request tables) share the same maps and the same close; the request texts are in requests.ts, the
 * sends waiting for their answer (those a close leaves unanswered, in order, and re-sent answers kept for a retry) in PendingSends.ts, the
 * cancels waiting for theirs (detached ones bounded) in PendingCancels.ts, the topic requests in TopicRequests.ts, the result requests in ResultRequests.ts,
 * the question requests in QuestionRequests.ts, the frame count to confirm and its writing
 * in Confirmations.ts and the writing itself in Outbox.ts. What stays (about 945 lines; `rejoin-v1`'s `instanceId`, not handing on mail read while leaving or after the client's own drop, the one-session liveness `probe`, the settle that outlasts its first timeout and a send's answer read after its send stopped waiting, handed to `sinks.lateAnswer`, added some) is the register handshake,
 * the reader's dispatch to those tables and the close that fails them all:
 * split further, one close would have to reach into every part.
 */
import { Clock, Deferred, Duration, Effect, Exit, Fiber, type Option, type Scope } from "effect"
import { randomUUID } from "node:crypto"
import { decodeBrokerFrameText, isFrameDecodeError } from "../protocol/decode.ts"
import { DeliveryCode } from "../protocol/delivery.ts"
import type { DeliveryChoice } from "../protocol/deliveryModes.ts"
import {
  ASK_EXPIRY_V1,
  EXTENSION_FEATURES,
  LIST_PAGE_V1,
  OBSERVE_V1,
  QUESTIONS_V1,
  RECEIVED_V1,
  RESULTS_V1,
  SESSION_HELD,
  SESSION_NOT_RELEASED,
  SESSION_RELEASED_RECENTLY,
  SUPERVISOR_V1,
  TOPICS_V1
} from "../protocol/features.ts"
import type { QuestionResultFrame } from "../protocol/questions.ts"
import type { BrokerFrame, MessageFrame, ReceiptStatus, SessionInfo, SessionRegistration } from "../protocol/frames.ts"
import type { Connection } from "../transport/Connection.ts"
import { answerAfterLoss } from "./afterLoss.ts"
import { type Dialer, dialUnixSocket } from "./Dialer.ts"
import {
  ConnectionLost,
  deliveryError,
  IntercomNotConnected,
  RequestTimeout,
  ResultsUnavailable,
  QuestionsUnavailable,
  SupervisorAuthorizationFailed,
  type TakenOver,
  TopicsUnavailable
} from "./errors.ts"
import { type ResultAnswer, type ResultRequestError, type ResultRequestFrame, ResultRequests } from "./ResultRequests.ts"
import type { ClientSinks, Delivery, InboundMessage } from "./events.ts"
import { Confirmations } from "./Confirmations.ts"
import { Outbox } from "./Outbox.ts"
import { PendingCancels } from "./PendingCancels.ts"
import { addressedTo, PendingSends, type SendAnswer, type UnansweredSend } from "./PendingSends.ts"
import { type TopicAnswer, type TopicRequestError, type TopicRequestFrame, TopicRequests } from "./TopicRequests.ts"
import { type QuestionRequestError, type QuestionRequestFrame, QuestionRequests } from "./QuestionRequests.ts"
import {
  awaitAnswer,
  type SendError,
  type SendFrameType,
  sendFrameText,
  type SendRequest,
  signatureOf,
  SUPERVISOR_UNAVAILABLE,
  writeThenAwait
} from "./requests.ts"

/** What `openClientConnection` needs to dial and register. */
export interface RegisterRequest {
  readonly socketPath: string
  readonly sessionId: string
  readonly scopeId: string | undefined
  /** The session's group (`groups-v1`); the default group when undefined. */
  readonly group?: string | undefined
  /** A short-lived session (`ephemeral-v1`): forgotten by the broker when it leaves. */
  readonly ephemeral?: boolean | undefined
  readonly session: SessionRegistration
  readonly features: ReadonlyArray<string>
  /** `supervisor-v1`: a supervisor's owner token, and a child's capability and supervisor (C-SUP-8, C-SUP-9). */
  readonly supervisor?: SupervisorRegistration | undefined
  readonly connectTimeoutMs: number
  /** How to reach the broker; the Unix socket at `socketPath` by default (the simulation dials in memory). */
  readonly dial?: Dialer
  /**
   * Whether an earlier connection lost the send `messageId` (with this `signature`) unanswered, as of `now`
   * (Resending.ts `lostOnTheWay`): a write of it here is one after the loss (`PendingSend.afterLoss`). None by default.
   */
  readonly lostOnTheWay?: (messageId: string, signature: string, now: number) => boolean
  /**
   * `reclaim-v1`: register only if no live connection holds the id (taking it back after a takeover);
   * refused with an `IntercomNotConnected` whose `sessionHeld` is true otherwise.
   */
  readonly ifFree?: boolean | undefined
  /**
   * `reclaim-released-v1`: register only if the id is free and its last holder gave it up (`unregister`)
   * on this broker; refused with an `IntercomNotConnected` whose `sessionHeld` is true otherwise.
   */
  readonly ifReleased?: boolean | undefined
  /**
   * `rejoin-v1`: the client instance's id, the same on each of its connections (ignored by a broker
   * that does not grant `rejoin-v1`): its register while an older connection of its own still holds
   * the id is a rejoin, and the old connection's unconfirmed mail comes here first, in order.
   */
  readonly instanceId?: string | undefined
}

/** What a session brings to the supervisor channel when it registers (`supervisor-v1`). */
export interface SupervisorRegistration {
  /** A supervisor's private token: the broker signs the capabilities it issues to it with this. */
  readonly ownerToken?: string | undefined
  /** A child's grant: the capability its supervisor obtained for it, and that supervisor's session id. */
  readonly grant?: { readonly capability: string; readonly supervisorSessionId: string } | undefined
}

/** One `sessions` answer: all sessions (base), or one page with where to go on (`list-page-v1`). */
interface SessionsPage {
  readonly sessions: ReadonlyArray<SessionInfo>
  readonly nextCursor?: string
}

/**
 * One registered connection, as `openClientConnection` returns it.
 * `IntercomClient` holds one at a time and replaces it after a drop; use the
 * client rather than this, unless you manage reconnection yourself.
 */
export interface ClientConnection {
  readonly sessionId: string
  /** Features the broker granted in `registered`. */
  readonly features: ReadonlySet<string>
  /** The supervisor the broker bound this child to (`supervisor-v1`), if it registered with a grant. */
  readonly supervisorSessionId: string | undefined
  /** The broker's state epoch (`state-epoch-v1`); undefined from a broker that did not grant it. */
  readonly stateEpoch: string | undefined
  /** Completes when the connection has closed, for whatever reason. */
  readonly closed: Effect.Effect<void>
  /**
   * What the broker's `taken_over` said (`takeover-v1`), once it came: another
   * connection registered this session's id, and the broker ends this one.
   */
  readonly takenOver: () => TakenOver | undefined
  /** Every live session of the own group, or of `group` (a read-only peek, `groups-v1`). */
  readonly list: (
    timeoutMs: number,
    group?: string
  ) => Effect.Effect<ReadonlyArray<SessionInfo>, RequestTimeout | ConnectionLost>
  /**
   * The liveness probe (P96): a `list` the broker must answer within
   * `timeoutMs`. With `list-page-v1` it asks for one session (`limit: 1`):
   * every client probes every 30 s, and a whole list from each would cost the
   * broker the square of the sessions. A base broker answers its whole list.
   */
  readonly probe: (timeoutMs: number) => Effect.Effect<void, RequestTimeout | ConnectionLost>
  /**
   * The asker's settling round trip at its own deadline (`ask-expiry-v1`,
   * Ask.ts): the probe's `list`, marked `settle: true` when the broker
   * granted `ask-expiry-v1` (never sent to one that did not), so its answer
   * comes after any reply to this session the broker accepted and still
   * holds parked — however long (src/broker/ParkedReplies.ts). True once
   * answered. Each time a wait passes unanswered (the first `timeoutMs`,
   * then what `keepWaiting` gave) `keepWaiting` runs, the request still
   * registered: it gives the next wait for the same answer in ms, or
   * `undefined` to stop waiting (false); its failure is the settle's.
   */
  readonly settle: <E>(
    timeoutMs: number,
    keepWaiting: Effect.Effect<number | undefined, E>
  ) => Effect.Effect<boolean, RequestTimeout | ConnectionLost | E>
  /** A `send`, or with `supervisor_send` a child's message to its supervisor. */
  readonly send: (request: SendRequest, timeoutMs: number, frameType?: SendFrameType) => Effect.Effect<Delivery, SendError>
  /**
   * Once the connection has closed: the sends (a child's `supervisor_send`
   * too) it had taken and not seen answered, in the order they were first
   * written (empty while open).
   */
  readonly unanswered: () => ReadonlyArray<UnansweredSend>
  /**
   * Writes sends another connection left unanswered, in their order, as one
   * batch (a `supervisor_send` addressed to this connection's supervisor,
   * `addressedTo`); a later `send` of the same message waits for that answer, or,
   * when it comes after the answer and within `keepMs` of the batch, gets it
   * without writing again. Call it before anything else sends on this
   * connection.
   */
  readonly resend: (sends: ReadonlyArray<UnansweredSend>, keepMs: number) => Effect.Effect<void, ConnectionLost>
  /**
   * Whether this connection wrote `request` (as `frameType`, default `send`) again after an earlier one lost it
   * (`resend`): an answer to it read here speaks only for a write after the loss, whoever waited for it.
   */
  readonly writtenAfterLoss: (request: SendRequest, frameType?: SendFrameType) => boolean
  /** `authorize_supervisor`: a capability for `childName`, or the restore of `capability` (C-SUP-8, C-SUP-15). */
  readonly authorize: (
    childName: string,
    capability: string | undefined,
    timeoutMs: number
  ) => Effect.Effect<string, SupervisorAuthorizationFailed | RequestTimeout | ConnectionLost>
  /** `cancel_message` (P71): true when the broker cancelled it. */
  readonly cancel: (messageId: string, timeoutMs: number) => Effect.Effect<boolean, RequestTimeout | ConnectionLost>
  /**
   * A topic request (`topics-v1`), answered by the broker; `TopicsUnavailable`
   * when the broker did not grant topics (C-TOP-16), and nothing is sent.
   */
  readonly topic: (
    frame: TopicRequestFrame,
    timeoutMs: number
  ) => Effect.Effect<TopicAnswer, TopicRequestError | TopicsUnavailable>
  /**
   * A result archive request (`results-v1`), answered by the broker;
   * `ResultsUnavailable` when the broker did not grant it, and nothing is sent.
   */
  readonly result: (
    frame: ResultRequestFrame,
    timeoutMs: number
  ) => Effect.Effect<ResultAnswer, ResultRequestError | ResultsUnavailable>
  /**
   * A question request (`questions-v1`), answered by the broker;
   * `QuestionsUnavailable` when the broker did not grant it, and nothing is sent.
   */
  readonly question: (
    frame: QuestionRequestFrame,
    timeoutMs: number
  ) => Effect.Effect<QuestionResultFrame, QuestionRequestError | QuestionsUnavailable>
  /** Frames that get no answer: presence, cancel_ask, receipts. Completes once the frame is handed over. */
  readonly post: (frame: object) => Effect.Effect<void, ConnectionLost>
  /**
   * Queues a frame that gets no answer and that nothing waits on (a receipt),
   * behind every frame queued before it, and returns at once: false when the
   * connection is closed and nothing was queued. A close that comes before
   * the frame is written loses it without a word.
   */
  readonly postLater: (frame: object) => boolean
  /**
   * Confirms (`received-v1`) what was read and left unconfirmed, as far as
   * the client's bound lets it now (`ClientSinks.confirmBound`); does
   * nothing when everything read is confirmed.
   */
  readonly confirmRead: Effect.Effect<void>
  /** Unregisters, then closes (C-BRK-30: forced after 2 s). */
  readonly close: Effect.Effect<void>
  /**
   * Drops the socket at once, without `unregister` (a failed liveness probe,
   * P96). Under `received-v1`, a message the reader took from the socket
   * before the drop and dispatches after it is not handed on, nor confirmed:
   * the broker keeps it (requeued, or withdrawn if cancelled). Does nothing
   * once `close` has begun: the close ends the socket
   * itself, within its 2 s (C-BRK-30), and a drop before then would lose the
   * confirmations it is still writing for what the session read.
   */
  readonly destroy: Effect.Effect<void>
}

/**
 * Receipts the broker itself writes about a message it dropped (`expired`,
 * `superseded`): like mail, it keeps them until the client confirms reading
 * them (broker/Custody.ts), so a batch carrying one is confirmed.
 */
const isBrokerNotice = (status: ReceiptStatus): boolean => status === "expired" || status === "superseded"

/**
 * Extensions every connection asks for: all the protocol defines, since this
 * client implements each of them (handled here, invisible to its users) —
 * except `observe-v1`, the broker's live view, which `ObserveClient`
 * (src/observe) asks for on a connection of its own.
 */
const CLIENT_FEATURES: ReadonlyArray<string> = EXTENSION_FEATURES.filter((feature) => feature !== OBSERVE_V1)

/** The sender's delivery choice carried by a forwarded message (`delivery-v1`). */
const deliveryOfMessage = (frame: MessageFrame): DeliveryChoice => ({
  delivery: frame.delivery ?? "steer",
  ...(frame.queueMode === undefined ? {} : { queueMode: frame.queueMode }),
  ...(frame.threadId === undefined ? {} : { threadId: frame.threadId })
})

/** A send's answer read after its send stopped waiting (`ClientSinks.lateAnswer`), as the send would have ended. */
const lateAnswer = (
  frame: Extract<BrokerFrame, { readonly type: "delivered" | "delivery_failed" | "delivery_queued" }>
): SendAnswer => {
  switch (frame.type) {
    case "delivered":
      return Exit.succeed({ messageId: frame.messageId, delivery: frame.delivery ?? "socket_delivered" })
    case "delivery_queued":
      return Exit.succeed({ messageId: frame.messageId, delivery: "staged", threadId: frame.threadId, deliverAt: frame.deliverAt })
    default:
      return Exit.fail(deliveryError({
        messageId: frame.messageId,
        code: frame.code ?? "",
        reason: frame.reason,
        retryable: frame.retryable ?? false
      }))
  }
}

/**
 * Dials, registers, and starts the reader. The connection lives in the
 * current Scope; closing the Scope closes it.
 */
export const openClientConnection = (
  request: RegisterRequest,
  sinks: ClientSinks
): Effect.Effect<ClientConnection, IntercomNotConnected, Scope.Scope> =>
  Effect.gen(function*() {
    const connection: Connection = yield* (request.dial ?? dialUnixSocket)(request.socketPath)
    const register = {
      type: "register",
      sessionId: request.sessionId,
      session: request.session,
      ...(request.scopeId === undefined ? {} : { scopeId: request.scopeId }),
      ...(request.group === undefined ? {} : { group: request.group }),
      ...(request.ephemeral === true ? { ephemeral: true } : {}),
      ...(request.ifFree === true ? { ifFree: true } : {}),
      ...(request.ifReleased === true ? { ifReleased: true } : {}),
      ...(request.instanceId === undefined ? {} : { instanceId: request.instanceId }),
      ...(request.supervisor?.ownerToken === undefined ? {} : { ownerToken: request.supervisor.ownerToken }),
      ...(request.supervisor?.grant === undefined ? {} : request.supervisor.grant),
      // The extensions this client implements itself, plus what its owner asked for.
      features: [...new Set([...CLIENT_FEATURES, ...request.features])]
    }
    const registered = yield* Effect.gen(function*() {
      yield* connection.writeAll([JSON.stringify(register)])
      const first = yield* connection.read
      const frame = decodeBrokerFrameText(first[0] ?? "")
      if (isFrameDecodeError(frame)) return yield* new IntercomNotConnected({ reason: frame.message })
      if (frame.type === "error") return yield* new IntercomNotConnected({ reason: frame.error })
      if (frame.type === "registration_failed") {
        return yield* new IntercomNotConnected({
          reason: frame.reason,
          ...(frame.code === SESSION_HELD || frame.code === SESSION_NOT_RELEASED ? { sessionHeld: true } : {}),
          ...(frame.code === SESSION_RELEASED_RECENTLY ? { sessionHeld: true, releasedRecently: true } : {})
        })
      }
      if (frame.type !== "registered") {
        return yield* new IntercomNotConnected({ reason: `broker answered "${frame.type}" before "registered"` })
      }
      return { frame, rest: first.slice(1) }
    }).pipe(
      Effect.catchTag("ConnectionClosed", (error) => Effect.fail(new IntercomNotConnected({ reason: error.message }))),
      Effect.catchTag("FrameTooLarge", (error) => Effect.fail(new IntercomNotConnected({ reason: error.message }))),
      Effect.catchTag("InvalidUtf8", (error) => Effect.fail(new IntercomNotConnected({ reason: error.message }))),
      Effect.timeoutOrElse({
        duration: Duration.millis(request.connectTimeoutMs),
        orElse: () => Effect.fail(new IntercomNotConnected({ reason: "Connection timeout" }))
      })
    )

    const granted: ReadonlySet<string> = new Set(registered.frame.features ?? [])
    const lists = new Map<string, Deferred.Deferred<SessionsPage, ConnectionLost>>()
    const sends = new PendingSends(request.lostOnTheWay)
    // A cancel let go unanswered (dropped past the bound, or cut off by the close) leaves its question's pair
    // reopened; one the close cuts off whose frame never left is withdrawn, as one its caller took back.
    const cancels = new PendingCancels(sinks.cancelAbandoned, sinks.cancelWithdrawn)
    const authorizations = new Map<
      string,
      { readonly childName: string; readonly answer: Deferred.Deferred<string, SupervisorAuthorizationFailed | ConnectionLost> }
    >()
    const topicRequests = new TopicRequests()
    const resultRequests = new ResultRequests()
    const questionRequests = new QuestionRequests()
    const closed = yield* Deferred.make<void>()
    /** The connection's Scope: fibers started after the handshake (the re-sent answers' grace) live in it. */
    const scope = yield* Effect.scope
    let open = true
    let takenOver: TakenOver | undefined
    // `received-v1`: frames read on this connection, `registered` included. Once a batch carrying messages
    // (or the broker's own `expired`/`superseded` notices) is in this process, the broker may forget them: the count tells it so
    // (broker/Custody.ts).
    const confirmsReceipt = granted.has(RECEIVED_V1)
    /** A broker that settles asks writes delivery details on every send answer (P41): a bare answer is a cancel's. */
    const settlesAsks = granted.has(ASK_EXPIRY_V1)
    /**
     * `close` has begun: the session is leaving, and a message read from now on reaches no one, so
     * nothing more is confirmed — the broker sends it to the session's next connection (known issue 8).
     */
    let leaving = false
    /**
     * The client dropped the socket itself (`destroy`: a failed liveness probe). Frames its reader had
     * already taken from the socket may still come through after; under `received-v1` they are the
     * broker's (unconfirmed: it requeues them, or withdraws what their sender cancelled meanwhile), so
     * they are not handed on, and nothing is confirmed on the dead link.
     */
    let dropped = false

    const dispatch = (frame: BrokerFrame): void => {
      switch (frame.type) {
        case "sessions": {
          const waiting = lists.get(frame.requestId)
          if (waiting === undefined) return // late or unknown: never answers a newer request (C-BRK-6)
          lists.delete(frame.requestId)
          Deferred.doneUnsafe(waiting, Exit.succeed(frame))
          return
        }
        case "delivered":
        case "delivery_failed": {
          // Cancel answers are bare: no delivery details (P71).
          const bare = frame.type === "delivered" ? frame.delivery === undefined : frame.code === undefined
          // A broker that does not settle asks may answer a send bare too (P41), in frame order: an abandoned send
          // of this id, written before the cancel that did not wait for it, takes the first (review revax AX-A1).
          const sendFirst = bare && !settlesAsks && sends.abandonedFor(frame.messageId)
          const cancel = bare && !sendFirst ? cancels.take(frame.messageId) : undefined
          if (cancel !== undefined) {
            sinks.cancelEnded(frame.messageId, frame.type === "delivered")
            Deferred.doneUnsafe(cancel.answer, Exit.succeed(frame.type === "delivered"))
            return
          }
          const pending = sends.take(frame.messageId)
          if (pending === undefined) {
            // Its send gave up waiting (the send timeout): an ask settling with the broker may still need it. Only an
            // answer with delivery details answers a send there: a broker that settles asks (`ask-expiry-v1`) writes
            // them (P41), and a bare one is a cancel's (P71) whose cancel was let go — never the ask's verdict (AP5).
            if (!bare) sinks.lateAnswer(frame.messageId, lateAnswer(frame), registered.frame.stateEpoch)
            return
          }
          const answer: SendAnswer = frame.type === "delivered"
            ? Exit.succeed<Delivery>({
              messageId: frame.messageId,
              delivery: frame.delivery ?? "socket_delivered",
              ...(pending.writtenAskTimeoutMs === undefined ? {} : { askTimeoutMs: pending.writtenAskTimeoutMs })
            })
            : Exit.fail(deliveryError({
              messageId: frame.messageId,
              code: frame.code ?? "",
              reason: frame.reason,
              retryable: frame.retryable ?? false
            }))
          // An abandoned send (every caller left: PendingSends.ts) has its answer read late, as one no send waits for;
          // one written again after a loss is read as its own retry would read it (afterLoss.ts, one rule for both).
          if (!sends.settle(pending, answer) && !bare) {
            sinks.lateAnswer(frame.messageId, pending.afterLoss ? answerAfterLoss(frame.messageId, answer) : answer, registered.frame.stateEpoch)
          }
          return
        }
        case "delivery_queued": {
          const pending = sends.take(frame.messageId)
          if (pending === undefined) {
            sinks.lateAnswer(frame.messageId, lateAnswer(frame), registered.frame.stateEpoch)
            return
          }
          const answer: SendAnswer = Exit.succeed<Delivery>({
            messageId: frame.messageId,
            delivery: "staged",
            threadId: frame.threadId,
            deliverAt: frame.deliverAt
          })
          if (!sends.settle(pending, answer)) sinks.lateAnswer(frame.messageId, answer, registered.frame.stateEpoch)
          return
        }
        case "message": {
          // Read while leaving, or dispatched after the client dropped the socket, unconfirmed: the broker gives it
          // to the session's next connection, or withdraws it if its sender cancelled it (`received-v1`), so it is
          // not handed on here too — two consumers would get it, or one a message its sender was told is cancelled.
          // Without the extension the broker counts it delivered: handed on, or it is lost.
          if ((leaving || dropped) && confirmsReceipt) return
          const message: InboundMessage = {
            from: frame.from,
            message: frame.message,
            ...(frame.askTimeoutMs === undefined ? {} : { askTimeoutMs: frame.askTimeoutMs }),
            ...(frame.channel === undefined ? {} : { channel: frame.channel }),
            ...(frame.replyError === undefined ? {} : { replyError: frame.replyError }),
            ...(frame.delivery === undefined ? {} : { delivery: deliveryOfMessage(frame) }),
            ...(frame.traceparent === undefined ? {} : { traceparent: frame.traceparent }),
            read: sinks.nextRead()
          }
          if (sinks.bounded()) confirmations.note(message, dispatching)
          sinks.message(message)
          return
        }
        case "supervisor_authorized":
        case "supervisor_authorization_failed": {
          const waiting = authorizations.get(frame.requestId)
          if (waiting === undefined) return
          authorizations.delete(frame.requestId)
          Deferred.doneUnsafe(
            waiting.answer,
            frame.type === "supervisor_authorized"
              ? Exit.succeed(frame.capability)
              : Exit.fail(new SupervisorAuthorizationFailed({ childName: waiting.childName, reason: frame.reason }))
          )
          return
        }
        case "session_joined":
          sinks.presence({ _tag: "Joined", session: frame.session })
          return
        case "presence_update":
          sinks.presence({ _tag: "Updated", session: frame.session })
          return
        case "session_left":
          sinks.presence({ _tag: "Left", sessionId: frame.sessionId })
          return
        case "message_receipt":
          sinks.control({ _tag: "Receipt", from: frame.from, receipt: frame.receipt })
          return
        case "message_control":
          sinks.control({ _tag: "Control", from: frame.from, control: frame.control, read: sinks.lastRead() })
          return
        case "topic_published":
        case "topic_subscribed":
        case "topic_unsubscribed":
        case "topic_state":
        case "topic_failed":
          topicRequests.settle(frame)
          return
        case "topic_record":
          sinks.topic(frame.entry)
          return
        case "result_stored":
        case "result_listed":
        case "result_page":
        case "result_failed":
          resultRequests.settle(frame)
          return
        case "question_result":
        case "question_failed":
          questionRequests.settle(frame)
          return
        case "question_answered":
          sinks.question({ _tag: "Answered", questionId: frame.questionId, answer: frame.answer, answeredAt: frame.answeredAt })
          return
        case "question_cancelled":
          sinks.question({ _tag: "Cancelled", questionId: frame.questionId, cancelledAt: frame.cancelledAt })
          return
        case "ask_expired":
          // Handed on even while leaving: a copy the broker gives the next connection too finds no wait.
          sinks.askExpired(frame.messageId)
          return
        case "ask_answered_elsewhere":
          sinks.control({ _tag: "AnsweredElsewhere", messageId: frame.messageId, replyId: frame.replyId })
          return
        case "taken_over":
          takenOver = { sessionId: frame.sessionId, pid: frame.pid }
          return
        default:
          return // registered again, error, health_ok: nothing waits for them here
      }
    }

    // Every frame goes through the outbox, in order; the frames of one turn go out in one write (Outbox.ts).
    const outbox = new Outbox(connection)
    const writeTexts = (texts: ReadonlyArray<string>, operation: string) => outbox.write(texts, operation)
    const writeText = (text: string, operation: string, takenBack?: () => void) =>
      Effect.suspend(() =>
        open ? outbox.write([text], operation, takenBack) : Effect.fail(new ConnectionLost({ operation }))
      )
    const write = (frame: object, operation: string) => Effect.suspend(() => writeText(JSON.stringify(frame), operation))

    let framesRead = 1
    /** Frames read and not yet confirmed: the client's bound kept them back when they came (ConfirmationPolicy.ts). */
    let unconfirmed = false
    /** The frame number (as `framesRead` counts) of the frame being dispatched. */
    let dispatching = 0
    // Written by a fiber of their own: the reader never waits to write (Confirmations.ts).
    const confirmations = new Confirmations((frames) => writeText(JSON.stringify({ type: "received", frames }), "received"))
    /** Owes the broker the count of frames read that the client's bound lets go; what is left stays unconfirmed. */
    const confirm = Effect.sync(() => {
      const frames = confirmations.confirmable(sinks.confirmBound(), framesRead)
      unconfirmed = frames < framesRead
      confirmations.owe(frames)
    })
    const handle = (texts: ReadonlyArray<string>) =>
      Effect.suspend(() => {
        let messages = false
        // The callers these answers resume write from inside the dispatch: their frames go out as one write.
        outbox.holdWhile(() => {
          dispatching = framesRead
          for (const text of texts) {
            dispatching++
            const frame = decodeBrokerFrameText(text)
            if (isFrameDecodeError(frame)) continue
            if (frame.type === "message" || (frame.type === "message_receipt" && isBrokerNotice(frame.receipt.status))) {
              messages = true
            }
            dispatch(frame)
          }
        })
        framesRead += texts.length
        // What the routing found worth a warning (a message under a reused id dropped as a copy), logged here.
        const warnings = messages ? sinks.warnings() : undefined
        if (!messages || !confirmsReceipt || leaving || dropped) return warnings ?? Effect.void
        // While no session takes messages (its generation retired) they wait in this process, where a close
        // would lose them, so they stay the broker's until a session takes them again (known issue 9); under
        // `confirmWhenHandled`, so do the oldest unhandled message and everything after it (known issue 21).
        return warnings === undefined ? confirm : Effect.andThen(warnings, confirm)
      })

    const failPending = Effect.sync(() => {
      open = false
      // Before anything below is failed: what is still queued is never written, and its writers are told so.
      outbox.drop()
      for (const [, waiting] of lists) Deferred.doneUnsafe(waiting, Exit.fail(new ConnectionLost({ operation: "list" })))
      lists.clear()
      sends.failAll()
      // No answer came: whether the broker carried the cancel out is unknown, so each is told abandoned and the
      // question's pair stays reopened — a copy a next connection reads passes once (a possible duplicate, never a loss)
      // — unless its frame surely never left: the outbox's queue is dropped first, marking each cancel still in
      // it unsent (`takenBack`), and such a cancel is told withdrawn, as one its caller took back (helper cancelc).
      cancels.failAll()
      for (const [, waiting] of authorizations) {
        Deferred.doneUnsafe(waiting.answer, Exit.fail(new ConnectionLost({ operation: "authorize" })))
      }
      authorizations.clear()
      topicRequests.failAll()
      resultRequests.failAll()
      questionRequests.failAll()
    })

    const shutDown = failPending.pipe(Effect.andThen(Deferred.succeed(closed, undefined)))
    // Also a finalizer of the connection's Scope, registered before the reader is forked: a reader
    // interrupted before it ever ran runs no `ensuring`, and nothing may write to the socket once
    // the Scope has detached it (such a write waits forever).
    yield* Effect.addFinalizer(() => shutDown)
    yield* Effect.forkScoped(outbox.run)
    const confirmer = yield* Effect.forkScoped(confirmations.run)
    const reader = yield* Effect.forkScoped(
      handle(registered.rest).pipe(
        Effect.andThen(Effect.forever(Effect.flatMap(connection.read, handle), { disableYield: true })),
        Effect.ignore,
        Effect.ensuring(shutDown)
      )
    )

    /**
     * One `list` request: a base answer, or one page (`list-page-v1`) starting after `cursor`, of at
     * most `limit` sessions (sent only to a broker that granted `list-page-v1`); `settle` marks the
     * asker's settling round trip (sent only to a broker that granted `ask-expiry-v1`).
     */
    const listRequest = (
      cursor: string | undefined,
      group: string | undefined,
      limit?: number,
      settle = false
    ) => {
      const requestId = randomUUID()
      const answer = Deferred.makeUnsafe<SessionsPage, ConnectionLost>()
      lists.set(requestId, answer)
      const frame = {
        type: "list",
        requestId,
        ...(cursor === undefined ? {} : { cursor }),
        ...(group === undefined ? {} : { group }),
        ...(limit === undefined || !granted.has(LIST_PAGE_V1) ? {} : { limit }),
        ...(settle && granted.has(ASK_EXPIRY_V1) ? { settle: true } : {})
      }
      return { answer, written: write(frame, "list"), forget: () => lists.delete(requestId) }
    }
    const listPage = (
      timeoutMs: number,
      cursor: string | undefined,
      group: string | undefined,
      limit?: number
    ) =>
      Effect.suspend(() => {
        const { answer, forget, written } = listRequest(cursor, group, limit)
        return writeThenAwait(written, answer, timeoutMs, "list", forget).pipe(
          Effect.onInterrupt(() => Effect.sync(forget))
        )
      })

    // Every live session: page by page when the broker pages (each page has its own timeout).
    const list: ClientConnection["list"] = (timeoutMs, group) =>
      Effect.gen(function*() {
        const sessions: Array<SessionInfo> = []
        const seen = new Set<string>()
        let cursor: string | undefined
        do {
          const page: SessionsPage = yield* listPage(timeoutMs, cursor, group)
          for (const session of page.sessions) {
            if (seen.has(session.id)) continue
            seen.add(session.id)
            sessions.push(session)
          }
          cursor = page.nextCursor
        } while (cursor !== undefined)
        return sessions
      })

    const probe: ClientConnection["probe"] = (timeoutMs) => Effect.asVoid(listPage(timeoutMs, undefined, undefined, 1))
    // The settling `list` stays registered across its waits (a broker may hold its answer: keepWaiting decides).
    const settle: ClientConnection["settle"] = <E>(timeoutMs: number, keepWaiting: Effect.Effect<number | undefined, E>) =>
      Effect.suspend(() => {
        const { answer, forget, written } = listRequest(undefined, undefined, 1, true)
        const onUnanswered = (answered: Option.Option<SessionsPage>): Effect.Effect<boolean, ConnectionLost | E> =>
          answered._tag === "Some"
            ? Effect.succeed(true)
            : Effect.flatMap(keepWaiting, (waitMs) =>
              waitMs === undefined
                ? Effect.succeed(false)
                : Effect.flatMap(Effect.timeoutOption(Deferred.await(answer), waitMs), onUnanswered))
        return Effect.timeoutOption(Effect.andThen(written, Deferred.await(answer)), timeoutMs).pipe(
          Effect.flatMap(onUnanswered),
          Effect.ensuring(Effect.sync(forget))
        )
      })

    const send: ClientConnection["send"] = (request, timeoutMs, frameType = "send") =>
      Effect.suspend(() => {
        const messageId = request.message.id
        const signature = signatureOf(request, frameType)
        const inFlight = sends.get(messageId)
        if (inFlight !== undefined) {
          // C-BRK-8: the same send twice shares one answer; a different one is refused.
          if (inFlight.signature !== signature) {
            return Effect.fail(
              deliveryError({
                messageId,
                code: DeliveryCode.MessageIdReuse,
                reason: `Message id ${messageId} is already pending with a different target or payload`,
                retryable: false
              })
            )
          }
          // A caller that gives up leaves (`leave`); the last to leave abandons the send, as its first writer's
          // timeout does: it stays, kept by a close for the next connection to write again, and its answer, read
          // later, is handed to `sinks.lateAnswer`, for an ask settling with the broker (PendingSends.ts).
          return awaitAnswer(sends.join(inFlight), timeoutMs, "send", () => sends.leave(inFlight)).pipe(
            Effect.onInterrupt(() => Effect.sync(() => sends.leave(inFlight)))
          )
        }
        // A retry after a loss whose re-send was answered before it came back: that answer is its own.
        const kept = sends.collect(messageId, signature)
        if (kept !== undefined) return kept
        return Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const text = sendFrameText(request, frameType, granted, now)
          if (typeof text !== "string") return Effect.fail(text)
          if (!open) return Effect.fail(new ConnectionLost({ operation: "send" }))
          // A cancel of this id whose callers all left, still detached for its late answer, must not take this
          // send's bare answer (P41) for its own (review revai AI3): it goes, its question's pair left reopened.
          cancels.dropDetached(messageId)
          const pending = sends.begin(request, frameType, signature, now)
          // A write cut short by the connection's close leaves the send in the table, so the close
          // keeps it among the unanswered, in its place; a caller that gives up before the frame is
          // written withdraws it (the broker never saw it, and a later send with the id must not join).
          // One that gives up after leaves (abandons) it: see the joined case above.
          // Forgotten only when the outbox really took the frame back: one in a write the socket had not taken
          // whole may still reach the broker, and is left (abandoned) for the close to keep (review revav AV4).
          let withdrawn = false
          const writing = writeText(text, "send", () => {
            withdrawn = true
          }).pipe(
            Effect.onInterrupt(() => Effect.sync(() => withdrawn ? sends.forget(pending) : undefined)),
            // A write that failed before the close was read (the transport refused it) ends this caller's wait:
            // it leaves, so a retry that joins and times out abandons the send rather than leaving a waiter
            // no one is behind (review revax AX-A3); never written, it is forgotten.
            Effect.tapError(() => Effect.sync(() => withdrawn ? sends.forget(pending) : sends.leave(pending)))
          )
          // The question of an ask settling with the broker is never taken back by its caller's timeout: written
          // in the connection's Scope, it goes out when the writes ahead of it do, or stays in the table for the
          // close to keep, whatever ends that write (review revax AX-A2: taken back, it was forgotten — lost after
          // a drop, and "delivered" to the settle).
          const written = sinks.awaitsVerdict(messageId)
            ? Effect.flatMap(Effect.forkIn(writeText(text, "send"), scope), Fiber.join)
            : writing
          return writeThenAwait(
            written,
            pending.answer,
            timeoutMs,
            "send",
            () => sends.leave(pending)
          ).pipe(Effect.onInterrupt(() => Effect.sync(() => sends.leave(pending))))
        })
      })

    const resend: ClientConnection["resend"] = (lost, keepMs) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        if (!open) return Effect.fail(new ConnectionLost({ operation: "send" }))
        const { messageIds, texts } = sends.retake(
          addressedTo(lost, registered.frame.supervisorSessionId),
          (send) => sendFrameText(send.request, send.frameType, granted, now),
          now
        )
        if (texts.length === 0) return Effect.void
        // Answers nobody came back for are dropped after `keepMs`, on the Clock; with the connection, at its close.
        const release = Effect.sleep(Duration.millis(keepMs)).pipe(Effect.andThen(Effect.sync(() => sends.release(messageIds))))
        // Cut short, the batch stays in the table: this connection's close keeps it, in order, for the next.
        return Effect.forkIn(release, scope).pipe(Effect.andThen(writeTexts(texts, "send")))
      })

    const authorize: ClientConnection["authorize"] = (childName, capability, timeoutMs) =>
      Effect.suspend(() => {
        if (!granted.has(SUPERVISOR_V1)) {
          return Effect.fail(new SupervisorAuthorizationFailed({ childName, reason: SUPERVISOR_UNAVAILABLE }))
        }
        const requestId = randomUUID()
        const answer = Deferred.makeUnsafe<string, SupervisorAuthorizationFailed | ConnectionLost>()
        authorizations.set(requestId, { childName, answer })
        const frame = { type: "authorize_supervisor", requestId, childName, ...(capability === undefined ? {} : { capability }) }
        return writeThenAwait(write(frame, "authorize"), answer, timeoutMs, "authorize", () => authorizations.delete(requestId)).pipe(
          Effect.onInterrupt(() => Effect.sync(() => authorizations.delete(requestId)))
        )
      })

    const cancel: ClientConnection["cancel"] = (messageId, timeoutMs) =>
      Effect.acquireUseRelease(
        Effect.sync(() => {
          // A second cancel of the same id while the first waits shares its answer (and its ConnectionLost).
          const entered = cancels.enter(messageId)
          // Told as the frame goes, not before (a send of the id waited above): the broker may write the
          // question the reply answered again ahead of the cancel's answer (RecentMessages.cancelWritten).
          if (entered.first) sinks.cancelWritten(messageId)
          return entered
        }),
        ({ first, pending }) =>
          Effect.flatMap(Clock.currentTimeMillis, (start) =>
            (first
              ? writeThenAwait(
                // From the moment its frame is queued it may reach the broker, unless the outbox takes it back.
                Effect.suspend(() => {
                  if (!open) return Effect.fail(new ConnectionLost({ operation: "cancel" }))
                  pending.maybeSent = true
                  const text = JSON.stringify({ type: "cancel_message", messageId })
                  return outbox.write([text], "cancel", () => (pending.maybeSent = false))
                }),
                pending.answer,
                timeoutMs,
                "cancel",
                () => undefined
              )
              : awaitAnswer(pending.answer, timeoutMs, "cancel", () => undefined)).pipe(
                // Joined to a cancel whose frame was taken back unwritten: it writes its own, within what is left of its time.
                Effect.flatMap((answer) =>
                  answer !== "withdrawn"
                    ? Effect.succeed(answer)
                    : Effect.flatMap(Clock.currentTimeMillis, (now) => cancelAfterSend(messageId, Math.max(0, timeoutMs - (now - start))))
                )
              )),
        // Each caller leaves as it ends (answered, timed out, given up, its write failed). The last to leave
        // without an answer leaves the cancel detached (PendingCancels.ts): the broker may have carried it
        // out and write the question it asks again ahead of its late answer, so the question's pair stays
        // reopened until that answer is read (`dispatch`, which also keeps it from a send's answers, review revag
        // AG3), the connection closes, or newer detached cancels push it out (review revag AG1: a duplicate costs
        // less than a lost question; revai AI4). One whose frame was never written (its caller gave up while it
        // was queued: the outbox took it back; not one already in a write the socket had not taken whole, which
        // goes out as that write ends) reached no broker: it ends with its first caller, the question a repeat
        // again unless something else keeps the pair open (review revaj AJ1, revam AM1), and a later cancel writes its
        // own (review revai AI1, AI2); a caller that joined it writes the cancel anew (helper cancelb).
        ({ first, pending }) =>
          Effect.sync(() => {
            if (cancels.leave(messageId, pending, first) === "stays") return
            // Closes the pair unless something else keeps it open: an earlier cancel may have reached the broker,
            // or a reply's loss read meanwhile means the question may be asked again (review revaj AJ1, revam AM1).
            sinks.cancelWithdrawn(messageId)
            if (pending.waiters > 0) Deferred.doneUnsafe(pending.answer, Exit.succeed("withdrawn"))
          })
      )

    /**
     * A base broker's bare `delivered` to a send (P41) cannot be told from a cancel's answer (P71): the
     * cancel of a message whose send still waits here is written once that send is answered (or the
     * connection closes), at most `timeoutMs` later, so each takes its own answer.
     */
    const cancelAfterSend: ClientConnection["cancel"] = (messageId, timeoutMs) =>
      Effect.suspend(() => {
        const inFlight = sends.get(messageId)
        // A send nobody waits for any more (its callers timed out: the usual reason to cancel) is not waited for
        // either: the broker that never answered it may never do, and it orders the cancel after the send it read
        // (review revav AV1). Its answer and the cancel's are told apart by their details, or, from a broker that
        // may write bare send answers, by their order (`dispatch`; review revax AX-A1).
        if (inFlight === undefined || sends.isAbandoned(inFlight)) return cancel(messageId, timeoutMs)
        return Deferred.await(inFlight.answer).pipe(
          Effect.exit, // the send's outcome is its caller's
          Effect.timeoutOrElse({
            duration: Duration.millis(timeoutMs),
            orElse: () => Effect.fail(new RequestTimeout({ operation: "cancel", timeoutMs }))
          }),
          Effect.andThen(cancelAfterSend(messageId, timeoutMs))
        )
      })

    const close = Effect.gen(function*() {
      leaving = true
      // What was read before the close began is confirmed ahead of `unregister`, and nothing after it.
      yield* Fiber.interrupt(confirmer)
      if (open) {
        // The whole orderly close is bounded: a broker that stops reading cannot hold it up.
        yield* confirmations.flush.pipe(
          Effect.andThen(write({ type: "unregister" }, "unregister")),
          Effect.ignore,
          Effect.andThen(connection.end),
          Effect.andThen(Deferred.await(closed)),
          Effect.timeoutOption(Duration.seconds(2))
        )
      }
      yield* Fiber.interrupt(reader)
      yield* connection.destroy
    })

    return {
      sessionId: registered.frame.sessionId,
      features: granted,
      supervisorSessionId: registered.frame.supervisorSessionId,
      stateEpoch: registered.frame.stateEpoch,
      closed: Deferred.await(closed),
      takenOver: () => takenOver,
      list,
      probe,
      settle,
      send,
      unanswered: () => sends.unanswered(),
      resend,
      writtenAfterLoss: (request, frameType = "send") =>
        sends.writtenAfterLoss(request.message.id, signatureOf(request, frameType)),
      authorize,
      cancel: cancelAfterSend,
      topic: (frame, timeoutMs) =>
        granted.has(TOPICS_V1)
          ? topicRequests.request(frame, (text) => writeText(text, "topic"), timeoutMs)
          : Effect.fail(new TopicsUnavailable()),
      result: (frame, timeoutMs) =>
        granted.has(RESULTS_V1)
          ? resultRequests.request(frame, (text) => writeText(text, "result"), timeoutMs)
          : Effect.fail(new ResultsUnavailable()),
      question: (frame, timeoutMs) =>
        granted.has(QUESTIONS_V1)
          ? questionRequests.request(frame, (text) => writeText(text, "question"), timeoutMs)
          : Effect.fail(new QuestionsUnavailable()),
      post: (frame) => write(frame, "post"),
      postLater: (frame) => open && outbox.post([JSON.stringify(frame)]),
      confirmRead: Effect.suspend(() => unconfirmed && !leaving && !dropped ? confirm : Effect.void),
      close,
      // A probe that times out while the close waits for the broker must not cut that wait short.
      destroy: Effect.suspend(() => {
        if (leaving) return Effect.void
        dropped = true
        return connection.destroy
      })
    } satisfies ClientConnection
  })
