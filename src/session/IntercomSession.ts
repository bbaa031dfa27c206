/**
 * `IntercomSession`: the host-independent runtime of one agent session on the
 * bus — the `intercom` tool actions (list/send/ask/reply/pending/status), the
 * single reply-waiter slot, the reply tracker, inbound admission and
 * de-duplication, delivery intents and lifecycle presence.
 *
 * This module holds the public types and the wiring; each concern is its own
 * module, built over the generation's shared record (`Generation.ts`):
 *
 * | module | owns |
 * |---|---|
 * | `PresencePublisher.ts` | identity, lifecycle status, the presence fiber |
 * | `Sending.ts` | the outgoing path: targets, exact send, re-list after a rebound |
 * | `Actions.ts` | list / send / reply / pending / status |
 * | `Ask.ts` | the blocking ask that holds the reply-waiter slot |
 * | `Inbound.ts` | the message, membership and control fibers |
 * | `IntercomTool.ts` | `intercom(params)`: check once, act, render |
 *
 * One layer build is one session generation (C-ORD-35): every fiber is forked
 * in the layer's Scope, and closing it ends a wait in progress and interrupts
 * them, so nothing started by an old generation can act afterwards.
 *
 * The session is the single consumer of `IntercomClient.messages`.
 */
import { Clock, Context, Effect, Layer, type Scope } from "effect"
import type { Delivery } from "../client/ClientConnection.ts"
import type { ConnectionLost, IntercomNotConnected, RequestTimeout } from "../client/errors.ts"
import { IntercomClient } from "../client/IntercomClient.ts"
import type { Attachment, Message, SessionInfo, SessionRegistration } from "../protocol/frames.ts"
import { makeActions } from "./Actions.ts"
import { makeAsking } from "./Ask.ts"
import type {
  AlreadyWaiting,
  InvalidInput,
  InvalidTimeout,
  MissingParameter,
  NoReplyContext,
  NotDelivered,
  ReplyPeerDisconnected,
  ReplyTimeout,
  SelfNotListed,
  SelfTargetRefused,
  SessionEnded,
  TargetUnresolved,
  UnknownAction
} from "./errors.ts"
import { makeGeneration, resolveSettings } from "./Generation.ts"
import { Host, type HostIdentity } from "./Host.ts"
import type { AdmissionLimits } from "./InboundAdmission.ts"
import { runInbound } from "./Inbound.ts"
import { baseToolActions, makeIntercomTool } from "./IntercomTool.ts"
import { makePresencePublisher } from "./PresencePublisher.ts"
import { type LifecycleStatus, presenceStatus, presentedName } from "./render.ts"
import type { InboundContext } from "./ReplyTracker.ts"
import { makeSending } from "./Sending.ts"

export { DEFAULT_ASK_TIMEOUT_MS } from "./Generation.ts"

// ---------------------------------------------------------------------------
// Options, requests, results
// ---------------------------------------------------------------------------

/** Whether inbound messages start a model turn: all, only replies, or none (config `inboundTrigger`). */
export type InboundTrigger = "always" | "replies" | "never"

/** Plain values the wiring code takes from the config module. */
export interface IntercomSessionOptions {
  /** How long an `ask` waits, and how long a received ask stays pending. Default 600 000 ms (10 minutes). */
  readonly askTimeoutMs?: number | undefined
  /** Append the reply hint to inbound asks (C-RPL-9). Default true. */
  readonly replyHint?: boolean | undefined
  /** Confirm non-reply sends with the person when the host has a UI (C-TOOL-7). Default false. */
  readonly confirmSend?: boolean | undefined
  /** Custom status appended as `<lifecycle> · <custom>` (C-TOOL-10). */
  readonly statusSuffix?: string | undefined
  /** Default `"always"`. */
  readonly inboundTrigger?: InboundTrigger | undefined
  /** Inbound de-duplication window (C-DLV-11). Default 1 hour / 1000 messages. */
  readonly inboundDedupe?: AdmissionLimits | undefined
  /**
   * How long an action waits for the connection (a first connect, or a
   * reconnect in progress) before it reports `Intercom not connected`. Default 10 000 ms.
   */
  readonly connectTimeoutMs?: number | undefined
}

