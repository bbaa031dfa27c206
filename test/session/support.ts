/**
 * Test doubles for the session runtime: a scriptable in-memory
 * `IntercomClient` (no socket, so TestClock drives every timer) and a host
 * that records what the session hands it, and the session worlds built on
 * them (peers listed, a host journal given, one generation in its own Scope).
 *
 * Size note: ~810 lines, past the ~400 guide: the fake client is most of it,
 * and the session worlds beside it are what the session tests share.
 *
 * One `Effect.sleep` here, in `slowWithdrawalJournal`: a slow journal save
 * modelled on the TestClock (its users move the clock past it), never a
 * barrier.
 */
import { assert } from "@effect/vitest"
import { Clock, Context, Deferred, Effect, Exit, Layer, PubSub, Queue, Scope, Stream } from "effect"
import { TestClock } from "effect/testing"
import type { SendError, SendRequest } from "../../src/client/requests.ts"
import type { ControlEvent, Delivery, InboundMessage, PresenceEvent } from "../../src/client/events.ts"
import { makeUnhandledMessages } from "../../src/client/UnhandledMessages.ts"
import type { BrokerStateLost } from "../../src/client/StateEpochs.ts"
import { LateVerdicts } from "../../src/client/LateVerdicts.ts"
import { RecentControls } from "../../src/client/RecentControls.ts"
import type { SendAnswer } from "../../src/client/PendingSends.ts"
import {
  deliveryError,
  IntercomNotConnected,
  type RequestTimeout,
  QuestionsUnavailable,
  ResultsUnavailable,
  SupervisorAuthorizationFailed,
  TopicRefused,
  TopicsUnavailable
} from "../../src/client/errors.ts"
import { checkPublish, type TopicEntry } from "../../src/protocol/topics.ts"
import type { Published } from "../../src/client/ClientTopics.ts"
import type { QuestionAsk, QuestionError } from "../../src/client/ClientQuestions.ts"
import type { QuestionRecordWire } from "../../src/protocol/questions.ts"
import {
  type ClientStatus,
  IntercomClient,
  type IntercomClientService,
  type PresenceUpdate
} from "../../src/client/IntercomClient.ts"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { EXACT_SEND_V1 } from "../../src/protocol/features.ts"
import type { Message, MessageReceipt, SessionInfo } from "../../src/protocol/frames.ts"
import {
  type HistoryEntry,
  Host,
  type HostIdentity,
  type HostService,
  type Inbound,
  type InboundJournal,
  type JournalRecord
} from "../../src/session/Host.ts"
import { IntercomSession, type IntercomSessionOptions, type IntercomSessionService } from "../../src/session/IntercomSession.ts"
import { waitDurably } from "../../src/session/DurableQuestion.ts"
import { makeGeneration, resolveSettings } from "../../src/session/Generation.ts"
import { runInbound } from "../../src/session/Inbound.ts"
import { makeToolExposure } from "../../src/session/ToolExposure.ts"
import type { ChildBridge } from "../../src/session/supervisorBridge.ts"

/** The fake client's `rejoinGraceMs` (the real client's default). */
export const REJOIN_GRACE_MS = 10_000

export const info = (id: string, extra: Partial<SessionInfo> = {}): SessionInfo => ({
  id,
  cwd: "/work",
  model: "test-model",
  pid: 1,
  startedAt: 0,
  lastActivity: 0,
  endpointEpoch: `epoch-${id}`,
  ...extra
})

/** Peers used across the session tests, and the session itself (`unitSession`'s id). */
export const B = info("b0b0b0b0-1111-2222", { name: "B" })
export const C = info("c0c0c0c0-1111-2222", { name: "C" })
export const SELF = info("self-0000-0000", { name: "self" })

export const inboundMessage = (
  from: SessionInfo,
  id: string,
  text: string,
  extra: Partial<Message> = {}
): InboundMessage => ({ from, message: { id, timestamp: 0, content: { text }, ...extra } })

export type Post =
  | { readonly _tag: "Presence"; readonly update: PresenceUpdate }
  | { readonly _tag: "CancelAsk"; readonly messageId: string }
  | { readonly _tag: "Receipt"; readonly receipt: MessageReceipt }

export interface FakeClient extends FakeClientState {
  readonly service: IntercomClientService
}

