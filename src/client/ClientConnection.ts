/**
 * One registered connection to a broker: dial and register (RegisterHandshake.ts),
 * then a reader fiber that routes answers to the requests waiting for them (by
 * `requestId` for lists, by message id for sends and cancels) and everything
 * else to the client's sinks (ConnectionReader.ts). When the socket closes,
 * every request still waiting fails with `ConnectionLost` — an in-flight send
 * never vanishes silently. The reader never waits to write: its `received-v1`
 * confirmations are written by a fiber of their own (Confirmations.ts). Every
 * write, from whichever fiber, goes through the connection's outbox, in order,
 * which never starts a transport write while one waits (a `Connection` takes
 * one at a time) and writes a turn's receipts together (Outbox.ts).
 *
 * This module owns the connection's lifetime: it puts the parts together,
 * forks their fibers (outbox, confirmations, reader) in the connection's
 * Scope, and owns the one close that fails every part's waiting requests
 * (`failPending`), the orderly `close` and the `destroy`. The parts: the write
 * side and its `open` flag (ConnectionWrites.ts), the reader's dispatch and
 * state (ConnectionReader.ts), the `list`s, probe and settle (ListRequests.ts),
 * sends, re-sends and cancels with their answers (ConnectionSends.ts), the
 * supervisor's authorizations (AuthorizeRequests.ts), and the topic, result and
 * question requests (TopicRequests.ts, ResultRequests.ts, QuestionRequests.ts).
 */
import { Deferred, Duration, Effect, Fiber, type Scope } from "effect"
import { QUESTIONS_V1, RECEIVED_V1, RESULTS_V1, TOPICS_V1 } from "../protocol/features.ts"
import type { QuestionResultFrame } from "../protocol/questions.ts"
import type { SessionInfo } from "../protocol/frames.ts"
import type { Connection } from "../transport/Connection.ts"
import { makeAuthorizeRequests } from "./AuthorizeRequests.ts"
import { Confirmations } from "./Confirmations.ts"
import { makeConnectionReader } from "./ConnectionReader.ts"
import { makeConnectionSends } from "./ConnectionSends.ts"
import { ConnectionWrites } from "./ConnectionWrites.ts"
import { dialUnixSocket } from "./Dialer.ts"
import {
  type ConnectionLost,
  type IntercomNotConnected,
  type RequestTimeout,
  ResultsUnavailable,
  QuestionsUnavailable,
  type SupervisorAuthorizationFailed,
  type TakenOver,
  TopicsUnavailable
} from "./errors.ts"
import type { ClientSinks, Delivery } from "./events.ts"
import { makeListRequests } from "./ListRequests.ts"
import type { UnansweredSend } from "./PendingSends.ts"
import { type QuestionRequestError, type QuestionRequestFrame, QuestionRequests } from "./QuestionRequests.ts"
import { register, type RegisterRequest } from "./RegisterHandshake.ts"
import { type ResultAnswer, type ResultRequestError, type ResultRequestFrame, ResultRequests } from "./ResultRequests.ts"
import type { SendError, SendFrameType, SendRequest } from "./requests.ts"
import { type TopicAnswer, type TopicRequestError, type TopicRequestFrame, TopicRequests } from "./TopicRequests.ts"

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
 * Dials, registers, and starts the reader. The connection lives in the
 * current Scope; closing the Scope closes it.
 */
