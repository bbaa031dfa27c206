/**
 * Size: one concept — the service: the options' timings, the hubs and the
 * sinks each connection's reader feeds, the concerns' objects, and the
 * operations over them (about 520 lines, half of them this header and the
 * service object, a quarter the class's JSDoc examples). Each concern is its
 * own module: when connections may confirm what they read
 * ConfirmationPolicy.ts, the models models.ts, supervisor grants
 * SupervisorGrants.ts, late verdicts on asks LateVerdicts.ts, topics ClientTopics.ts, the result archive
 * ClientResults.ts, durable questions ClientQuestions.ts, health health.ts,
 * the takeover and its take-back ClientTakeover.ts, re-sending what a
 * connection lost Resending.ts, the departures read and the membership
 * reconciliation ClientMembership.ts (the view MembershipView.ts), the
 * broker's state epoch StateEpochs.ts; one connection and the close of its
 * tables are ClientConnection.ts's (its parts: ConnectionReader.ts,
 * ConnectionWrites.ts, ConnectionSends.ts, ListRequests.ts,
 * AuthorizeRequests.ts, RegisterHandshake.ts), the unanswered sends PendingSends.ts's, the
 * unhandled messages UnhandledMessages.ts's, the receipts kept for the next
 * connection KeptReceipts.ts's, an asker's settling round trip
 * SettleRoundTrip.ts's.
 *
 * `IntercomClient`: the programmatic entry point for Effect programs.
 *
 * - Lazy: nothing connects until the first operation; concurrent first uses
 *   share one attempt (C-TOOL-14).
 * - Auto-spawns the broker when none answers (P93).
 * - Reconnects after a drop with capped exponential backoff and jitter,
 *   re-registering the same session id with what the session had announced
 *   (name, status, model, requested features); a liveness probe (P96) turns a
 *   silent broker into a reconnect. The owner's `shouldReconnect` is asked
 *   before each attempt the client makes by itself.
 * - Except after a takeover (`taken_over`, `takeover-v1`): the client stays
 *   unconnected, every operation and `whenTakenOver` fail with
 *   `IntercomNotConnected` saying so, and where the broker granted
 *   `reclaim-v1` the client takes its id back only once it is free or given
 *   up (ClientTakeover.ts).
 * - Each reconnect is announced on `reconnects` once the new connection is
 *   live: the broker may be a new one that never knew the sessions of the
 *   last, and a session waiting on one of them checks it is still there.
 *   When the broker says which state it holds (`state-epoch-v1`) and it is
 *   not the one before (a memory-mode broker restarted), `stateLost` says so
 *   first, with the asks and queued mail of this client that went with it
 *   (StateEpochs.ts), and a warning is logged; nothing is sent again.
 * - Once `rejoinGraceMs` after a reconnect is over, the client lists the
 *   sessions and publishes on `presenceEvents` the departures and joins the
 *   broker's feed could not tell the new connection (ClientMembership.ts,
 *   MembershipView.ts).
 * - A send in flight when the connection drops is sent again, with the same
 *   message id, once the client has reconnected, first thing on the new
 *   connection; it fails with `ConnectionLost` (outcome unknown) only if no
 *   connection comes back within `REPLAY_WINDOW_MS` (or the client is
 *   closed), never silently. Just
 *   after a reconnect, a send whose target is not found is retried for
 *   `rejoinGraceMs` before the failure stands (Resending.ts).
 * - A message delivered twice (a durable broker killed between writing it
 *   and forgetting it, docs/store.md; or sent again after a reconnect because
 *   it was not confirmed) reaches `messages` once. One dropped so whose own
 *   timestamp differs from the one passed on (most likely a new message
 *   under a reused id) is counted in `status` and logged once per pair.
 *
 * The connection's lifetime — attempt, adopt, reconnect, take back,
 * disconnect — and the connection state it shares are ConnectionLifetime.ts's:
 * this module reads that state only through `ConnectionLifetime`.
 */