export interface FakeClientState {
  /** What `list` answers (the session itself must be in it). */
  sessions: ReadonlyArray<SessionInfo>
  /** The home group the client registers in (`client.group`). Default `default`. */
  group: string
  /** What `peek(group)` answers per group; a group not here has nobody. */
  peekable: ReadonlyMap<string, ReadonlyArray<SessionInfo>>
  /** Every group peeked at, in order. */
  readonly peeks: Array<string>
  features: ReadonlyArray<string>
  /** When set, `connect` (and every operation) fails with this reason. */
  connectFailure: string | undefined
  /** When true, `connect` never completes (a reconnect that keeps failing). */
  connectHangs: boolean
  connected: boolean
  connects: number
  lists: number
  /** `holdConfirmations`, `resumeConfirmations` and `releaseConfirmations` as called, in order. */
  readonly confirmations: Array<"hold" | "resume" | "release">
  /** Every send frame, in order. */
  readonly sends: Array<SendRequest>
  /** Every `supervisor_send`, in order (`to` is `supervisorSessionId`). */
  readonly supervisorSends: Array<SendRequest>
  /** The supervisor the broker would have confirmed (a child with a grant). */
  supervisorSessionId: string | undefined
  readonly posts: Array<Post>
  /** How a send is answered; default: delivered. */
  onSend: (request: SendRequest) => Effect.Effect<Delivery, SendError>
  /**
   * The client read `message`, a new one (RecentMessages' `"new"`), after any control pushed before it: a control
   * of its pair then was an earlier message's, and is forgotten (RecentControls.received), as the real client does.
   */
  readonly push: (message: InboundMessage) => Effect.Effect<void>
  /**
   * The client read `message` before the controls pushed ahead of it here, which the session's control fiber
   * handled first (two streams): as the broker writes a control only after its message, so those controls
   * stay recorded (`withdrawal`).
   */
  readonly pushReadFirst: (message: InboundMessage) => Effect.Effect<void>
  readonly presence: (event: PresenceEvent) => Effect.Effect<void>
  readonly control: (event: ControlEvent) => Effect.Effect<void>
  /** The broker's `ask_expired` for `questionId` (`ask-expiry-v1`), as the real client hands it on (`askExpiry`). */
  readonly expireAsk: (questionId: string) => Effect.Effect<void>
  /**
   * The broker's answer to a send of `questionId` read after its send stopped waiting, as the real
   * client keeps it for the ask watching it (`lateVerdict`, LateVerdicts.ts).
   */
  readonly answerLate: (questionId: string, answer: SendAnswer) => Effect.Effect<void>
  /**
   * The watched requests a late acknowledgement (`answerLate` with a success) was kept for, in order: what the
   * real client notes in the broker's state (StateEpochs.acknowledged) as it notes an acknowledgement read in time.
   */
  readonly lateAcknowledged: Array<SendRequest>
  /** The broker's `ask_answered_elsewhere` (`reply-elsewhere-v1`), as the real client hands it on (`controls`). */
  readonly answerElsewhere: (questionId: string, replyId: string) => Effect.Effect<void>
  /** `settleRoundTrip` calls so far. */
  settles: number
  /** How `settleRoundTrip` ends; default: `caughtUp`, then whether connected. */
  onSettle: Effect.Effect<boolean> | undefined
  /** A reconnect, as the real client announces it once the new connection is live (`reconnects`). */
  readonly reconnect: Effect.Effect<void>
  /**
   * A reconnect to a broker that lost its state (`state-epoch-v1`), as the real client announces it:
   * `stateLost` (with `lost`), then `reconnects`.
   */
  readonly reconnectLosingState: (lost: Omit<BrokerStateLost, "_tag" | "connections">) => Effect.Effect<void>
  /**
   * Another process took the session over (`taken_over`), as the real client says it: no longer
   * connected, `connect` fails with `error`, and so does `whenTakenOver`.
   */
  readonly takeOver: (error: IntercomNotConnected) => Effect.Effect<void>
  readonly cancelAsks: () => ReadonlyArray<string>
  readonly receipts: () => ReadonlyArray<MessageReceipt>
  readonly presences: () => ReadonlyArray<PresenceUpdate>
  /** When false, topic operations fail with `TopicsUnavailable` (a broker without `topics-v1`). Default true. */
  topicsAvailable: boolean
  /** Every publish and subscription change, in order. */
  readonly topicCalls: Array<string>
  /** What `subscribe` and `topics` answer as current records. */
  topicEntries: ReadonlyArray<TopicEntry>
  /** When true, `subscribe` and `topics` answer as a broker that left records out (`truncated`). Default false. */
  topicsTruncated: boolean
  /** When set, `publish` runs this first (a hook to act while the broker has not answered yet). */
  onPublish: Effect.Effect<void> | undefined
  /** When set, `cancelAsk` runs this first (a cancel_ask still on its way, as behind a slow socket). */
  onCancelAsk: Effect.Effect<void> | undefined
  /** When set, `list` runs this first (a hook to act while the broker has not answered the list yet). */
  onList: Effect.Effect<void> | undefined
  /** When set, `list` fails with it (a broker that did not answer, say). */
  listFailure: RequestTimeout | undefined
  /** When set, `connect` runs this first (a hook to act while a connect waits, as on a reconnect). */
  onConnect: Effect.Effect<void> | undefined
  /** The id of every durable question asked (`askQuestion`), in order. */
  readonly questionsAsked: Array<string>
  /** How `askQuestion` is answered; default: refused with `QuestionsUnavailable` (a broker keeping no questions). */
  onAskQuestion: (question: QuestionAsk) => Effect.Effect<QuestionRecordWire, QuestionError>
  /** Hands a subscribed record to the session, as the broker's fan-out would. */
  readonly topicRecord: (entry: TopicEntry) => Effect.Effect<void>
}

