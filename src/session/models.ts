/**
 * The public models of the session runtime: its options, the requests and
 * results of each action, the tool's parameters and result, and the
 * `IntercomSessionService` interface. `IntercomSession.ts` builds the service
 * and re-exports everything here.
 *
 * Size: types and their JSDoc only, one per action, in the order of the
 * service interface; there is no logic to split.
 */
import type { Effect } from "effect"
import type { Delivery } from "../client/events.ts"
import type { IntercomNotConnected } from "../client/errors.ts"
import type { Attachment, Message, SessionInfo } from "../protocol/frames.ts"
import type { ContactSupervisorParams } from "./contactSupervisor.ts"
import type { AskFailure, ClientFailure, ListError, ReplyFailure, SendFailure } from "./errors.ts"
import type { HostIdentity } from "./Host.ts"
import type { AdmissionLimits } from "./InboundAdmission.ts"
import type { ListScope } from "./project.ts"
import type { LifecycleStatus } from "./render.ts"
import type { InboundContext, PendingAsk, TurnMessage } from "./ReplyTracker.ts"
import type { ChildBridge } from "./supervisorBridge.ts"
import type { ToolVisibility } from "./ToolExposure.ts"
import type { IntercomToolParams } from "./toolParams.ts"

// ---------------------------------------------------------------------------
// Options, requests, results
// ---------------------------------------------------------------------------

/**
 * Whether inbound messages start a model turn: all, only replies, or none
 * (config `inboundTrigger`). Messages that do not are delivered `passive`.
 *
 * @category models
 * @since 0.1.0
 */
export type InboundTrigger = "always" | "replies" | "never"

/**
 * The options of a session generation: plain values the wiring code takes
 * from the config module (`loadIntercomSettings()` in `effect-intercom/config`).
 *
 * @category models
 * @since 0.1.0
 */
export interface IntercomSessionOptions {
  /** How long an `ask` waits, and how long a received ask stays pending. Default 600 000 ms (10 minutes). */
  readonly askTimeoutMs?: number | undefined
  /** Append the reply hint to inbound asks (C-RPL-9). Default true. */
  readonly replyHint?: boolean | undefined
  /**
   * How `pending` writes the call that answers the ask `messageId` (C-RPL-8).
   * Default: the tool call, `intercom({ action: "reply", replyTo: "<id>",
   * message: "..." })` (`toolReplyCall`); a host whose user is a person at a
   * shell gives its command line instead (the CLI does).
   */
  readonly replyCall?: ((messageId: string) => string) | undefined
  /** Confirm non-reply sends with the person when the host has a UI (C-TOOL-7). Default false. */
  readonly confirmSend?: boolean | undefined
  /** Custom status appended as `<lifecycle> · <custom>` (C-TOOL-10). */
  readonly statusSuffix?: string | undefined
  /** Which inbound messages start a turn. Default `"always"`. */
  readonly inboundTrigger?: InboundTrigger | undefined
  /** Inbound de-duplication window (C-DLV-11). Default 1 hour / 1000 messages. */
  readonly inboundDedupe?: AdmissionLimits | undefined
  /**
   * How long an action waits for the connection (a first connect, or a
   * reconnect in progress) before it reports `Intercom not connected`. Default 10 000 ms.
   */
  readonly connectTimeoutMs?: number | undefined
  /**
   * `"after-first-use"`: the host shows the full tool only once it is loaded,
   * used, or an actionable message arrives (C-TOOL-15; needs `Host.exposeTool`).
   * Default `"always"`.
   */
  readonly toolVisibility?: ToolVisibility | undefined
  /** What `list` and `status` show without a `scope` parameter (C-TOOL-16). Default `"all"`. */
  readonly defaultScope?: ListScope | undefined
  /**
   * A delegated child's bridge metadata (`readChildBridge(process.env)`).
   * With a grant in it, the session has `contactSupervisor` (C-SUP-1); the
   * client must then be made with `supervisorGrant: bridge.grant` and register
   * under `childSessionName` of it. Without one (or without a grant), the
   * session has no `contactSupervisor`.
   */
  readonly childBridge?: ChildBridge | undefined
}