import { Clock, Context, Effect, Exit, Layer, PubSub, Scope, Stream } from "effect"
import * as path from "node:path"
import { normalizeGroup } from "../config/group.ts"
import { isProcessAlive, readPidFile } from "../config/pidFile.ts"
import { clampPresence } from "../protocol/limits.ts"
import type { TopicEntry } from "../protocol/topics.ts"
import { ClientMembership } from "./ClientMembership.ts"
import { ClientQuestions } from "./ClientQuestions.ts"
import { listResults, readResult, storeResult } from "./ClientResults.ts"
import { ClientTopics } from "./ClientTopics.ts"
import { ConfirmationPolicy } from "./ConfirmationPolicy.ts"
import { makeConnectionLifetime } from "./ConnectionLifetime.ts"
import { type IntercomOptionError, RequestTimeout } from "./errors.ts"
import type { ControlEvent, InboundMessage, PresenceEvent, QuestionEvent } from "./events.ts"
import { presenceFrame } from "./health.ts"
import { KeptReceipts } from "./KeptReceipts.ts"
import type { IntercomClientService } from "./models.ts"
import { checkClientOptions, type IntercomClientOptions } from "./options.ts"
import { RecentControls } from "./RecentControls.ts"
import { describeReusedDrop, RecentMessages } from "./RecentMessages.ts"
import { SUPERVISOR_TO } from "./requests.ts"
import { settleRoundTrip } from "./SettleRoundTrip.ts"
import { LateVerdicts } from "./LateVerdicts.ts"
import type { SendAnswer } from "./PendingSends.ts"
import { type BrokerStateLost, StateEpochs } from "./StateEpochs.ts"
import { SupervisorGrants } from "./SupervisorGrants.ts"
import { tracedSend } from "./tracing.ts"
import { makeUnhandledMessages } from "./UnhandledMessages.ts"

/** The service interface and its models live in `models.ts`; re-exported for existing importers. */
export type { ClientError, ClientStatus, IntercomClientService, PresenceUpdate, WithheldConfirmations } from "./models.ts"

/** After a takeover, how often the client asks to take its id back (ClientTakeover.ts); re-exported for existing importers. */
export { RECLAIM_INTERVAL_MS } from "./ClientTakeover.ts"

/** The reason once `shouldReconnect` said no (ConnectionLifetime.ts); re-exported for existing importers. */
export { RECONNECT_DECLINED } from "./ConnectionLifetime.ts"