export const makeFakeClient = (sessionId: string): Effect.Effect<FakeClient, never, Scope.Scope> =>
  Effect.gen(function*() {
    // The client's own buffer: a message stays until the session is done with it, as with the real client.
    const unhandled = yield* makeUnhandledMessages
    const presenceHub = yield* PubSub.unbounded<PresenceEvent>()
    const controlHub = yield* PubSub.unbounded<ControlEvent>()
    const topicHub = yield* PubSub.unbounded<TopicEntry>()
    const askExpiryHub = yield* PubSub.unbounded<string>()
    const lateVerdicts = new LateVerdicts()
    const recentControls = new RecentControls()
    const reconnectHub = yield* PubSub.unbounded<number>()
    const stateLostHub = yield* PubSub.unbounded<BrokerStateLost>()
    const takenOverSignal = yield* Deferred.make<never, IntercomNotConnected>()
    const revisions = new Map<string, number>()
    /** Sessions whose `Left` was pushed and no `Joined` since (`isDeparted`). */
    const departed = new Set<string>()
    /** As the real client: presence events pushed so far, and the number of each session's latest `Left`. */
    let presenceRead = 0
    const lastLeft = new Map<string, number>()
    /** As the real client: messages pushed are numbered as read, and each (sender, id) keeps its last's number. */
    let reads = 0
    const lastReadOf = new Map<string, number>()
    const fake: FakeClientState = {
      sessions: [info(sessionId, { name: "self" })],
      group: "default",
      peekable: new Map(),
      peeks: [],
      features: [EXACT_SEND_V1],
      connectFailure: undefined,
      connectHangs: false,
      connected: false,
      connects: 0,
      lists: 0,
      confirmations: [],
      sends: [],
      supervisorSends: [],
      supervisorSessionId: undefined,
      posts: [],
      onSend: (request) => Effect.succeed({ messageId: request.message.id, delivery: "socket_delivered" }),
      // A copy, as each frame the real client reads is an object of its own (the buffer tells messages apart by identity).
      // As the real client: a message passed on forgets the controls of its (sender, id) read before it (an earlier
      // message's: RecentControls.received).
      push: (message) =>
        Effect.sync(() => {
          recentControls.received(message.from.id, message.message.id)
          const read = ++reads
          lastReadOf.set(`${message.from.id}\u0001${message.message.id}`, read)
          unhandled.offer({ ...message, read })
        }),
      pushReadFirst: (message) => Effect.sync(() => unhandled.offer({ ...message })),
      // As the real client: who is departed is recorded as the event is read, before any subscriber sees it.
      presence: (event) =>
        Effect.suspend(() => {
          presenceRead++
          if (event._tag === "Left") lastLeft.set(event.sessionId, presenceRead)
          if (event._tag === "Left") departed.add(event.sessionId)
          else if (event._tag === "Joined") departed.delete(event.session.id)
          return Effect.asVoid(PubSub.publish(presenceHub, event))
        }),
      // As the real client: a cancel or supersede is recorded as it is read (`withdrawal`), before any subscriber
      // sees it (the fake passes on one pushed twice, twice).
      control: (event) =>
        Effect.suspend(() => {
          if (event._tag !== "Control") return Effect.asVoid(PubSub.publish(controlHub, event))
          return Effect.flatMap(Clock.currentTimeMillis, (now) => {
            recentControls.firstTime(event.from.id, event.control, now)
            return Effect.asVoid(PubSub.publish(controlHub, { ...event, read: reads }))
          })
        }),
      // As the real client: a new connection forgets the departures read on the last.
      reconnect: Effect.suspend(() => {
        fake.connects++
        fake.connected = true
        departed.clear()
        return Effect.asVoid(PubSub.publish(reconnectHub, fake.connects))
      }),
      reconnectLosingState: (lost) =>
        Effect.suspend(() => {
          fake.connects++
          fake.connected = true
          departed.clear()
          const event: BrokerStateLost = { _tag: "BrokerStateLost", connections: fake.connects, ...lost }
          return PubSub.publish(stateLostHub, event).pipe(
            Effect.andThen(PubSub.publish(reconnectHub, fake.connects)),
            Effect.asVoid
          )
        }),
      takeOver: (error) =>
        Effect.suspend(() => {
          fake.connected = false
          fake.connectFailure = error.reason
          return Effect.asVoid(Deferred.fail(takenOverSignal, error))
        }),
      cancelAsks: () => fake.posts.flatMap((post) => post._tag === "CancelAsk" ? [post.messageId] : []),
      receipts: () => fake.posts.flatMap((post) => post._tag === "Receipt" ? [post.receipt] : []),
      presences: () => fake.posts.flatMap((post) => post._tag === "Presence" ? [post.update] : []),
      topicsAvailable: true,
      topicCalls: [],
      topicEntries: [],
      topicsTruncated: false,
      onPublish: undefined,
      onCancelAsk: undefined,
      onList: undefined,
      listFailure: undefined,
      onConnect: undefined,
      questionsAsked: [],
      onAskQuestion: () => Effect.fail(new QuestionsUnavailable()),
      topicRecord: (entry) => Effect.asVoid(PubSub.publish(topicHub, entry)),
      expireAsk: (questionId) =>
        Effect.suspend(() => {
          lateVerdicts.expired(questionId)
          return Effect.asVoid(PubSub.publish(askExpiryHub, questionId))
        }),
      answerLate: (questionId, answer) =>
        Effect.sync(() => {
          const request = lateVerdicts.answered(questionId, answer)
          if (request !== undefined && Exit.isSuccess(answer)) fake.lateAcknowledged.push(request)
        }),
      lateAcknowledged: [],
      answerElsewhere: (questionId, replyId) =>
        Effect.asVoid(PubSub.publish(controlHub, { _tag: "AnsweredElsewhere", messageId: questionId, replyId })),
      settles: 0,
      onSettle: undefined
    }
    const connection = Effect.suspend(() => {
      if (fake.connectHangs) return Effect.never
      if (fake.connectFailure !== undefined) {
        return Effect.fail(new IntercomNotConnected({ reason: fake.connectFailure }))
      }
      if (!fake.connected) fake.connects++
      fake.connected = true
      return Effect.void
    })
    const post = (value: Post) => Effect.andThen(connection, Effect.sync(() => void fake.posts.push(value)))
    const service: IntercomClientService = {
      sessionId,
      get group() {
        return fake.group
      },
      connect: Effect.andThen(Effect.suspend(() => fake.onConnect ?? Effect.void), connection),
      list: Effect.andThen(
        connection,
        Effect.suspend(() => fake.onList ?? Effect.void).pipe(Effect.andThen(Effect.suspend(() => {
          fake.lists++
          return fake.listFailure === undefined ? Effect.succeed(fake.sessions) : Effect.fail(fake.listFailure)
        })))
      ),
      // Groups are the broker's: the fake answers a peek from `peekable` (nobody by default).
      peek: (group) =>
        Effect.andThen(connection, Effect.sync(() => {
          fake.peeks.push(group)
          return fake.peekable.get(group) ?? []
        })),
      send: (request) =>
        Effect.andThen(
          connection,
          Effect.suspend(() => {
            fake.sends.push(request)
            return fake.onSend(request)
          })
        ),
      supervisorSend: (request) =>
        Effect.andThen(
          connection,
          Effect.suspend(() => {
            const full = { ...request, to: fake.supervisorSessionId ?? "" }
            fake.supervisorSends.push(full)
            return fake.onSend(full)
          })
        ),
      authorizeChild: (childName) =>
        Effect.fail(new SupervisorAuthorizationFailed({ childName, reason: "the fake client has no broker" })),
      cancel: () => Effect.succeed(false),
      cancelAsk: (messageId) => Effect.andThen(fake.onCancelAsk ?? Effect.void, post({ _tag: "CancelAsk", messageId })),
      presence: (update) => post({ _tag: "Presence", update }),
      // As the real client: never waits; without a connection, a fiber of its own waits for one.
      receipt: (receipt) =>
        Effect.asVoid(Effect.forkDetach(Effect.ignore(post({ _tag: "Receipt", receipt })), { startImmediately: true })),
      // The fake has no result archive: as a broker without results-v1.
      storeResult: () => Effect.andThen(connection, Effect.fail(new ResultsUnavailable())),
      results: () => Effect.andThen(connection, Effect.fail(new ResultsUnavailable())),
      result: () => Effect.andThen(connection, Effect.fail(new ResultsUnavailable())),
      publish: (request) =>
        Effect.andThen(connection, Effect.suspend((): Effect.Effect<Published, TopicRefused | TopicsUnavailable> => {
          if (!fake.topicsAvailable) return Effect.fail(new TopicsUnavailable())
          const checked = checkPublish(request)
          if (typeof checked === "string") return Effect.fail(new TopicRefused({ reason: `Invalid publish: ${checked}` }))
          return Effect.andThen(fake.onPublish ?? Effect.void, Effect.sync(() => {
            const revision = (revisions.get(checked.topic) ?? 0) + 1
            revisions.set(checked.topic, revision)
            fake.topicCalls.push(`publish ${checked.topic} ${checked.event} r${revision}`)
            return { record: { ...checked, revision, updatedAt: 0 }, subscribers: 2, accepted: 1 }
          }))
        })),
      subscribe: (topic, options) =>
        Effect.andThen(connection, Effect.suspend(() => {
          if (!fake.topicsAvailable) return Effect.fail(new TopicsUnavailable())
          fake.topicCalls.push(`subscribe ${topic}${options?.awaitRelease === true ? " awaitRelease" : ""}`)
          return Effect.succeed({
            entries: fake.topicEntries.filter((entry) => entry.record.topic === topic),
            truncated: fake.topicsTruncated
          })
        })),
      unsubscribe: (topic) =>
        Effect.andThen(connection, Effect.suspend(() => {
          if (!fake.topicsAvailable) return Effect.fail(new TopicsUnavailable())
          fake.topicCalls.push(`unsubscribe ${topic}`)
          return Effect.void
        })),
      topics: (topic) =>
        Effect.andThen(connection, Effect.suspend(() => {
          if (!fake.topicsAvailable) return Effect.fail(new TopicsUnavailable())
          return Effect.succeed({
            entries: fake.topicEntries.filter((entry) => topic === undefined || entry.record.topic === topic),
            subscriptions: [],
            truncated: fake.topicsTruncated
          })
        })),
      savedTopics: Effect.succeed({ subscriptions: [], publications: [] }),
      seedTopics: () => Effect.void,
      topicRecords: Stream.fromPubSub(topicHub),
      // By default no broker behind the fake keeps durable questions (a base broker, or memory mode).
      askQuestion: (question) =>
        Effect.suspend(() => {
          fake.questionsAsked.push(question.questionId)
          return fake.onAskQuestion(question)
        }),
      questionReceived: () => Effect.void,
      questionDone: () => Effect.void,
      listQuestions: () => Effect.fail(new QuestionsUnavailable()),
      getQuestion: () => Effect.fail(new QuestionsUnavailable()),
      answerQuestion: () => Effect.fail(new QuestionsUnavailable()),
      stopQuestion: () => Effect.fail(new QuestionsUnavailable()),
      questionEvents: Stream.empty,
      askExpiry: (questionId) =>
        Effect.map(PubSub.subscribe(askExpiryHub), (subscription) => {
          const expired: Effect.Effect<void> = Effect.flatMap(
            PubSub.take(subscription),
            (id) => id === questionId ? Effect.void : expired
          )
          return Effect.andThen(expired, unhandled.caughtUp)
        }),
      lateVerdict: (request) =>
        Effect.acquireRelease(
          Effect.sync(() => lateVerdicts.watch(request)),
          () => Effect.sync(() => lateVerdicts.unwatch(request.message.id))
        ).pipe(Effect.as(Effect.sync(() => lateVerdicts.take(request.message.id)))),
      settleRoundTrip: Effect.suspend(() => {
        fake.settles++
        return fake.onSettle ?? Effect.andThen(unhandled.caughtUp, Effect.sync(() => fake.connected))
      }),
      messages: unhandled.stream,
      takeOnRead: (take) =>
        Effect.as(
          Effect.acquireRelease(Effect.sync(() => unhandled.takeOnOffer(take)), (remove) => Effect.sync(remove)),
          (replyTo: string) => unhandled.takeWaiting(replyTo, take)
        ),
      handled: (message) => Effect.sync(() => unhandled.handled(message)),
      keep: (message) => Effect.sync(() => unhandled.keep(message)),
      caughtUp: unhandled.caughtUp,
      isDeparted: (id) => Effect.sync(() => departed.has(id)),
      presenceMark: Effect.sync(() => presenceRead),
      leftSince: (id, mark) => Effect.sync(() => (lastLeft.get(id) ?? 0) > mark),
      presenceEvents: Stream.fromPubSub(presenceHub),
      reconnects: Stream.fromPubSub(reconnectHub),
      stateLost: Stream.fromPubSub(stateLostHub),
      whenTakenOver: Deferred.await(takenOverSignal),
      rejoinGraceMs: REJOIN_GRACE_MS,
      controls: Stream.fromPubSub(controlHub),
      withdrawal: (senderId, messageId, receivedAt) =>
        Effect.map(Clock.currentTimeMillis, (now) => recentControls.withdrawal(senderId, messageId, now, receivedAt)),
      readSince: (senderId, messageId, mark) =>
        Effect.sync(() => (lastReadOf.get(`${senderId}\u0001${messageId}`) ?? 0) > mark),
      status: Effect.sync((): ClientStatus => ({
        connected: fake.connected,
        sessionId,
        socketPath: "/fake",
        features: fake.connected ? fake.features : [],
        connections: fake.connects,
        lastError: undefined,
        supervisorSessionId: fake.connected ? fake.supervisorSessionId : undefined,
        reusedIdDrops: 0
      })),
      holdConfirmations: Effect.sync(() => void fake.confirmations.push("hold")),
      resumeConfirmations: Effect.sync(() => void fake.confirmations.push("resume")),
      releaseConfirmations: Effect.sync(() => void fake.confirmations.push("release")),
      withheld: Effect.succeed({ withholding: false, messages: 0, limitReleased: undefined }),
      confirmWhenHandled: Effect.void,
      disconnect: Effect.sync(() => {
        fake.connected = false
      })
    }
    return Object.assign(fake, { service })
  })