/**
 * The input of `send`.
 *
 * @category models
 * @since 0.1.0
 */
export interface SendRequest {
  /** Exact id, name (ignoring case) or a unique id prefix of 8+ characters (C-TGT-1). */
  readonly to: string
  /** The body; TAB, LF and CR are the only control characters allowed (C-TOOL-6). */
  readonly message: string
  readonly attachments?: ReadonlyArray<Attachment> | undefined
  /** Threads the message as the answer to an inbound ask, which it then marks replied (C-RPL-5). */
  readonly replyTo?: string | undefined
  /** How the message reaches a busy recipient (C-DLV-1): `steer` (default), `queue` or `passive`. */
  readonly delivery?: string | undefined
  /** With `delivery: "queue"`: `stack` or `replace` (C-DLV-4). */
  readonly queueMode?: string | undefined
  /** With `queueMode: "replace"`: the thread whose latest message replaces earlier staged ones (C-DLV-5). */
  readonly threadId?: string | undefined
  /** Legacy, send-only alias for `delivery: "passive"` (C-DLV-3). */
  readonly passive?: boolean | undefined
}

/**
 * The input of `ask`.
 *
 * @category models
 * @since 0.1.0
 */
export interface AskRequest {
  /** Exact id, name (ignoring case) or a unique id prefix; must be a live session (P60). */
  readonly to: string
  readonly message: string
  readonly attachments?: ReadonlyArray<Attachment> | undefined
  /** Overrides `askTimeoutMs` for this ask. */
  readonly timeoutMs?: number | undefined
  /**
   * `steer` or `queue`; an ask is never passive (C-ASK-10). Without it the ask
   * honours the target's health (C-DLV-2, C-HLT-5): a target publishing
   * `acceptsAsks: false` gets the question, but the ask returns at once
   * (`reason: "peer_busy"`) instead of waiting. With it, the ask waits
   * whatever the target's health (C-HLT-6).
   */
  readonly delivery?: string | undefined
  readonly queueMode?: string | undefined
  readonly threadId?: string | undefined
  /** Refused when true: `passive` is a send-only alias and an ask is never passive (C-ASK-10). */
  readonly passive?: boolean | undefined
}

/**
 * The input of `reply`. Without `to` or `replyTo` it answers the current
 * turn's triggering message, else the single pending ask (C-RPL-2, C-RPL-3).
 * With `replyError` it answers an ask with a failure (C-ASK-7).
 *
 * @category models
 * @since 0.1.0
 */
export interface ReplyRequest {
  readonly message: string
  /** Which sender to answer when several asks are pending (C-RPL-4). */
  readonly to?: string | undefined
  /** The exact ask to answer. */
  readonly replyTo?: string | undefined
  readonly attachments?: ReadonlyArray<Attachment> | undefined
  /**
   * Answers the ask with a failure instead (C-ASK-7): the asker's `ask` ends
   * as an error whose text is this string. Only for an ask (`expectsReply`).
   */
  readonly replyError?: string | undefined
  /** How the message reaches a busy recipient (C-DLV-1): `steer` (default), `queue` or `passive`. */
  readonly delivery?: string | undefined
  /** With `delivery: "queue"`: `stack` or `replace` (C-DLV-4). */
  readonly queueMode?: string | undefined
  /** With `queueMode: "replace"`: the thread whose latest message replaces earlier staged ones (C-DLV-5). */
  readonly threadId?: string | undefined
  /** Refused when true: `passive` is a send-only alias; use `delivery: "passive"` (C-DLV-3). */
  readonly passive?: boolean | undefined
}

/**
 * The broker accepted the message (C-TOOL-4: accepted, not read or acted
 * on). Also what `ask` returns when the broker queued the question for a
 * session that is away.
 *
 * @category models
 * @since 0.1.0
 */