const make = (
  options: IntercomClientOptions
): Effect.Effect<IntercomClientService, IntercomOptionError, Scope.Scope> =>
  Effect.gen(function*() {
    // What the broker would refuse at every connect is refused here, once, before any dial or spawn.
    yield* checkClientOptions(options)
    const clientScope = yield* Effect.scope
    // Connections and their fibers live in a child Scope forked before the `disconnect`
    // finalizer is added, so closing the client runs `disconnect` (unregister) first.
    const connectionsScope = yield* Scope.fork(clientScope)
    const connectTimeoutMs = options.connectTimeoutMs ?? 10_000
    const sendTimeoutMs = options.sendTimeoutMs ?? 10_000
    const listTimeoutMs = options.listTimeoutMs ?? 5_000
    const livenessIntervalMs = options.livenessIntervalMs ?? 30_000
    const livenessTimeoutMs = Math.min(options.livenessTimeoutMs ?? 5_000, livenessIntervalMs)
    const rejoinGraceMs = options.rejoinGraceMs ?? 10_000

    // Read and not yet handled; a consumer interrupted mid-message leaves it to the next (known issue 15).
    const unhandled = yield* makeUnhandledMessages
    const presenceHub = yield* PubSub.unbounded<PresenceEvent>()
    const controlHub = yield* PubSub.unbounded<ControlEvent>()
    const topicHub = yield* PubSub.unbounded<TopicEntry>()
    // A durable broker killed between writing a message and forgetting it delivers it again after its restart,
    // and a reconnect brings again everything not confirmed: the client remembers all of that (RecentMessages.ts).
    // A cancel or supersede the broker wrote and this client never confirmed comes again with the next
    // connection, as mail does: it is passed on once (RecentControls.ts).
    const recentControls = new RecentControls()
    // Read as a control is recorded and asked about, in the reader's synchronous code (RecentControls' time limit).
    const clock = yield* Clock.Clock
    // A question its sender withdrew is not reopened by a lost or cancelled reply: the broker asks it nothing again.
    const recent = new RecentMessages(
      undefined,
      (senderId, messageId) => recentControls.withdrawal(senderId, messageId, clock.currentTimeMillisUnsafe()) !== undefined
    )
    const questionHub = yield* PubSub.unbounded<QuestionEvent>()
    /** The ids of this session's asks the broker said expired unanswered (`askExpiry`, `ask-expiry-v1`). */
    const askExpiryHub = yield* PubSub.unbounded<string>()
    /** The broker's answers to asks whose send stopped waiting, for the asks settling them (`lateVerdict`). */
    const lateVerdicts = new LateVerdicts()
    /** The connection count of each reconnect, once adopted (`reconnects`). */
    const reconnectHub = yield* PubSub.unbounded<number>()
    /** A reconnect that reached a broker holding another state than the last (`stateLost`, `state-epoch-v1`). */
    const stateLostHub = yield* PubSub.unbounded<BrokerStateLost>()
    /** Each connection's state epoch and what this client left in it (StateEpochs.ts). */
    const epochs = new StateEpochs()
    /** When what was read may be confirmed (held, withheld, or only once handled); read by the connections. */
    const confirmations = new ConfirmationPolicy(
      options.confirmWhenHandled === true,
      options.withholdConfirmations === true,
      options.withholdLimit
    )
    const confirmBound = () => confirmations.bound(unhandled.oldest())
    /** The departures read, and the membership view reconciled after each reconnect (ClientMembership.ts). */
    const membership = new ClientMembership(presenceHub, listTimeoutMs, rejoinGraceMs)
    const sinks = {
      confirmBound,
      bounded: () => confirmations.waitsForHandling,
      nextRead: () => recent.nextRead(),
      lastRead: () => recent.lastRead,
      message: (message: InboundMessage) => {
        const pass = recent.firstTime(
          message.from.id,
          message.message.id,
          confirmBound,
          message.message.expectsReply === true,
          message.read,
          message.message.timestamp
        )
        if (pass === false) return
        // Not a copy of one read before: a control of its (sender, id) read earlier was an earlier message's (AX-B1).
        // A question passed once more for a lost or cancelled reply is that same message: its controls stand (BB1).
        if (pass === "new") recentControls.received(message.from.id, message.message.id)
        // A reply ends its ask: a later state loss does not list it (StateEpochs.ts).
        if (message.message.replyTo !== undefined) epochs.answered(message.message.replyTo)
        // Counted while withheld; past `withholdLimit` it releases, and this batch's confirmation covers it.
        confirmations.read()
        unhandled.offer(membership.isDeparted(message.from.id) ? { ...message, senderLeft: true } : message)
      },
      // A message dropped as a copy though its own timestamp differed: most likely a new one under a reused id.
      warnings: () => {
        const reused = recent.takeReused()
        return reused === undefined
          ? undefined
          : Effect.forEach(reused, (drop) => Effect.logWarning(describeReusedDrop(drop)), { discard: true })
      },
      presence: (event: PresenceEvent) => membership.read(event),
      control: (event: ControlEvent) => {
        if (event._tag === "Control") {
          if (!recentControls.firstTime(event.from.id, event.control, clock.currentTimeMillisUnsafe())) return
          // A withdrawn question is asked nothing again: a copy of it read from now is a redelivery (BF2).
          recent.withdrawn(event.from.id, event.control.messageId)
        }
        // A reply of this client's that failed: its question may be asked again (RecentMessages.replyLost).
        // The broker sends that receipt from the reply's target: the asker.
        if (event._tag === "Receipt" && event.receipt.status === "expired") recent.replyLost(event.receipt.messageId, event.from.id)
        PubSub.publishUnsafe(controlHub, event)
      },
      topic: (entry: TopicEntry) => void PubSub.publishUnsafe(topicHub, entry),
      question: (event: QuestionEvent) => void PubSub.publishUnsafe(questionHub, event),
      askExpired: (messageId: string) => {
        lateVerdicts.expired(messageId)
        PubSub.publishUnsafe(askExpiryHub, messageId)
      },
      awaitsVerdict: (messageId: string) => lateVerdicts.watches(messageId),
      lateAnswer: (messageId: string, answer: SendAnswer, stateEpoch: string | undefined) => {
        const request = lateVerdicts.answered(messageId, answer)
        // A settled ask the broker acknowledged late holds its edge there as one acknowledged in time (AK4).
        if (request !== undefined && Exit.isSuccess(answer)) epochs.acknowledged(stateEpoch, request, answer.value)
      },
      // A cancel of a reply of this client's: its question may be asked again (RecentMessages.cancelWritten) …
      cancelWritten: (messageId: string) => recent.cancelWritten(messageId),
      // … until the broker's answer is read: its question is answered again, or was asked again ahead of it …
      cancelEnded: (messageId: string, cancelled: boolean) => recent.cancelEnded(messageId, cancelled),
      // … or the cancel reached no broker: closed unless another cancel, a lost reply or an unanswered cancel keeps it …
      cancelWithdrawn: (messageId: string) => recent.cancelWithdrawn(messageId),
      // … or it got no answer: the broker may have carried it out, and the question stays reopened.
      cancelAbandoned: (messageId: string) => recent.cancelAbandoned(messageId)
    }
    const grants = new SupervisorGrants(options.issuedGrants)
    const topics = new ClientTopics()
    const questions = new ClientQuestions()
    /** Receipts posted while no connection was live, for the next one (P70, KeptReceipts.ts). */
    const keptReceipts = new KeptReceipts()
    /** The connection's lifetime and the state it owns (ConnectionLifetime.ts). */
    const lifetime = makeConnectionLifetime({
      options,
      connectionsScope,
      sinks,
      membership,
      grants,
      topics,
      questions,
      keptReceipts,
      epochs,
      reconnectHub,
      stateLostHub,
      connectTimeoutMs,
      sendTimeoutMs,
      livenessIntervalMs,
      livenessTimeoutMs,
      rejoinGraceMs,
      awaitsVerdict: (messageId) => lateVerdicts.watches(messageId)
    })
    const { disconnect, resend, takeover, withConnection } = lifetime
    // An ask's verdict (`ask-expiry-v1`) waits until the replies read before it were routed, but no longer than
    // the liveness timeout: a consumer that stopped handling (a host journal that never checkpoints) must not hold
    // the ask past its timeout; a reply still unrouted then is late, as it was before the extension (a session takes
    // the reply to its live ask as it is read, `takeOnRead`, so its own never waits here). Nobody handles
    // what a closed client read: `disconnect` ends the wait at once.
    const settledReads = Effect.raceFirst(
      Effect.asVoid(Effect.timeoutOption(unhandled.caughtUp, livenessTimeoutMs)),
      lifetime.whenStopped
    )

    /**
     * A request the broker did not answer, with the broker named — its pid
     * when `broker.pid` names a live process — and what to try: a broker that
     * keeps its connection open but answers nothing is frozen or overloaded.
     */
    const namingBroker = (timeout: RequestTimeout): Effect.Effect<never, RequestTimeout> =>
      Effect.gen(function*() {
        const pid = yield* readPidFile(path.join(options.intercomDir, "broker.pid"))
        const alive = pid !== undefined && (yield* isProcessAlive(pid))
        return yield* new RequestTimeout({
          operation: timeout.operation,
          timeoutMs: timeout.timeoutMs,
          broker: { socketPath: options.socketPath, pid: alive ? pid : undefined }
        })
      })

    yield* Effect.addFinalizer(() => disconnect)

    return {
      sessionId: options.sessionId,
      group: normalizeGroup(options.group),
      connect: withConnection(() => Effect.void),
      list: withConnection((c) => membership.list(c)).pipe(
        Effect.catchTag("RequestTimeout", namingBroker)
      ),
      peek: (group) => withConnection((c) => c.list(listTimeoutMs, group)).pipe(Effect.catchTag("RequestTimeout", namingBroker)),
      send: (request) =>
        Effect.suspend(() => {
          // A reply: should it be lost, the question it answered may be asked again (RecentMessages.replied).
          // Recorded before it is written: its `expired` receipt may be read ahead of its acknowledgement.
          const askId = request.message.replyTo
          if (askId !== undefined) recent.replied(request.message.id, askId, request.to, request.targetId)
          return tracedSend(request, "send", (traced) => resend.send(traced))
        }).pipe(Effect.catchTag("RequestTimeout", namingBroker)),
      // Retried and read after a loss as a plain send is (Resending.ts `send`), written on each connection to the
      // supervisor that connection is bound to.
      supervisorSend: (request) =>
        tracedSend({ ...request, to: SUPERVISOR_TO }, "supervisor_send", (traced) =>
          resend.send(traced, {
            frameType: "supervisor_send",
            addressed: (c) => {
              const supervisor = c.supervisorSessionId ?? options.supervisorGrant?.supervisorSessionId ?? ""
              // A reply to the supervisor's question, recorded as a plain send's is (its asker: the supervisor). With
              // no supervisor known it answers no question this client can name: not recorded, or its asker would be
              // taken to be whoever last asked with that id (review revaj AJ3).
              const askId = traced.message.replyTo
              if (askId !== undefined && supervisor !== "") recent.replied(traced.message.id, askId, supervisor, supervisor)
              return { ...traced, to: supervisor }
            }
          })),
      authorizeChild: (childName) => withConnection((c) => grants.authorize(c, childName, sendTimeoutMs)),
      // The connection tells the sinks as the cancel is written and as its answer is read (`cancelWritten`, `cancelEnded` above).
      cancel: (messageId) => withConnection((c) => c.cancel(messageId, sendTimeoutMs)),
      cancelAsk: (messageId) =>
        withConnection((c) => c.post({ type: "cancel_ask", messageId })).pipe(
          // The wait is over whether or not the broker heard it: a later state loss does not list the ask.
          Effect.ensuring(Effect.sync(() => epochs.askEnded(messageId)))
        ),
      presence: (update) =>
        Effect.suspend(() => {
          update = clampPresence(update)
          lifetime.announce(update)
          return withConnection((c) => c.post(presenceFrame(update, c.features)))
        }),
      // Queued on the live connection without a fiber; without one, kept for the next (P70).
      receipt: (receipt) =>
        Effect.sync(() => {
          const frame = { type: "message_receipt", receipt }
          const live = lifetime.live()
          if (lifetime.stopped() || (live !== undefined && live.postLater(frame))) return
          keptReceipts.keep(frame)
        }),
      publish: (request) =>
        withConnection((c) =>
          Effect.flatMap(Clock.currentTimeMillis, (now) => topics.publish(c, request, now, sendTimeoutMs))
        ),
      subscribe: (topic, subscribeOptions) =>
        withConnection((c) => topics.subscribe(c, topic, subscribeOptions?.awaitRelease === true, sendTimeoutMs)),
      unsubscribe: (topic) => withConnection((c) => topics.unsubscribe(c, topic, sendTimeoutMs)),
      topics: (topic) => withConnection((c) => topics.query(c, topic, listTimeoutMs)),
      storeResult: (request) => withConnection((c) => storeResult(c, request, sendTimeoutMs)),
      results: (request) => withConnection((c) => listResults(c, request ?? {}, listTimeoutMs)),
      result: (request) => withConnection((c) => readResult(c, request, listTimeoutMs)),
      savedTopics: Effect.sync(() => topics.saved),
      seedTopics: (saved) =>
        Effect.suspend(() => {
          topics.seed(saved)
          // Already connected: send them now; otherwise the next connection does (C-TOP-15).
          const live = lifetime.live()
          return live === undefined ? Effect.void : Effect.asVoid(topics.restore(live, sendTimeoutMs))
        }),
      topicRecords: Stream.fromPubSub(topicHub),
      ...questions.operations(withConnection, sendTimeoutMs),
      questionEvents: Stream.fromPubSub(questionHub),
      askExpiry: (questionId) =>
        Effect.map(PubSub.subscribe(askExpiryHub), (subscription) => {
          const expired: Effect.Effect<void> = Effect.flatMap(
            PubSub.take(subscription),
            (id) => id === questionId ? Effect.void : expired
          )
          // The notice came after every reply accepted before it: those are routed before the wait is judged.
          return Effect.andThen(expired, settledReads)
        }),
      lateVerdict: (request) =>
        Effect.acquireRelease(
          Effect.sync(() => lateVerdicts.watch(request)),
          () => Effect.sync(() => lateVerdicts.unwatch(request.message.id))
        ).pipe(Effect.as(Effect.sync(() => lateVerdicts.take(request.message.id)))),
      settleRoundTrip: settleRoundTrip({ lifetime, livenessTimeoutMs, rejoinGraceMs, settledReads }),
      messages: unhandled.stream,
      takeOnRead: (take) =>
        Effect.as(
          Effect.acquireRelease(Effect.sync(() => unhandled.takeOnOffer(take)), (remove) => Effect.sync(remove)),
          (replyTo: string) => unhandled.takeWaiting(replyTo, take)
        ),
      handled: (message) =>
        Effect.suspend(() => {
          unhandled.handled(message)
          // What came before the oldest unhandled message can be confirmed now (`confirmWhenHandled`).
          const live = lifetime.live()
          return confirmations.waitsForHandling && live !== undefined ? live.confirmRead : Effect.void
        }),
      keep: (message) => Effect.sync(() => unhandled.keep(message)),
      caughtUp: unhandled.caughtUp,
      isDeparted: (sessionId) => Effect.sync(() => membership.isDeparted(sessionId)),
      presenceMark: Effect.sync(() => membership.mark),
      leftSince: (sessionId, mark) => Effect.sync(() => membership.leftSince(sessionId, mark)),
      presenceEvents: Stream.fromPubSub(presenceHub),
      reconnects: Stream.fromPubSub(reconnectHub),
      stateLost: Stream.fromPubSub(stateLostHub),
      whenTakenOver: takeover.whenTakenOver,
      rejoinGraceMs,
      controls: Stream.fromPubSub(controlHub),
      withdrawal: (senderId, messageId, receivedAt) =>
        Effect.sync(() => recentControls.withdrawal(senderId, messageId, clock.currentTimeMillisUnsafe(), receivedAt)),
      readSince: (senderId, messageId, mark) => Effect.sync(() => recent.readSince(senderId, messageId, mark)),
      status: Effect.sync(() => {
        const live = lifetime.live()
        return {
          connected: live !== undefined,
          sessionId: options.sessionId,
          socketPath: options.socketPath,
          features: live === undefined ? [] : [...live.features],
          connections: lifetime.connections(),
          lastError: lifetime.lastError(),
          supervisorSessionId: live?.supervisorSessionId,
          stateEpoch: epochs.epoch,
          reusedIdDrops: recent.reusedDrops,
          ...(takeover.error?.takenOver === undefined ? {} : { takenOver: takeover.error.takenOver })
        }
      }),
      holdConfirmations: Effect.sync(() => confirmations.hold()),
      resumeConfirmations: Effect.suspend(() => {
        confirmations.resume()
        const live = lifetime.live()
        return live === undefined ? Effect.void : live.confirmRead
      }),
      confirmWhenHandled: Effect.sync(() => confirmations.confirmWhenHandled()),
      releaseConfirmations: Effect.suspend(() => {
        confirmations.release()
        const live = lifetime.live()
        return live === undefined ? Effect.void : live.confirmRead
      }),
      withheld: Effect.sync(() => confirmations.state),
      disconnect
    } satisfies IntercomClientService
  })