export interface RecordingHost extends RecordingHostState {
  readonly service: HostService
}

export interface RecordingHostState {
  readonly inbox: Queue.Queue<Inbound>
  readonly history: Array<HistoryEntry>
  readonly confirmations: Array<string>
  /** What `confirm` answers. */
  confirmAnswer: boolean
  /** When set, `deliver` fails this many more times. */
  failDeliveries: number
  /** The message id of every `deliver` call, refused or not, in order. */
  readonly attempts: Array<string>
}

export const makeRecordingHost = (
  identity: HostIdentity,
  extra: { readonly hasUI?: boolean; readonly exitsWhenDone?: boolean } = {}
): Effect.Effect<RecordingHost> =>
  Effect.gen(function*() {
    const inbox = yield* Queue.unbounded<Inbound>()
    const host: RecordingHostState = {
      inbox,
      history: [],
      confirmations: [],
      confirmAnswer: true,
      failDeliveries: 0,
      attempts: []
    }
    const service: HostService = {
      identity,
      hasUI: extra.hasUI ?? false,
      exitsWhenDone: extra.exitsWhenDone,
      confirm: ({ text }) =>
        Effect.sync(() => {
          host.confirmations.push(text)
          return host.confirmAnswer
        }),
      deliver: (inbound) =>
        Effect.suspend(() => {
          host.attempts.push(inbound.message.id)
          if (host.failDeliveries > 0) {
            host.failDeliveries--
            return Effect.fail("host refused")
          }
          return Effect.asVoid(Queue.offer(inbox, inbound))
        }),
      record: (entry) => Effect.sync(() => void host.history.push(entry))
    }
    return Object.assign(host, { service })
  })