export const openClientConnection = (
  request: RegisterRequest,
  sinks: ClientSinks
): Effect.Effect<ClientConnection, IntercomNotConnected, Scope.Scope> =>
  Effect.gen(function*() {
    const connection: Connection = yield* (request.dial ?? dialUnixSocket)(request.socketPath)
    const registered = yield* register(connection, request)

    const granted: ReadonlySet<string> = new Set(registered.frame.features ?? [])
    const closed = yield* Deferred.make<void>()
    /** The connection's Scope: fibers started after the handshake (the re-sent answers' grace) live in it. */
    const scope = yield* Effect.scope
    const writes = new ConnectionWrites(connection)
    const lists = makeListRequests(granted, writes)
    const sends = makeConnectionSends({ registered, granted, lostOnTheWay: request.lostOnTheWay, sinks, writes, scope })
    const authorizations = makeAuthorizeRequests(granted, writes)
    const topicRequests = new TopicRequests()
    const resultRequests = new ResultRequests()
    const questionRequests = new QuestionRequests()
    // Written by a fiber of their own: the reader never waits to write (Confirmations.ts).
    const confirmations = new Confirmations((frames) => writes.writeText(JSON.stringify({ type: "received", frames }), "received"))
    const reading = makeConnectionReader({
      sinks,
      confirmsReceipt: granted.has(RECEIVED_V1),
      writes,
      confirmations,
      lists,
      sends,
      authorizations,
      topicRequests,
      resultRequests,
      questionRequests
    })

    const failPending = Effect.sync(() => {
      // Before anything below is failed: what is still queued is never written, and its writers are told so.
      writes.shut()
      lists.failAll()
      sends.failAll()
      authorizations.failAll()
      topicRequests.failAll()
      resultRequests.failAll()
      questionRequests.failAll()
    })

    const shutDown = failPending.pipe(Effect.andThen(Deferred.succeed(closed, undefined)))
    // Also a finalizer of the connection's Scope, registered before the reader is forked: a reader
    // interrupted before it ever ran runs no `ensuring`, and nothing may write to the socket once
    // the Scope has detached it (such a write waits forever).
    yield* Effect.addFinalizer(() => shutDown)
    yield* Effect.forkScoped(writes.outbox.run)
    const confirmer = yield* Effect.forkScoped(confirmations.run)
    const reader = yield* Effect.forkScoped(
      reading.handle(registered.rest).pipe(
        Effect.andThen(Effect.forever(Effect.flatMap(connection.read, reading.handle), { disableYield: true })),
        Effect.ignore,
        Effect.ensuring(shutDown)
      )
    )

    const close = Effect.gen(function*() {
      reading.leave()
      // What was read before the close began is confirmed ahead of `unregister`, and nothing after it.
      yield* Fiber.interrupt(confirmer)
      if (writes.open) {
        // The whole orderly close is bounded: a broker that stops reading cannot hold it up.
        yield* confirmations.flush.pipe(
          Effect.andThen(writes.write({ type: "unregister" }, "unregister")),
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
      takenOver: reading.takenOver,
      list: lists.list,
      probe: lists.probe,
      settle: lists.settle,
      send: sends.send,
      unanswered: sends.unanswered,
      resend: sends.resend,
      writtenAfterLoss: sends.writtenAfterLoss,
      authorize: authorizations.authorize,
      cancel: sends.cancel,
      topic: (frame, timeoutMs) =>
        granted.has(TOPICS_V1)
          ? topicRequests.request(frame, (text) => writes.writeText(text, "topic"), timeoutMs)
          : Effect.fail(new TopicsUnavailable()),
      result: (frame, timeoutMs) =>
        granted.has(RESULTS_V1)
          ? resultRequests.request(frame, (text) => writes.writeText(text, "result"), timeoutMs)
          : Effect.fail(new ResultsUnavailable()),
      question: (frame, timeoutMs) =>
        granted.has(QUESTIONS_V1)
          ? questionRequests.request(frame, (text) => writes.writeText(text, "question"), timeoutMs)
          : Effect.fail(new QuestionsUnavailable()),
      post: (frame) => writes.write(frame, "post"),
      postLater: (frame) => writes.postLater(frame),
      confirmRead: reading.confirmRead,
      close,
      // A probe that times out while the close waits for the broker must not cut that wait short.
      destroy: Effect.suspend(() => reading.drop() ? connection.destroy : Effect.void)
    } satisfies ClientConnection
  })