/**
 * The client service: one session's connection to the broker. It connects
 * lazily, spawns the broker when none answers, and reconnects after a drop.
 * Build it with `IntercomClient.make` (in a Scope you hold) or
 * `IntercomClient.layer`; closing the Scope unregisters and disconnects. A
 * program that acts as an agent usually wants `IntercomSession`
 * (`effect-intercom/session`) on top of it.
 *
 * @example
 * ```ts
 * import { NodeServices } from "@effect/platform-node"
 * import { Effect, Layer } from "effect"
 * import { randomUUID } from "node:crypto"
 * import { IntercomClient } from "effect-intercom/client"
 * import { loadIntercomSettings } from "effect-intercom/config"
 * import { sessionRegistration } from "effect-intercom/session"
 *
 * // Options from the user's agent dir, config.json and environment.
 * const ClientLive = Layer.unwrap(Effect.gen(function*() {
 *   const settings = yield* loadIntercomSettings()
 *   const sessionId = settings.stableId ?? randomUUID()
 *   const identity = { name: "planner", cwd: process.cwd(), model: "my-model" }
 *   return IntercomClient.layer({
 *     agentDir: settings.paths.agentDir,
 *     intercomDir: settings.paths.intercomDir,
 *     socketPath: settings.paths.socketPath,
 *     sessionId,
 *     scopeId: settings.scopeId,
 *     registration: sessionRegistration({ sessionId, identity, pid: process.pid, startedAt: 0, statusSuffix: settings.status }),
 *     launch: settings.broker, // spawn a broker when none answers
 *     sendTimeoutMs: settings.sendTimeoutMs,
 *     listTimeoutMs: settings.listTimeoutMs,
 *     livenessIntervalMs: settings.liveness.intervalMs,
 *     livenessTimeoutMs: settings.liveness.timeoutMs
 *   })
 * })).pipe(Layer.provide(NodeServices.layer))
 *
 * const program = Effect.gen(function*() {
 *   const client = yield* IntercomClient
 *   const sessions = yield* client.list // the first operation connects: spawn if needed, register
 *   yield* Effect.log(`${sessions.length} sessions`)
 * })
 *
 * program.pipe(Effect.provide(ClientLive), Effect.runPromise)
 * ```
 */