export interface SendRequest {
  readonly to: string
  readonly message: string
  readonly attachments?: ReadonlyArray<Attachment> | undefined
  /** Threads the message as the answer to an inbound ask, which it then marks replied (C-RPL-5). */
  readonly replyTo?: string | undefined
}

export interface AskRequest {
  readonly to: string
  readonly message: string
  readonly attachments?: ReadonlyArray<Attachment> | undefined
  /** Overrides `askTimeoutMs` for this ask. */
  readonly timeoutMs?: number | undefined
}

export interface ReplyRequest {
  readonly message: string
  /** Which sender to answer when several asks are pending (C-RPL-4). */
  readonly to?: string | undefined
  /** The exact ask to answer. */
  readonly replyTo?: string | undefined
  readonly attachments?: ReadonlyArray<Attachment> | undefined
}

/** The broker accepted the message (C-TOOL-4: accepted, not read or acted on). */
export interface Sent {
  readonly _tag: "Sent"
  /** The caller's target string (or, for `reply`, the answered sender's name or id). */
  readonly to: string
  /** The session it resolved to, when it resolved locally. */
  readonly targetId: string | undefined
  readonly messageId: string
  readonly delivery: Delivery["delivery"]
  readonly replyTo: string | undefined
  readonly text: string
}

/** The person declined the confirmation: a non-error, nothing sent (C-TOOL-7). */
export interface SendDeclined {
  readonly _tag: "Declined"
  readonly text: string
}

export interface Replied {
  readonly _tag: "Replied"
  readonly to: string
  readonly from: SessionInfo
  readonly questionId: string
  readonly reply: Message
  readonly text: string
}

export interface SessionList {
  readonly self: SessionInfo
  readonly sessions: ReadonlyArray<SessionInfo>
  readonly text: string
}

export interface PendingAsks {
  readonly asks: ReadonlyArray<InboundContext>
  readonly text: string
}

export interface StatusReport {
  readonly sessionId: string
  readonly activeSessions: number
  readonly text: string
}

/** Parameters of the `intercom` tool. */
export interface IntercomToolParams {
  readonly action: string
  readonly to?: string | undefined
  readonly message?: string | undefined
  /** Checked against C-TOOL-5 before anything is sent. */
  readonly attachments?: unknown
  readonly replyTo?: string | undefined
  readonly timeoutMs?: number | undefined
}

/** A tool-style result: errors are results too, never thrown (C-TOOL-12). */
export interface ToolResult {
  readonly text: string
  readonly isError: boolean
  readonly details: Readonly<Record<string, unknown>>
}

/** The client's own failures, passed through unchanged. */
export type ClientFailure = IntercomNotConnected | RequestTimeout | ConnectionLost

export type ListError = ClientFailure | SelfNotListed
export type SendFailure =
  | ClientFailure
  | MissingParameter
  | InvalidInput
  | SelfTargetRefused
  | TargetUnresolved
  | NotDelivered
export type AskFailure =
  | SendFailure
  | InvalidTimeout
  | AlreadyWaiting
  | ReplyTimeout
  | ReplyPeerDisconnected
  | SessionEnded
export type ReplyFailure = SendFailure | NoReplyContext
export type IntercomSessionError = ListError | AskFailure | ReplyFailure | UnknownAction

export interface IntercomSessionService {
  readonly sessionId: string
  readonly list: Effect.Effect<SessionList, ListError>
  readonly send: (request: SendRequest) => Effect.Effect<Sent | SendDeclined, SendFailure>
  /**
   * Sends a question and waits for its reply (C-ASK). Interrupting it is the
   * cancellation: `cancel_ask` goes to the broker and the slot is freed.
   */
  readonly ask: (request: AskRequest) => Effect.Effect<Replied | Sent, AskFailure>
  readonly reply: (request: ReplyRequest) => Effect.Effect<Sent, ReplyFailure>
  readonly pending: Effect.Effect<PendingAsks, IntercomNotConnected>
  readonly status: Effect.Effect<StatusReport, ClientFailure>
  /** The whole tool in one call; never fails. */
  readonly intercom: (params: IntercomToolParams) => Effect.Effect<ToolResult>
  /** The host's lifecycle status; pushed to the broker as presence (C-TOOL-10). */
  readonly setStatus: (status: LifecycleStatus) => Effect.Effect<void>
  /** A name or model change; pushed to the broker as presence. */
  readonly setIdentity: (update: Partial<HostIdentity>) => Effect.Effect<void>
  /**
   * A model turn starts. `messageId` names the inbound message that triggered
   * it; without one, the oldest message delivered with intent `trigger` is
   * taken. That message is what `reply` with no `to` answers (C-RPL-2).
   */
  readonly beginTurn: (messageId?: string) => Effect.Effect<InboundContext | undefined>
  /** The turn settled: `reply` falls back to the single pending ask (C-RPL-3). */
  readonly endTurn: Effect.Effect<void>
  /** Whether a blocking `ask` holds the reply-waiter slot. */
  readonly waiting: Effect.Effect<boolean>
}

