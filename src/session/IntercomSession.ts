/**
 * `IntercomSession`: the host-independent runtime of one agent session on the
 * bus — the `intercom` tool actions (list/send/ask/reply/pending/status), the
 * single reply-waiter slot, the reply tracker, inbound admission and
 * de-duplication, delivery intents and lifecycle presence.
 *
 * One layer build is one session generation (C-ORD-35): the inbound,
 * membership, control and presence fibers are forked in the layer's Scope,
 * and closing it interrupts them and ends a wait in progress, so nothing
 * started by an old generation can act afterwards.
 *
 * The session is the single consumer of `IntercomClient.messages`.
 */
import { Clock, Context, Deferred, Duration, Effect, Exit, Layer, Queue, Scope, Stream } from "effect"
import { randomUUID } from "node:crypto"
import type { Delivery, InboundMessage, SendError } from "../client/ClientConnection.ts"
import { type ConnectionLost, IntercomNotConnected, type RequestTimeout } from "../client/errors.ts"
import { IntercomClient } from "../client/IntercomClient.ts"
import { Reason } from "../protocol/delivery.ts"
import { EXACT_SEND_V1 } from "../protocol/features.ts"
import type { Attachment, Message, ReceiptStatus, SessionInfo, SessionRegistration } from "../protocol/frames.ts"
import {
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
import { type DeliveryIntent, type HistoryEntry, Host, type HostIdentity } from "./Host.ts"
import { type AdmissionLimits, makeInboundAdmission } from "./InboundAdmission.ts"
import {
  formatAttachments,
  type LifecycleStatus,
  NON_INTERACTIVE_BUSY_REPLY,
  presenceStatus,
  presentedName,
  renderInbound,
  renderPending,
  renderReply,
  renderSessionList,
  renderStatus
} from "./render.ts"
import { type InboundContext, makeReplyTracker } from "./ReplyTracker.ts"
import { makeReplyWaiterSlot, type Waiter } from "./ReplyWaiter.ts"
import { resolutionFailure, resolveTarget } from "./targets.ts"
import { checkLabel, checkText, validateAttachments } from "./validation.ts"

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

export const DEFAULT_ASK_TIMEOUT_MS = 600_000

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

type ClientFailure = IntercomNotConnected | RequestTimeout | ConnectionLost

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

const ACTIONS = new Set(["list", "send", "ask", "reply", "pending", "status"])

const isBusy = (status: LifecycleStatus): boolean => status !== "idle"

// ---------------------------------------------------------------------------
// The runtime
// ---------------------------------------------------------------------------

const make = (
  options: IntercomSessionOptions = {}
): Effect.Effect<IntercomSessionService, never, IntercomClient | Host | Scope.Scope> =>
  Effect.gen(function*() {
    const client = yield* IntercomClient
    const host = yield* Host
    const scope = yield* Effect.scope
    const askTimeoutMs = options.askTimeoutMs ?? DEFAULT_ASK_TIMEOUT_MS
    const replyHint = options.replyHint ?? true
    const confirmSend = options.confirmSend ?? false
    const inboundTrigger = options.inboundTrigger ?? "always"
    const connectTimeoutMs = options.connectTimeoutMs ?? 10_000
    const selfId = client.sessionId

    // State of this generation: plain fields, touched only by synchronous code.
    const slot = makeReplyWaiterSlot()
    const tracker = makeReplyTracker(askTimeoutMs)
    const admission = makeInboundAdmission(options.inboundDedupe)
    let identity: HostIdentity = host.identity
    let lifecycle: LifecycleStatus = "idle"
    let lastPresence: string | undefined
    let ended = false

    /** Work that must not hold up its caller, owned by this generation. */
    const background = <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<void> =>
      Effect.asVoid(Effect.forkIn(Effect.ignore(effect), scope))

    const record = (entry: HistoryEntry): Effect.Effect<void> =>
      host.record === undefined ? Effect.void : host.record(entry).pipe(Effect.catchCause(() => Effect.void))

    const receipt = (messageId: string, status: ReceiptStatus, detail?: string): Effect.Effect<void> =>
      Effect.flatMap(Clock.currentTimeMillis, (timestamp) =>
        background(client.receipt({ messageId, status, timestamp, ...(detail === undefined ? {} : { detail }) })))

    // --- presence: one fiber pushes the latest desired presence, in order ---

    const presenceDirty = yield* Queue.sliding<true>(1)
    const markPresenceDirty = Effect.asVoid(Queue.offer(presenceDirty, true))
    const desiredPresence = () => {
      const presented = presentedName(identity.name, selfId)
      return {
        name: presented.name,
        runtimeFallbackAlias: presented.runtimeFallbackAlias,
        status: presenceStatus(lifecycle, options.statusSuffix),
        model: identity.model
      }
    }
    const pushPresence = Effect.gen(function*() {
      // Never connects by itself: the connection stays lazy (C-TOOL-14).
      if (!(yield* client.status).connected) return
      const desired = desiredPresence()
      const key = JSON.stringify(desired)
      if (key === lastPresence) return
      yield* client.presence(desired)
      lastPresence = key
    }).pipe(Effect.ignore)
    yield* Effect.forkScoped(
      Effect.forever(Effect.andThen(Queue.take(presenceDirty), pushPresence), { disableYield: true })
    )

    /**
     * Registers on first use (C-TOOL-14) and refreshes presence. Bounded: while
     * the broker is away the client reconnects in the background, and a tool
     * call must answer `Intercom not connected` rather than hang (C-TOOL-12).
     */
    const connect: Effect.Effect<void, IntercomNotConnected> = Effect.suspend(() =>
      ended
        ? Effect.fail(new IntercomNotConnected({ reason: "the intercom session has ended" }))
        : client.connect.pipe(
          Effect.timeoutOrElse({
            duration: Duration.millis(connectTimeoutMs),
            orElse: () => Effect.fail(new IntercomNotConnected({ reason: `no connection within ${connectTimeoutMs} ms` }))
          }),
          Effect.andThen(markPresenceDirty)
        )
    )

    // --- sending ---------------------------------------------------------

    const newMessage = (
      text: string,
      attachments: ReadonlyArray<Attachment> | undefined,
      extra: { readonly replyTo?: string | undefined; readonly expectsReply?: boolean }
    ): Effect.Effect<Message> =>
      Effect.map(Clock.currentTimeMillis, (timestamp) => ({
        id: randomUUID(),
        timestamp,
        content: attachments === undefined || attachments.length === 0 ? { text } : { text, attachments },
        ...(extra.replyTo === undefined ? {} : { replyTo: extra.replyTo }),
        ...(extra.expectsReply === true ? { expectsReply: true } : {})
      }))

    const notDelivered = (kind: NotDelivered["kind"], to: string) =>
    (error: SendError): SelfTargetRefused | NotDelivered => {
      switch (error._tag) {
        case "SelfTarget":
          return new SelfTargetRefused()
        case "RequestTimeout":
        case "ConnectionLost":
          return new NotDelivered({ kind, to, reason: error.message })
        default:
          return new NotDelivered({ kind, to, reason: error.reason, code: error.code })
      }
    }

    const exactRequest = (message: Message, target: SessionInfo, exact: boolean) =>
      exact && message.replyTo === undefined && target.endpointEpoch !== undefined
        ? { to: target.id, message, targetId: target.id, targetEpoch: target.endpointEpoch }
        : { to: target.id, message }

    /**
     * Sends to a locally resolved target (epoch-bound when the broker offers
     * `exact-send-v1`; after `E_TARGET_REBOUND` it re-lists once and resends
     * with the same message id, P47), or to the raw string when nothing
     * resolved (C-TGT-7: the broker answers).
     */
    const deliver = (
      kind: NotDelivered["kind"],
      to: string,
      message: Message,
      target: SessionInfo | undefined
    ): Effect.Effect<Delivery, SelfTargetRefused | NotDelivered | ClientFailure> =>
      Effect.gen(function*() {
        if (target === undefined) {
          return yield* client.send({ to, message }).pipe(
            Effect.mapError((error) => error._tag === "IntercomNotConnected" ? error : notDelivered(kind, to)(error))
          )
        }
        const exact = (yield* client.status).features.includes(EXACT_SEND_V1)
        return yield* client.send(exactRequest(message, target, exact)).pipe(
          Effect.catchTag("TargetRebound", (rebound) =>
            Effect.gen(function*() {
              const sessions = yield* client.list
              const again = resolveTarget(sessions, to)
              if (again._tag !== "Found") return yield* Effect.fail(rebound)
              if (again.session.id === selfId) return yield* new SelfTargetRefused()
              return yield* client.send(exactRequest(message, again.session, exact))
            })),
          Effect.mapError((error) =>
            error._tag === "IntercomNotConnected" || error._tag === "SelfTargetRefused"
              ? error
              : notDelivered(kind, to)(error)
          )
        )
      })

    /** Lists and resolves `to` for send/ask (C-TGT); `undefined` when nothing matched. */
    const resolveForSend = (to: string) =>
      Effect.gen(function*() {
        const sessions = yield* client.list
        const resolution = resolveTarget(sessions, to)
        switch (resolution._tag) {
          case "NotFound":
            return undefined
          case "Found":
            if (resolution.session.id === selfId) return yield* new SelfTargetRefused()
            return resolution.session
          default:
            return yield* new TargetUnresolved({ target: to, reason: resolutionFailure(to, resolution, sessions) })
        }
      })

    /** Common checks of an outgoing message (C-TOOL-2, -5, -6). */
    const checkOutgoing = (
      request: {
        readonly to?: string | undefined
        readonly message?: string | undefined
        readonly replyTo?: string | undefined
        readonly attachments?: unknown
      },
      needsTo: boolean
    ): Effect.Effect<ReadonlyArray<Attachment> | undefined, MissingParameter | InvalidInput> =>
      Effect.suspend((): Effect.Effect<ReadonlyArray<Attachment> | undefined, MissingParameter | InvalidInput> => {
        if (needsTo && (request.to === undefined || request.to.trim() === "")) {
          return Effect.fail(new MissingParameter({ required: "to and message" }))
        }
        if (request.message === undefined || request.message === "") {
          return Effect.fail(new MissingParameter({ required: needsTo ? "to and message" : "message" }))
        }
        const invalid = checkLabel("to", request.to) ?? checkLabel("replyTo", request.replyTo) ??
          checkText("message", request.message)
        if (invalid !== undefined) return Effect.fail(invalid)
        const attachments = validateAttachments(request.attachments)
        return attachments instanceof InvalidInput ? Effect.fail(attachments) : Effect.succeed(attachments)
      })

    const sentText = (verb: "Message" | "Reply", to: string, delivery: Delivery["delivery"]): string =>
      delivery === "queued" ? `${verb} queued for ${to}` : `${verb} sent to ${to}`

    const recordSent = (to: string, message: Message) =>
      record({
        _tag: "intercom_sent",
        to,
        message: {
          text: message.content.text,
          attachments: message.content.attachments,
          replyTo: message.replyTo
        },
        messageId: message.id,
        timestamp: message.timestamp
      })

    // --- actions -------------------------------------------------------------

    const list: IntercomSessionService["list"] = Effect.gen(function*() {
      yield* connect
      const sessions = yield* client.list
      const self = sessions.find((session) => session.id === selfId)
      if (self === undefined) return yield* new SelfNotListed()
      return { self, sessions, text: renderSessionList(self, sessions) }
    })

    const send: IntercomSessionService["send"] = (request) =>
      Effect.gen(function*() {
        const attachments = yield* checkOutgoing(request, true)
        yield* connect
        const target = yield* resolveForSend(request.to)
        if (confirmSend && host.hasUI && request.replyTo === undefined) {
          const confirmed = yield* host.confirm({
            title: "Send Message",
            text: `Send to "${request.to}":\n\n${request.message}${formatAttachments(attachments)}`
          })
          if (!confirmed) return { _tag: "Declined", text: "Message cancelled by user" } satisfies SendDeclined
        }
        const message = yield* newMessage(request.message, attachments, { replyTo: request.replyTo })
        const delivery = yield* deliver("Message", request.to, message, target)
        yield* recordSent(request.to, message)
        if (request.replyTo !== undefined) tracker.markReplied(request.replyTo)
        return {
          _tag: "Sent",
          to: request.to,
          targetId: target?.id,
          messageId: message.id,
          delivery: delivery.delivery,
          replyTo: request.replyTo,
          text: sentText("Message", request.to, delivery.delivery)
        } satisfies Sent
      })

    /** The part of `ask` that runs while this call holds the slot. */
    const askHolding = (
      waiter: Waiter,
      request: AskRequest,
      attachments: ReadonlyArray<Attachment> | undefined,
      timeoutMs: number
    ): Effect.Effect<Replied | Sent, AskFailure> =>
      Effect.gen(function*() {
        yield* connect
        const target = yield* resolveForSend(request.to)
        // P60: blocking asks are not queued; a target that is not live fails before sending.
        if (target === undefined) {
          return yield* new NotDelivered({ kind: "Message", to: request.to, reason: Reason.targetDisconnected })
        }
        const message = yield* newMessage(request.message, attachments, { expectsReply: true })
        const bound = slot.bind(waiter, { questionId: message.id, targetId: target.id, targetName: target.name })
        const cancelAsk = background(client.cancelAsk(message.id))
        const delivery = yield* deliver("Message", request.to, message, target).pipe(
          Effect.onInterrupt(() => cancelAsk)
        )
        yield* recordSent(request.to, message)
        if (delivery.delivery === "queued") {
          return {
            _tag: "Sent",
            to: request.to,
            targetId: target.id,
            messageId: message.id,
            delivery: delivery.delivery,
            replyTo: undefined,
            text: sentText("Message", request.to, delivery.delivery)
          } satisfies Sent
        }
        const answer = yield* Deferred.await(bound.outcome).pipe(
          Effect.timeoutOrElse({
            duration: Duration.millis(timeoutMs),
            orElse: () => Effect.fail(new ReplyTimeout({ target: request.to, timeoutMs }))
          }),
          // Timeout, departed peer, generation close or interruption: the broker forgets the ask edge.
          Effect.onExit((exit) => Exit.isSuccess(exit) ? Effect.void : cancelAsk)
        )
        yield* record({
          _tag: "intercom_received",
          from: request.to,
          message: { text: answer.message.content.text, attachments: answer.message.content.attachments },
          messageId: answer.message.id,
          timestamp: answer.message.timestamp
        })
        return {
          _tag: "Replied",
          to: request.to,
          from: answer.from,
          questionId: message.id,
          reply: answer.message,
          text: renderReply(request.to, answer.message)
        } satisfies Replied
      })

    const ask: IntercomSessionService["ask"] = (request) =>
      Effect.gen(function*() {
        const attachments = yield* checkOutgoing(request, true)
        const timeoutMs = request.timeoutMs ?? askTimeoutMs
        if (!(timeoutMs > 0) || !Number.isFinite(timeoutMs)) return yield* new InvalidTimeout({ value: timeoutMs })
        // C-ASK-1: the reservation is one synchronous check-and-set, made uninterruptibly
        // together with the release that follows whatever happens to this call.
        return yield* Effect.acquireUseRelease(
          Effect.sync(() => slot.reserve()),
          (waiter) =>
            waiter === undefined
              ? Effect.fail(new AlreadyWaiting())
              : askHolding(waiter, request, attachments, timeoutMs),
          (waiter) => Effect.sync(() => waiter === undefined ? undefined : slot.release(waiter))
        )
      })

    const reply: IntercomSessionService["reply"] = (request) =>
      Effect.gen(function*() {
        const attachments = yield* checkOutgoing(request, false)
        yield* connect
        const now = yield* Clock.currentTimeMillis
        const context = tracker.resolve({ to: request.to, replyTo: request.replyTo }, now)
        if (context instanceof NoReplyContext || context instanceof TargetUnresolved) return yield* Effect.fail(context)
        if (context.from.id === selfId) return yield* new SelfTargetRefused()
        const display = context.from.name?.trim() || context.from.id
        // The broker accepts `replyTo` only for an open ask (P62); an answer to a
        // plain message in its triggered turn goes to the same sender, unthreaded.
        const replyTo = context.message.expectsReply === true ? context.message.id : undefined
        const message = yield* newMessage(request.message, attachments, { replyTo })
        const delivery = yield* client.send({ to: context.from.id, message }).pipe(
          Effect.mapError((error) => error._tag === "IntercomNotConnected" ? error : notDelivered("Reply", display)(error))
        )
        tracker.markReplied(context.message.id)
        yield* recordSent(display, message)
        return {
          _tag: "Sent",
          to: display,
          targetId: context.from.id,
          messageId: message.id,
          delivery: delivery.delivery,
          replyTo: context.message.id,
          text: sentText("Reply", display, delivery.delivery)
        } satisfies Sent
      })

    const pending: IntercomSessionService["pending"] = Effect.gen(function*() {
      yield* connect
      const now = yield* Clock.currentTimeMillis
      const asks = tracker.pending(now)
      return { asks, text: renderPending(asks, now) }
    })

    const status: IntercomSessionService["status"] = Effect.gen(function*() {
      yield* connect
      const sessions = yield* client.list
      return { sessionId: selfId, activeSessions: sessions.length, text: renderStatus(selfId, sessions.length) }
    })

    // --- the tool entry point --------------------------------------------------

    const ok = (text: string, details: Record<string, unknown>): ToolResult => ({ text, isError: false, details })
    const failed = (error: IntercomSessionError): ToolResult => ({
      text: error.message,
      isError: true,
      details: {
        error: true,
        reason: error._tag,
        ...(error._tag === "NotDelivered" && error.code !== undefined ? { code: error.code } : {})
      }
    })
    const sentDetails = (sent: Sent): Record<string, unknown> => ({
      messageId: sent.messageId,
      delivered: sent.delivery === "socket_delivered",
      queued: sent.delivery === "queued",
      ...(sent.targetId === undefined ? {} : { targetId: sent.targetId }),
      ...(sent.replyTo === undefined ? {} : { replyTo: sent.replyTo })
    })

    const runAction = (params: IntercomToolParams): Effect.Effect<ToolResult, IntercomSessionError> => {
      const to = params.to ?? ""
      const message = params.message ?? ""
      switch (params.action) {
        case "list":
          return Effect.map(list, (result) => ok(result.text, { sessionId: result.self.id, sessions: result.sessions }))
        case "send":
          return Effect.map(
            Effect.flatMap(checkOutgoing({ ...params, to, message }, true), (attachments) =>
              send({ to, message, attachments, replyTo: params.replyTo })),
            (result) => result._tag === "Declined" ? ok(result.text, { cancelled: true }) : ok(result.text, sentDetails(result))
          )
        case "ask":
          return Effect.map(
            Effect.flatMap(checkOutgoing({ ...params, to, message }, true), (attachments) =>
              ask({ to, message, attachments, timeoutMs: params.timeoutMs })),
            (result) =>
              result._tag === "Sent"
                ? ok(result.text, sentDetails(result))
                : ok(result.text, { messageId: result.questionId, replyId: result.reply.id, from: result.from.id })
          )
        case "reply":
          return Effect.map(
            Effect.flatMap(checkOutgoing({ ...params, message }, false), (attachments) =>
              reply({ message, to: params.to, replyTo: params.replyTo, attachments })),
            (result) => ok(result.text, sentDetails(result))
          )
        case "pending":
          return Effect.map(pending, (result) =>
            ok(result.text, {
              asks: result.asks.map((context) => ({
                from: context.from.id,
                messageId: context.message.id,
                receivedAt: context.receivedAt
              }))
            }))
        case "status":
          return Effect.map(status, (result) =>
            ok(result.text, { connected: true, sessionId: result.sessionId, activeSessions: result.activeSessions }))
        default:
          return Effect.fail(new UnknownAction({ action: params.action }))
      }
    }

    const intercom: IntercomSessionService["intercom"] = (params) =>
      (ACTIONS.has(params.action) ? runAction(params) : Effect.fail(new UnknownAction({ action: params.action }))).pipe(
        Effect.catch((error) => Effect.succeed(failed(error)))
      )

    // --- inbound -------------------------------------------------------------

    const shouldTrigger = (message: Message): boolean =>
      inboundTrigger === "always" || (inboundTrigger === "replies" && message.replyTo !== undefined)

    /** C-DLV-13 / open question 11: a busy headless session that will exit answers an ask it cannot take. */
    const answerBusy = (context: InboundContext): Effect.Effect<void> =>
      Effect.gen(function*() {
        const message = yield* newMessage(NON_INTERACTIVE_BUSY_REPLY, undefined, { replyTo: context.message.id })
        yield* background(
          client.send({ to: context.from.id, message }).pipe(
            Effect.tap(() => Effect.sync(() => tracker.markReplied(context.message.id)))
          )
        )
      })

    const handleInbound = (inbound: InboundMessage): Effect.Effect<void> =>
      Effect.gen(function*() {
        const { from, message } = inbound
        const now = yield* Clock.currentTimeMillis
        if (admission.seen(from.id, message.id, now)) {
          return yield* receipt(message.id, "acknowledged", "duplicate message id suppressed")
        }
        yield* receipt(message.id, "receiver_received")
        // C-ORD-32: a reply to the live waiter resolves it before any other handling.
        if (slot.route(inbound)) {
          admission.commit(from.id, message.id, now)
          return yield* receipt(message.id, "acknowledged", "matched reply waiter")
        }
        const context: InboundContext = { from, message, receivedAt: now }
        tracker.record(context)
        const expectsReply = message.expectsReply === true
        let intent: DeliveryIntent
        if (
          !host.hasUI && host.exitsWhenDone === true && isBusy(lifecycle) && expectsReply &&
          message.replyTo === undefined
        ) {
          yield* answerBusy(context)
          intent = "passive"
        } else {
          intent = !shouldTrigger(message) ? "passive" : isBusy(lifecycle) ? "steer" : "trigger"
        }
        if (intent === "trigger") tracker.queueTurn(context)
        const handed = yield* Effect.exit(
          host.deliver({ intent, from, message, text: renderInbound(from, message, replyHint), expectsReply })
        )
        if (Exit.isSuccess(handed)) {
          admission.commit(from.id, message.id, now)
          return yield* receipt(message.id, "acknowledged", "accepted by receiver")
        }
        // Not committed: a redelivery of the same message may be handled again (C-DLV-11).
        tracker.markReplied(message.id)
        yield* Effect.logWarning("Intercom host did not take an inbound message", handed.cause)
      })

    yield* Effect.forkScoped(
      client.messages.pipe(
        Stream.runForEach((inbound) => handleInbound(inbound).pipe(Effect.catchCause(Effect.logError)))
      ),
      { startImmediately: true }
    )

    yield* Effect.forkScoped(
      client.presenceEvents.pipe(
        Stream.runForEach((event) =>
          Effect.sync(() => {
            if (event._tag !== "Left") return
            slot.peerLeft(event.sessionId, new ReplyPeerDisconnected({ peerId: event.sessionId }))
            tracker.forgetSender(event.sessionId)
          })
        )
      ),
      { startImmediately: true }
    )

    yield* Effect.forkScoped(
      client.controls.pipe(
        Stream.runForEach((event) => {
          if (event._tag !== "Control") return Effect.void
          // P73: the sender withdrew or replaced a message; drop its pending ask.
          tracker.markReplied(event.control.messageId)
          return receipt(
            event.control.messageId,
            event.control.action === "cancel" ? "cancellation_requested" : "superseded"
          )
        })
      ),
      { startImmediately: true }
    )

    // Generation close (C-ORD-35): a wait in progress ends; forked fibers are interrupted by the Scope.
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        ended = true
        slot.teardown(new SessionEnded())
      })
    )

    return {
      sessionId: selfId,
      list,
      send,
      ask,
      reply,
      pending,
      status,
      intercom,
      setStatus: (next) =>
        Effect.suspend(() => {
          lifecycle = next
          return markPresenceDirty
        }),
      setIdentity: (update) =>
        Effect.suspend(() => {
          identity = {
            name: "name" in update ? update.name : identity.name,
            cwd: update.cwd ?? identity.cwd,
            model: update.model ?? identity.model
          }
          return markPresenceDirty
        }),
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