export interface UnitSession {
  readonly session: IntercomSessionService
  readonly client: FakeClient
  readonly host: RecordingHost
}

/** A session over a fake client, built in the current Scope (closing it ends the generation). */
export const unitSession = (
  options: IntercomSessionOptions = {},
  hostExtra: { readonly hasUI?: boolean; readonly exitsWhenDone?: boolean; readonly name?: string } = {}
): Effect.Effect<UnitSession, never, Scope.Scope> =>
  Effect.gen(function*() {
    const client = yield* makeFakeClient("self-0000-0000")
    const host = yield* makeRecordingHost({ name: hostExtra.name ?? "self", cwd: "/work", model: "test-model" }, hostExtra)
    const context = yield* Layer.build(
      IntercomSession.layer(options).pipe(
        Layer.provide(Layer.mergeAll(Layer.succeed(IntercomClient, client.service), Host.layer(host.service)))
      )
    )
    return { session: Context.get(context, IntercomSession), client, host }
  })

/** Lets forked fibers run up to their next suspension (TestClock does not move). */
export const settle = Effect.gen(function*() {
  for (let i = 0; i < 20; i++) yield* Effect.yieldNow
})

/** A session whose client lists itself, B and C. */
export const withPeers = (...args: Parameters<typeof unitSession>): Effect.Effect<UnitSession, never, Scope.Scope> =>
  Effect.map(unitSession(...args), (unit) => {
    unit.client.sessions = [SELF, B, C]
    return unit
  })