/** The `register` payload a session's client should start with (name or fallback alias, status). */
export const sessionRegistration = (input: {
  readonly sessionId: string
  readonly identity: HostIdentity
  readonly pid: number
  readonly startedAt: number
  readonly status?: LifecycleStatus | undefined
  readonly statusSuffix?: string | undefined
}): SessionRegistration => {
  const presented = presentedName(input.identity.name, input.sessionId)
  return {
    cwd: input.identity.cwd,
    model: input.identity.model,
    pid: input.pid,
    startedAt: input.startedAt,
    lastActivity: input.startedAt,
    name: presented.name,
    runtimeFallbackAlias: presented.runtimeFallbackAlias,
    status: presenceStatus(input.status ?? "idle", input.statusSuffix)
  }
}

// ---------------------------------------------------------------------------
// The wiring
// ---------------------------------------------------------------------------

const make = (
  options: IntercomSessionOptions = {}
): Effect.Effect<IntercomSessionService, never, IntercomClient | Host | Scope.Scope> =>
  Effect.gen(function*() {
    const client = yield* IntercomClient
    const host = yield* Host
    const settings = resolveSettings(options)
    const presence = yield* makePresencePublisher({ client, identity: host.identity, statusSuffix: settings.statusSuffix })
    const generation = yield* makeGeneration({ client, host, settings, afterConnect: presence.markDirty })
    const sending = makeSending(generation)
    const actions = makeActions(generation, sending)
    const asking = makeAsking(generation, sending)
    yield* runInbound(generation, presence.lifecycle)
    const intercom = makeIntercomTool(baseToolActions(actions, asking))
    // Added last, so it runs first when the (sequential) Scope closes
    // (C-ORD-35): a wait in progress ends before the fibers above are interrupted.
    yield* Effect.addFinalizer(() => generation.retire)

    const { slot, tracker } = generation
    return {
      sessionId: generation.selfId,
      list: actions.list,
      send: actions.send,
      ask: asking.ask,
      reply: actions.reply,
      pending: actions.pending,
      status: actions.status,
      intercom,
      setStatus: presence.setStatus,
      setIdentity: presence.setIdentity,
      beginTurn: (messageId) => Effect.map(Clock.currentTimeMillis, (now) => tracker.beginTurn(messageId, now)),
      endTurn: Effect.sync(() => tracker.endTurn()),
      waiting: Effect.sync(() => slot.current() !== undefined)
    } satisfies IntercomSessionService
  })

/**
 * The session runtime service. One build is one session generation:
 * `IntercomSession.make` builds it in the current Scope (closing the Scope
 * ends the generation), `IntercomSession.layer` as a Layer. Both need an
 * `IntercomClient` and a `Host`.
 */
export class IntercomSession extends Context.Service<IntercomSession, IntercomSessionService>()(
  "effect-intercom/session/IntercomSession"
) {
  /** Builds a session generation in the current Scope. */
  static readonly make: (
    options?: IntercomSessionOptions
  ) => Effect.Effect<IntercomSessionService, never, IntercomClient | Host | Scope.Scope> = make
  /** A new generation per build; requires the client and the host. */
  static readonly layer = (
    options: IntercomSessionOptions = {}
  ): Layer.Layer<IntercomSession, never, IntercomClient | Host> => Layer.effect(IntercomSession, make(options))
}