export interface Sent {
  readonly _tag: "Sent"
  /** The caller's target string (or, for `reply`, the answered sender's name or id). */
  readonly to: string
  /** The session it resolved to, when it resolved locally. */
  readonly targetId: string | undefined
  readonly messageId: string
  /** `socket_delivered`, `queued` for a session that is away, or `staged` for replace coalescing (C-DLV-6). */
  readonly delivery: Delivery["delivery"]
  /** For `staged`: the replace thread. */
  readonly threadId?: string | undefined
  /** The ask this message answers, if any. */
  readonly replyTo: string | undefined
  /** `Message sent to <to>`, `Message queued for <to>`, `Reply sent to <name>`, … */
  readonly text: string
  /**
   * Set when the connection was lost before the broker confirmed the message
   * and the broker's record says it was delivered to the session `to`
   * resolves to now (`DeliveredBeforeLoss`): `delivery` is then
   * `socket_delivered`, and `text` says so after `Message sent to <to>`.
   */
  readonly deliveredBeforeLoss?: true | undefined
  /**
   * Set on an `ask` that did not wait because its target publishes
   * `acceptsAsks: false` (C-HLT-5): `peer_busy`, with `reasonCode`
   * `recipient_not_accepting_asks` and `replied: false`.
   */
  readonly reason?: "peer_busy" | undefined
  readonly reasonCode?: "recipient_not_accepting_asks" | undefined
  readonly replied?: false | undefined
}

/**
 * The person declined the confirmation: a non-error, nothing sent (C-TOOL-7).
 *
 * @category models
 * @since 0.1.0
 */
export interface SendDeclined {
  readonly _tag: "Declined"
  /** `Message cancelled by user`. */
  readonly text: string
}

/**
 * The answer to an `ask` (C-ASK-8).
 *
 * @category models
 * @since 0.1.0
 */
export interface Replied {
  readonly _tag: "Replied"
  /** The target as the caller wrote it. */
  readonly to: string
  /** The session that answered. */
  readonly from: SessionInfo
  /** The id of the question. */
  readonly questionId: string
  readonly reply: Message
  /** `**Reply from <to>:**` and the answer with its attachments. */
  readonly text: string
}

/**
 * The result of `list` (C-TOOL-9).
 *
 * @category models
 * @since 0.1.0
 */
export interface SessionList {
  readonly self: SessionInfo
  /** Every live session of the scope, this one included, in registration order. */
  readonly sessions: ReadonlyArray<SessionInfo>
  /** This session's home group: every listed session is in it (C-GRP-5). */
  readonly group: string
  readonly text: string
}

/**
 * The result of `pending`: unanswered inbound asks, oldest first (C-RPL-7),
 * each with when it was asked and when it expires on this session's clock
 * (`PendingAsk`); `text` shows both as "asked 7s ago · expires in 9m 53s".
 *
 * @category models
 * @since 0.1.0
 */
export interface PendingAsks {
  readonly asks: ReadonlyArray<PendingAsk>
  readonly text: string
}

/**
 * The result of `status` (C-TOOL-11).
 *
 * @category models
 * @since 0.1.0
 */
export interface StatusReport {
  readonly sessionId: string
  /** This session's home group (C-TOOL-11). */
  readonly group: string
  /** Live sessions of the scope in that group, this one included. */
  readonly activeSessions: number
  readonly text: string
}

/**
 * Parameters of the `intercom` tool, as a model writes them: derived from
 * their Schema in `toolParams.ts`, which lists and documents every field.
 *
 * @category models
 * @since 0.1.0
 */
export type { IntercomToolParams }

/**
 * A tool-style result: errors are results too, never thrown (C-TOOL-12). An
 * error's `details` are `{ error: "<_tag>", code? }`.
 *
 * @category models
 * @since 0.1.0
 */
export interface ToolResult {
  readonly text: string
  readonly isError: boolean
  readonly details: Readonly<Record<string, unknown>>
}

/**
 * The operations of one session generation: the typed actions, the whole
 * tool in one call (`intercom`), and the lifecycle the host pushes in.
 *
 * @category models
 * @since 0.1.0
 */