/** A `FakeClient.onSend` that refuses every send with `code` and the broker's `reason`. */
export const refuseWith = (code: string, reason: string): FakeClient["onSend"] => (request) =>
  Effect.fail(deliveryError({ messageId: request.message.id, code, reason, retryable: false }))

/**
 * Answers the first send bound to `peer`'s current endpoint with
 * `E_TARGET_REBOUND` and gives `peer` the endpoint `epoch-new` in the list;
 * every other send is delivered.
 */
export const reboundOnce = (client: FakeClient, peer: SessionInfo): void => {
  client.onSend = (request) => {
    if (request.targetEpoch !== peer.endpointEpoch) {
      return Effect.succeed({ messageId: request.message.id, delivery: "socket_delivered" })
    }
    client.sessions = client.sessions.map((session) =>
      session.id === peer.id ? { ...session, endpointEpoch: "epoch-new" } : session
    )
    return Effect.fail(deliveryError({
      messageId: request.message.id,
      code: DeliveryCode.TargetRebound,
      reason: Reason.targetRebound,
      retryable: true
    }))
  }
}

/**
 * A session (SELF, with B and C listed) over the fake client and a recording
 * host whose host journal is `journal`: the world for tests of what the
 * session tells, or waits on, its host's journal. Built in the current Scope.
 */