export class IntercomClient extends Context.Service<IntercomClient, IntercomClientService>()(
  "effect-intercom/IntercomClient"
) {
  /**
   * Builds a client in the current Scope; nothing connects until the first
   * operation, and closing the Scope unregisters and disconnects.
   *
   * @example
   * ```ts
   * import { NodeServices } from "@effect/platform-node"
   * import { Effect } from "effect"
   * import { randomUUID } from "node:crypto"
   * import { IntercomClient } from "effect-intercom/client"
   * import { loadIntercomSettings } from "effect-intercom/config"
   *
   * const program = Effect.gen(function*() {
   *   const settings = yield* loadIntercomSettings()
   *   const client = yield* IntercomClient.make({
   *     agentDir: settings.paths.agentDir,
   *     intercomDir: settings.paths.intercomDir,
   *     socketPath: settings.paths.socketPath,
   *     sessionId: settings.stableId ?? randomUUID(),
   *     scopeId: settings.scopeId,
   *     registration: { cwd: process.cwd(), model: "my-model", pid: process.pid, startedAt: 0, lastActivity: 0 },
   *     launch: settings.broker
   *   })
   *   const outcome = yield* client.send({
   *     to: "reviewer",
   *     message: { id: randomUUID(), timestamp: 0, content: { text: "PR #12 is ready" } }
   *   }).pipe(
   *     Effect.map((delivery) => delivery.delivery), // "socket_delivered", or "queued" for a session that is away
   *     Effect.catchTag("TargetNotFound", (error) => Effect.succeed(error.message)) // "Session not found"
   *   )
   *   yield* Effect.log(outcome)
   * })
   *
   * program.pipe(Effect.scoped, Effect.provide(NodeServices.layer), Effect.runPromise)
   * ```
   */
  static readonly make: (
    options: IntercomClientOptions
  ) => Effect.Effect<IntercomClientService, IntercomOptionError, Scope.Scope> = make
  /**
   * A Layer holding one client for the Layer's lifetime; for an example, see
   * `IntercomClient`. Fails to build with `IntercomOptionError` when an option
   * cannot be used as given (`checkClientOptions`).
   */
  static readonly layer = (options: IntercomClientOptions): Layer.Layer<IntercomClient, IntercomOptionError> =>
    Layer.effect(IntercomClient, make(options))
}