export interface IntercomSessionService {
  /** This session's id (its client's). */
  readonly sessionId: string
  /**
   * Registers now rather than on first use (a host that wants to receive mail
   * from the start), bounded like every action's connect.
   */
  readonly connect: Effect.Effect<void, IntercomNotConnected>
  /** The live sessions of the scope (C-TOOL-9). */
  readonly list: Effect.Effect<SessionList, ListError>
  /** Sends a message; `Declined` when the person said no to `confirmSend` (C-TOOL-4, C-TOOL-7). */
  readonly send: (request: SendRequest) => Effect.Effect<Sent | SendDeclined, SendFailure>
  /**
   * Sends a question and waits for its reply (C-ASK). Interrupting it is the
   * cancellation: `cancel_ask` goes to the broker and the slot is freed.
   */
  readonly ask: (request: AskRequest) => Effect.Effect<Replied | Sent, AskFailure>
  /** Answers an inbound ask (or the message that triggered the current turn) (C-RPL). */
  readonly reply: (request: ReplyRequest) => Effect.Effect<Sent, ReplyFailure>
  /** Inbound asks still owed an answer (C-RPL-7). */
  readonly pending: Effect.Effect<PendingAsks, IntercomNotConnected>
  /** This session's id and how many sessions are live (C-TOOL-11). */
  readonly status: Effect.Effect<StatusReport, ClientFailure>
  /**
   * The whole tool in one call: checks the parameters, runs the action and
   * renders it. Never fails: an error is a result with `isError: true`.
   *
   * @example
   * ```ts
   * import { Effect } from "effect"
   * import { IntercomSession } from "effect-intercom/session"
   *
   * const program = Effect.gen(function*() {
   *   const session = yield* IntercomSession
   *   const result = yield* session.intercom({ action: "ask", to: "reviewer", message: "Is the retry logic safe?" })
   *   if (result.isError) yield* Effect.logWarning(result.text, result.details["error"])
   *   else yield* Effect.log(result.text) // **Reply from reviewer:** …
   * })
   * ```
   */
  readonly intercom: (params: IntercomToolParams) => Effect.Effect<ToolResult>
  /**
   * The tool's actions for the host's own UI (an overlay, a command): the same
   * checks and texts as `intercom`, but not the model's use, so a lazily
   * exposed tool stays hidden (C-TOOL-15).
   */
  readonly act: (params: IntercomToolParams) => Effect.Effect<ToolResult>
  /** The host's lifecycle status; pushed to the broker as presence (C-TOOL-10). */
  readonly setStatus: (status: LifecycleStatus) => Effect.Effect<void>
  /** A name or model change; pushed to the broker as presence. */
  readonly setIdentity: (update: Partial<HostIdentity>) => Effect.Effect<void>
  /**
   * A model turn starts. `message` names the inbound message that triggered
   * it by its sender's session id and its id (two senders may use one id);
   * without it, the oldest message delivered with intent `trigger` is taken.
   * That message is what `reply` with no `to` answers (C-RPL-2).
   */
  readonly beginTurn: (message?: TurnMessage) => Effect.Effect<InboundContext | undefined>
  /** The turn settled: `reply` falls back to the single pending ask (C-RPL-3). */
  readonly endTurn: Effect.Effect<void>
  /** Whether a blocking `ask` holds the reply-waiter slot. */
  readonly waiting: Effect.Effect<boolean>
  /** How many inbound asks are owed an answer; never connects (for a host's status line). */
  readonly pendingCount: Effect.Effect<number>
  /** `load_intercom({})`: makes the full tool visible; sends and checks nothing (C-TOOL-15). */
  readonly loadTool: Effect.Effect<ToolResult>
  /** Whether the full tool is visible to the model. */
  readonly toolExposed: Effect.Effect<boolean>
  /**
   * `contact_supervisor` (C-SUP): present only in a delegated child whose
   * `childBridge` is complete and carries a supervisor grant, `undefined`
   * otherwise. `need_decision` and `interview_request` wait for the
   * supervisor's reply in the reply-waiter slot `ask` uses; `progress_update`
   * only sends. Never fails: an error is a result with `isError: true`.
   */
  readonly contactSupervisor: ((params: ContactSupervisorParams) => Effect.Effect<ToolResult>) | undefined
}