export const journalSession = (journal: InboundJournal): Effect.Effect<UnitSession, never, Scope.Scope> =>
  Effect.gen(function*() {
    const client = yield* makeFakeClient(SELF.id)
    client.sessions = [SELF, B, C]
    const host = yield* makeRecordingHost({ name: "self", cwd: "/work", model: "test-model" })
    const context = yield* Layer.build(
      IntercomSession.layer({}).pipe(
        Layer.provide(
          Layer.mergeAll(Layer.succeed(IntercomClient, client.service), Host.layer({ ...host.service, journal }))
        )
      )
    )
    return { client, host, session: Context.get(context, IntercomSession) }
  })

/**
 * A host journal that saves nothing but whose save of the withdrawal of
 * `slowId` takes 1 s on the TestClock (a modelled slow disk write, not a
 * barrier): while it runs, the session's control fiber lags behind what the
 * client reads.
 */
export const slowWithdrawalJournal = (slowId: string): InboundJournal => ({
  checkpoint: () => Effect.void,
  undelivered: Effect.succeed([]),
  handled: Effect.succeed([]),
  withdrawn: (_from, messageId) => messageId === slowId ? Effect.sleep(1_000) : Effect.void
})

/**
 * Holds `journalSession(slowWithdrawalJournal("other"))`'s control fiber: the
 * host refuses the next 15 hand-offs (1.5 s at HANDOFF_RETRY_INTERVAL), C's
 * "other" waits in the hand-off, and the client reads C's cancel of it, whose
 * slow save the control fiber is then busy with.
 */
export const holdControlFiber = (unit: Pick<UnitSession, "client" | "host">) =>
  Effect.gen(function*() {
    unit.host.failDeliveries = 15
    yield* unit.client.push(inboundMessage(C, "other", "another task"))
    yield* settle
    yield* unit.client.control({ _tag: "Control", from: C, control: { messageId: "other", action: "cancel", timestamp: 0 } })
    yield* settle
  })

/** Moves the TestClock 4 s in 200 ms steps, settling after each: a refusing hand-off retries until the host took everything. */
export const drainHandOff = Effect.gen(function*() {
  for (let i = 0; i < 20; i++) {
    yield* TestClock.adjust(200)
    yield* settle
  }
})

/** Moves the TestClock 5 s in 500 ms steps, settling after each: a refusing hand-off retries its way through. */
export const retryFiveSeconds = Effect.gen(function*() {
  for (let i = 0; i < 10; i++) {
    yield* TestClock.adjust(500)
    yield* settle
  }
})

/**
 * A session generation over `client` and `host` in a Scope of its own, with
 * `close` to end it: the world for tests across generations (one session
 * ends, the next restores from the same journal).
 */
export const sessionGeneration = (host: HostService, client: FakeClient) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(
      IntercomSession.layer({}).pipe(
        Layer.provide(Layer.mergeAll(Layer.succeed(IntercomClient, client.service), Host.layer(host)))
      ),
      scope
    )
    return { session: Context.get(context, IntercomSession), close: Scope.close(scope, Exit.void) }
  })

/**
 * A session restarted two hours into the TestClock (SELF, with B and C
 * listed) whose host journal restores `records` as undelivered, nothing as
 * handled, and saves nothing; its host refuses the first `refused` hand-offs
 * (5 unless given), so what is restored waits in the hand-off. `before` runs
 * on the client before the session starts (a control it records first, say).
 * `withdrawals`: each withdrawal the journal was told, `"<messageId> <action>"`,
 * oldest first. Built in the current Scope and settled once.
 */
export const restoredSession = (
  records: ReadonlyArray<JournalRecord>,
  options: { readonly refused?: number; readonly before?: (client: FakeClient) => Effect.Effect<void> } = {}
) =>
  Effect.gen(function*() {
    const withdrawals: Array<string> = []
    yield* TestClock.adjust(2 * 60 * 60 * 1000)
    const client = yield* makeFakeClient(SELF.id)
    client.sessions = [SELF, B, C]
    const host = yield* makeRecordingHost({ name: "self", cwd: "/work", model: "test-model" })
    const journal: InboundJournal = {
      checkpoint: () => Effect.void,
      undelivered: Effect.succeed(records),
      handled: Effect.succeed([]),
      withdrawn: (_from, messageId, action) => Effect.sync(() => void withdrawals.push(`${messageId} ${action}`))
    }
    host.failDeliveries = options.refused ?? 5
    if (options.before !== undefined) yield* options.before(client)
    const context = yield* Layer.build(
      IntercomSession.layer().pipe(
        Layer.provide(Layer.mergeAll(Layer.succeed(IntercomClient, client.service), Host.layer({ ...host.service, journal })))
      )
    )
    yield* settle
    return { client, host, session: Context.get(context, IntercomSession), withdrawals }
  })

/**
 * A session (SELF, with B and C listed) whose host journal saves each message
 * that `waits` picks only once `gate` opens (a slow disk): what is read after
 * such a message waits for that save, a departure's `caughtUp` included.
 */
export const slowJournalSessionFor = (waits: (messageId: string) => boolean) =>
  Effect.gen(function*() {
    const gate = yield* Deferred.make<void>()
    const { client, session } = yield* journalSession({
      checkpoint: (context) => waits(context.message.id) ? Deferred.await(gate) : Effect.void,
      undelivered: Effect.succeed([])
    })
    return { client, gate, session }
  })

/** `slowJournalSessionFor` where every message waits for the gate. */
export const slowJournalSession = slowJournalSessionFor(() => true)

/** A supervisor (named "planner") for child-session tests; in another group, so `list` never names it. */
export const SUP = info("sup-1111-2222-3333", { name: "planner" })

/**
 * A fake client's `onAskQuestion` for a broker that saves every durable question `childId` (named "self") asks
 * SUP: the record it answers is awaiting input, made at 0.
 */
export const savesEveryQuestion = (childId: string): FakeClient["onAskQuestion"] => (asked) =>
  Effect.succeed({
    id: asked.questionId,
    state: "awaiting_input",
    reason: asked.reason,
    ownerId: SUP.id,
    childId,
    childName: "self",
    message: asked.text,
    createdAt: 0
  })

/** The receipts the fake client posted for message `id`, oldest first: each `status`, or `"status: detail"`. */
export const receiptsFor = (client: Pick<FakeClient, "receipts">, id: string): ReadonlyArray<string> =>
  client.receipts().filter((receipt) => receipt.messageId === id).map((receipt) =>
    receipt.detail === undefined ? receipt.status : `${receipt.status}: ${receipt.detail}`
  )

/** A complete child bridge to SUP, carrying a grant (C-SUP-1). */
export const supervisorBridge: ChildBridge = {
  supervisorTarget: "planner",
  runId: "Run-7",
  agent: "Worker",
  index: 0,
  sessionName: undefined,
  grant: { capability: "nonce.mac", supervisorSessionId: SUP.id }
}

/**
 * A generation (SELF, with SUP and C listed) running its inbound handling over the fake client, the host idle
 * and tools always exposed, with no session around it: the world for tests of a durable question's wait
 * (`waitDurably`) and the replies the reader path takes for it. The broker saves every durable question; the
 * host's journal is `journal` (the recording host's own unless given); `options` are the session's settings.
 * `handled`: each message the session said it was done with, in order (what `confirmWhenHandled` confirms).
 * `wait(questionId)`: the durable wait on that question to SUP, its waiter bound as the wait starts.
 */
export const durableWaitGeneration = (journal?: InboundJournal, options: IntercomSessionOptions = {}) =>
  Effect.gen(function*() {
    const client = yield* makeFakeClient(SELF.id)
    client.sessions = [SELF, SUP, C]
    client.onAskQuestion = savesEveryQuestion(SELF.id)
    const host = yield* makeRecordingHost({ name: "self", cwd: "/work", model: "test-model" })
    const service: HostService = journal === undefined ? host.service : { ...host.service, journal }
    const handled: Array<string> = []
    const clientService: IntercomClientService = {
      ...client.service,
      handled: (message) => Effect.andThen(Effect.sync(() => void handled.push(message.message.id)), client.service.handled(message))
    }
    const generation = yield* makeGeneration({
      client: clientService,
      host: service,
      settings: resolveSettings(options),
      afterConnect: Effect.void
    })
    yield* runInbound(generation, () => "idle", makeToolExposure("always", service))
    const wait = (questionId: string) =>
      Effect.suspend(() => {
        const bound = { current: generation.slot.reserve() ?? assert.fail("the slot is taken") }
        const message = { id: questionId, timestamp: 0, content: { text: "Stable or experimental API?" } }
        return waitDurably(generation, bound, { questionId, reason: "need_decision", message, targetId: SUP.id }, Effect.void)
      })
    return { client, host, handled, generation, wait }
  })
