/**
 * Size: about 645 lines, one concept — the wire's frame Schemas, client→broker and broker→client
 * unions keyed by `type` — kept together so each union sits beside its members.
 *
 * Every frame of the base protocol (pi-intercom v1) as Schemas.
 *
 * Numbers that a peer re-broadcasts are `Finite`: `JSON.parse("1e400")` is
 * `Infinity`, which `JSON.stringify` turns into `null` and which a strict
 * pi-intercom client rejects — one such value would disconnect every peer.
 */
import { Schema } from "effect"
import * as Limits from "./limits.ts"
import * as Observe from "./observe.ts"
import * as Results from "./results.ts"
import * as Questions from "./questions.ts"
import * as Stats from "./stats.ts"
import * as Topics from "./topics.ts"

/** A string of at most `max` UTF-16 units (limits.ts). */
const Bounded = (max: number) => Schema.String.check(Schema.isMaxLength(max))

// ---------------------------------------------------------------------------
// Shared shapes
// ---------------------------------------------------------------------------

/** One entry of `register.session.extensions` (P11): an extension-bus namespace and whether this session may own it. */
export const ExtensionCapability = Schema.Struct({
  namespace: Schema.String.check(Schema.isPattern(/^[a-z0-9][a-z0-9._/-]{0,63}$/)),
  ownerEligible: Schema.Boolean
})
/** An extension capability (P11), as decoded. */
export type ExtensionCapability = typeof ExtensionCapability.Type

/** What a client declares about itself in `register` (P11). */
export const SessionRegistration = Schema.Struct({
  cwd: Schema.String,
  model: Schema.String,
  pid: Schema.Finite,
  startedAt: Schema.Finite,
  lastActivity: Schema.Finite,
  name: Schema.optionalKey(Schema.String),
  runtimeFallbackAlias: Schema.optionalKey(Schema.Boolean),
  status: Schema.optionalKey(Schema.String),
  tmuxPane: Schema.optionalKey(Schema.String),
  extensions: Schema.optionalKey(Schema.Array(ExtensionCapability).check(Schema.isMaxLength(32)))
})
/** A session registration (P11), as decoded. */
export type SessionRegistration = typeof SessionRegistration.Type

/** What the broker says about a session (P14); built by the broker, never taken from a client. */
export const SessionInfo = Schema.Struct({
  id: Schema.String,
  cwd: Schema.String,
  model: Schema.String,
  pid: Schema.Finite,
  startedAt: Schema.Finite,
  lastActivity: Schema.Finite,
  endpointEpoch: Schema.optionalKey(Schema.String),
  name: Schema.optionalKey(Schema.String),
  status: Schema.optionalKey(Schema.String),
  tmuxPane: Schema.optionalKey(Schema.String),
  runtimeFallbackAlias: Schema.optionalKey(Schema.Boolean),
  trustedLocal: Schema.optionalKey(Schema.Boolean),
  peerUid: Schema.optionalKey(Schema.Finite),
  contextPct: Schema.optionalKey(Schema.Finite),
  contextTokens: Schema.optionalKey(Schema.Finite),
  contextWindow: Schema.optionalKey(Schema.Finite),
  /** Extension `health-v1`: when the broker last read a frame from the session (epoch ms). */
  lastSeen: Schema.optionalKey(Schema.Finite),
  /** Extension `health-v1`: its last send or receive (epoch ms; 0 means none). */
  lastIntercomActivity: Schema.optionalKey(Schema.Finite),
  /** Extension `health-v1`: whether it said it can take an ask now (absent: unknown). */
  acceptsAsks: Schema.optionalKey(Schema.Boolean),
  /** Extension `health-v1`: how many inbound asks it has not answered yet (absent: unknown). */
  pendingAsks: Schema.optionalKey(Schema.Finite)
})
/** A session as the broker describes it (P14). */
export type SessionInfo = typeof SessionInfo.Type

/** One attachment of a message's `content` (P40): a file, snippet or context, with its name and text. */
export const Attachment = Schema.Struct({
  type: Schema.Literals(["file", "snippet", "context"]),
  name: Bounded(Limits.MAX_ATTACHMENT_LABEL_LENGTH),
  content: Schema.String,
  language: Schema.optionalKey(Bounded(Limits.MAX_ATTACHMENT_LABEL_LENGTH))
})
/** A message attachment (P40), as decoded. */
export type Attachment = typeof Attachment.Type

/** A message as authored by a client (P40); the broker adds its timestamps. */
export const Message = Schema.Struct({
  id: Bounded(Limits.MAX_ID_LENGTH),
  timestamp: Schema.Finite,
  content: Schema.Struct({
    text: Schema.String,
    attachments: Schema.optionalKey(Schema.Array(Attachment))
  }),
  senderSequence: Schema.optionalKey(Schema.Finite),
  brokerReceivedAt: Schema.optionalKey(Schema.Finite),
  brokerDeliveredAt: Schema.optionalKey(Schema.Finite),
  receiverReceivedAt: Schema.optionalKey(Schema.Finite),
  injectedAt: Schema.optionalKey(Schema.Finite),
  supersedes: Schema.optionalKey(Bounded(Limits.MAX_ID_LENGTH)),
  retryOf: Schema.optionalKey(Bounded(Limits.MAX_ID_LENGTH)),
  replyTo: Schema.optionalKey(Bounded(Limits.MAX_ID_LENGTH)),
  expectsReply: Schema.optionalKey(Schema.Boolean)
})
/** A message (P40), as decoded. */
export type Message = typeof Message.Type

/** The `status` of a `message_receipt` (P70): what happened to a message at its receiver. */
export const ReceiptStatus = Schema.Literals([
  "receiver_received",
  "queued",
  "injected",
  "acknowledged",
  "expired",
  "cancelled",
  "superseded",
  "cancellation_requested"
])
/** A receipt status (P70). */
export type ReceiptStatus = typeof ReceiptStatus.Type

/** The `receipt` of a `message_receipt` frame, either way (P70). */
export const MessageReceipt = Schema.Struct({
  messageId: Bounded(Limits.MAX_ID_LENGTH),
  status: ReceiptStatus,
  timestamp: Schema.Finite,
  detail: Schema.optionalKey(Bounded(Limits.MAX_DETAIL_LENGTH))
})
/** A message receipt (P70), as decoded. */
export type MessageReceipt = typeof MessageReceipt.Type

/** The `control` of a `message_control` frame (P73): the sender cancelled or superseded a message. */
export const MessageControl = Schema.Struct({
  messageId: Bounded(Limits.MAX_ID_LENGTH),
  action: Schema.Literals(["cancel", "supersede"]),
  timestamp: Schema.Finite,
  supersededBy: Schema.optionalKey(Bounded(Limits.MAX_ID_LENGTH)),
  detail: Schema.optionalKey(Bounded(Limits.MAX_DETAIL_LENGTH))
})
/** A message control (P73), as decoded. */
export type MessageControl = typeof MessageControl.Type

/** The `delivery` values of `delivered` and `delivery_failed` (P41, P45); the broker never sends `unknown`. */
export const DeliveryState = Schema.Literals(["socket_delivered", "queued", "failed", "unknown"])
/** A delivery state (P41, P45). */
export type DeliveryState = typeof DeliveryState.Type

/** A context-usage field in `presence`: a number sets it, `null` clears it, absent leaves it (P32). */
const ContextField = Schema.optionalKey(Schema.NullOr(Schema.Finite))

/** Extension `delivery-v1`: how the message reaches a busy recipient (C-DLV-1). */
export const DeliveryModeField = Schema.Literals(["steer", "queue", "passive"])
/** Extension `delivery-v1`: with `queue`, keep every message (`stack`) or only the latest per thread (`replace`). */
export const QueueModeField = Schema.Literals(["stack", "replace"])

// ---------------------------------------------------------------------------
// Client → broker
// ---------------------------------------------------------------------------

/** `register` (P11), client → broker: the first frame of a session, with its registration and requested features. */
export const RegisterFrame = Schema.Struct({
  type: Schema.tag("register"),
  session: SessionRegistration,
  sessionId: Schema.optionalKey(Schema.String.check(Schema.isPattern(/\S/))),
  scopeId: Schema.optionalKey(Schema.String),
  stateId: Schema.optionalKey(Schema.String),
  /** Extension `groups-v1`: the session's group (blank: `default`). */
  group: Schema.optionalKey(Bounded(Limits.MAX_ID_LENGTH)),
  /** Extension: features the client asks for (see `features.ts`). Base clients omit it. */
  features: Schema.optionalKey(Schema.Array(Bounded(Limits.MAX_FEATURE_LENGTH)).check(Schema.isMaxLength(64))),
  /** Extension `supervisor-v1`, supervisor side: the private token its capabilities are signed with. */
  ownerToken: Schema.optionalKey(Bounded(Limits.MAX_ID_LENGTH)),
  /** Extension `supervisor-v1`, child side: the capability its supervisor was issued for it. */
  capability: Schema.optionalKey(Bounded(Limits.MAX_ID_LENGTH)),
  /** Extension `supervisor-v1`, child side: the id of the supervisor that issued `capability`. */
  supervisorSessionId: Schema.optionalKey(Bounded(Limits.MAX_ID_LENGTH)),
  /** Extension `observe-v1`: the connection only observes the broker; it is not a session. */
  observer: Schema.optionalKey(Schema.Boolean),
  /** Extension `ephemeral-v1`: a short-lived session, forgotten when it leaves (no mailbox after it). */
  ephemeral: Schema.optionalKey(Schema.Boolean),
  /**
   * Extension `reclaim-v1`: register only if no live connection holds `sessionId` (a client taking its
   * id back after a takeover); refused with `registration_failed` code `E_SESSION_HELD` otherwise.
   */
  ifFree: Schema.optionalKey(Schema.Boolean),
  /**
   * Extension `reclaim-released-v1`: register only if no live connection holds `sessionId` and its last
   * holder on this broker gave it up with `unregister`; refused with `registration_failed` code
   * `E_SESSION_HELD` or `E_SESSION_NOT_RELEASED` otherwise.
   */
  ifReleased: Schema.optionalKey(Schema.Boolean),
  /**
   * Extension `rejoin-v1`: the client instance's own id, the same on each of its connections; a register
   * whose id is held by a connection with the same `instanceId` is the client's own rejoin (features.ts).
   * Never empty: "" would make every client that sends it one instance.
   */
  instanceId: Schema.optionalKey(Bounded(Limits.MAX_ID_LENGTH).check(Schema.isNonEmpty()))
})
/** A `register` frame (P11), as decoded. */
export type RegisterFrame = typeof RegisterFrame.Type

/** `unregister` (P19), client → broker: leave, keeping the connection open unregistered. */
export const UnregisterFrame = Schema.Struct({ type: Schema.tag("unregister") })
/** An `unregister` frame (P19), as decoded. */
export type UnregisterFrame = typeof UnregisterFrame.Type

/** `health` (P20), client → broker: allowed before registration; answered with `health_ok`. */
export const HealthFrame = Schema.Struct({
  type: Schema.tag("health"),
  requestId: Bounded(Limits.MAX_ID_LENGTH),
  stateId: Schema.optionalKey(Bounded(Limits.MAX_ID_LENGTH))
})
/** A `health` frame (P20), as decoded. */
export type HealthFrame = typeof HealthFrame.Type

/** `list` (P31), client → broker: asks for the live sessions of the scope; answered with `sessions`. */
export const ListFrame = Schema.Struct({
  type: Schema.tag("list"),
  requestId: Bounded(Limits.MAX_ID_LENGTH),
  /** Extension `list-page-v1`: where the previous page ended (its `nextCursor`). */
  cursor: Schema.optionalKey(Bounded(Limits.MAX_ID_LENGTH)),
  /** Extension `list-page-v1`: at most this many sessions in the page. */
  limit: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))),
  /** Extension `groups-v1`: list this group of the scope instead of the own one (a read-only peek). */
  group: Schema.optionalKey(Bounded(Limits.MAX_ID_LENGTH)),
  /**
   * Extension `ask-expiry-v1`: true on the asker's settling round trip at
   * its own deadline; its answer comes after any reply to it the broker
   * accepted and still holds parked (docs/protocol.md).
   */
  settle: Schema.optionalKey(Schema.Boolean)
})
/** A `list` frame (P31), as decoded. */
export type ListFrame = typeof ListFrame.Type

/** `presence` (P32), client → broker: changes this session's name, status, model or context usage. */
export const PresenceFrame = Schema.Struct({
  type: Schema.tag("presence"),
  name: Schema.optionalKey(Schema.String),
  runtimeFallbackAlias: Schema.optionalKey(Schema.Boolean),
  status: Schema.optionalKey(Schema.String),
  model: Schema.optionalKey(Schema.String),
  contextPct: ContextField,
  contextTokens: ContextField,
  contextWindow: ContextField,
  /** Extension `health-v1`: true only while idle (no agent run, no tool executing; C-HLT-3). */
  acceptsAsks: Schema.optionalKey(Schema.Boolean),
  /** Extension `health-v1`: its unresolved inbound asks. */
  pendingAsks: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))),
  /**
   * Extension `health-v1`: its last send or receive (epoch ms; 0 or less means
   * none). Any finite number: a client's clock may read before the epoch.
   */
  lastIntercomActivity: Schema.optionalKey(Schema.Finite)
})
/** A `presence` frame (P32), as decoded. */
export type PresenceFrame = typeof PresenceFrame.Type

/**
 * `send` (P40), client → broker, as a fully valid frame. The broker decodes
 * sends in two steps (`decodeMessage`, then the fields, in broker/Send.ts)
 * because an invalid send is answered, not fatal (P48).
 */
export const SendFrame = Schema.Struct({
  type: Schema.tag("send"),
  to: Bounded(Limits.MAX_TARGET_LENGTH),
  message: Message,
  targetId: Schema.optionalKey(Bounded(Limits.MAX_ID_LENGTH)),
  targetEpoch: Schema.optionalKey(Bounded(Limits.MAX_ID_LENGTH)),
  /** Extension `ask-timeout-v1`: how long the asker waits for the reply to this ask. */
  askTimeoutMs: Schema.optionalKey(Schema.Finite),
  /** Extension `reply-error-v1`: with `message.replyTo`, the ask failed here; its asker sees this text as an error. */
  replyError: Schema.optionalKey(Bounded(Limits.MAX_REPLY_ERROR_LENGTH)),
  /** Extension `delivery-v1`: the delivery mode (default `steer`). */
  delivery: Schema.optionalKey(DeliveryModeField),
  /** Extension `delivery-v1`: the queue mode, only with `delivery: "queue"`. */
  queueMode: Schema.optionalKey(QueueModeField),
  /** Extension `delivery-v1`: the replace thread, only with `queueMode: "replace"`. */
  threadId: Schema.optionalKey(Bounded(Limits.MAX_ID_LENGTH)),
  /** Extension `trace-v1`: the sender's W3C trace context (ignored unless a valid version-00 traceparent). */
  traceparent: Schema.optionalKey(Schema.String)
})
/** A `send` frame (P40), as decoded. */
export type SendFrame = typeof SendFrame.Type

/**
 * `supervisor_send`, client → broker (extension `supervisor-v1`): a child's
 * message to the supervisor it is bound to; the same fields as `send`.
 */
export const SupervisorSendFrame = Schema.Struct({
  type: Schema.tag("supervisor_send"),
  to: Bounded(Limits.MAX_TARGET_LENGTH),
  message: Message,
  askTimeoutMs: Schema.optionalKey(Schema.Finite),
  replyError: Schema.optionalKey(Bounded(Limits.MAX_REPLY_ERROR_LENGTH))
})
/** A `supervisor_send` frame, as decoded. */
export type SupervisorSendFrame = typeof SupervisorSendFrame.Type

/**
 * `authorize_supervisor`, client → broker (extension `supervisor-v1`): a
 * supervisor asks for a capability for a child name (`*`: the first name that
 * claims it), or, with `capability`, restores one it was issued before.
 */
export const AuthorizeSupervisorFrame = Schema.Struct({
  type: Schema.tag("authorize_supervisor"),
  requestId: Bounded(Limits.MAX_ID_LENGTH),
  childName: Bounded(Limits.MAX_NAME_LENGTH),
  capability: Schema.optionalKey(Bounded(Limits.MAX_ID_LENGTH))
})
/** An `authorize_supervisor` frame, as decoded. */
export type AuthorizeSupervisorFrame = typeof AuthorizeSupervisorFrame.Type

/** `cancel_ask` (P64), client → broker: the asker drops its open ask. */
export const CancelAskFrame = Schema.Struct({ type: Schema.tag("cancel_ask"), messageId: Bounded(Limits.MAX_ID_LENGTH) })
/** A `cancel_ask` frame (P64), as decoded. */
export type CancelAskFrame = typeof CancelAskFrame.Type

/** `cancel_message` (P71), client → broker: withdraw a queued message or cancel a delivered one. */
export const CancelMessageFrame = Schema.Struct({
  type: Schema.tag("cancel_message"),
  messageId: Bounded(Limits.MAX_ID_LENGTH)
})
/** A `cancel_message` frame (P71), as decoded. */
export type CancelMessageFrame = typeof CancelMessageFrame.Type

/** `message_receipt` (P70), client → broker: a receiver's receipt for a message, forwarded to its sender. */
export const ReceiptFrame = Schema.Struct({ type: Schema.tag("message_receipt"), receipt: MessageReceipt })
/** A client's `message_receipt` frame (P70), as decoded. */
export type ReceiptFrame = typeof ReceiptFrame.Type

/**
 * `received` (extension `received-v1`), client → broker: the client has read
 * `frames` frames on this connection so far (every frame since it connected,
 * `registered` included). The broker may forget the mail those frames carried.
 */
export const ReceivedFrame = Schema.Struct({
  type: Schema.tag("received"),
  frames: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
})
/** A `received` frame (`received-v1`), as decoded. */
export type ReceivedFrame = typeof ReceivedFrame.Type

/**
 * Every client → broker frame, tagged by `type`. A plain union, without
 * `Schema.toTaggedUnion`'s helpers (`cases`, `guards`, `match`), which nothing
 * uses: they are built for every member at module load, about 6 ms of each
 * process's start for the unions here and in observe.ts (docs/performance.md,
 * "`intercom send`, fourth stop").
 */
export const ClientFrame = Schema.Union([
  RegisterFrame,
  UnregisterFrame,
  HealthFrame,
  ListFrame,
  PresenceFrame,
  SendFrame,
  CancelAskFrame,
  CancelMessageFrame,
  ReceiptFrame,
  ReceivedFrame,
  SupervisorSendFrame,
  AuthorizeSupervisorFrame,
  Topics.TopicPublishFrame,
  Topics.TopicSubscribeFrame,
  Topics.TopicUnsubscribeFrame,
  Topics.TopicQueryFrame,
  Results.ResultStoreFrame,
  Results.ResultListFrame,
  Results.ResultReadFrame,
  Questions.QuestionAskFrame,
  Questions.QuestionReceivedFrame,
  Questions.QuestionAnswerFrame,
  Questions.QuestionStopFrame,
  Questions.QuestionListFrame,
  Questions.QuestionGetFrame,
  Observe.ObserveFrame,
  Stats.StatsFrame
])
/** A client → broker frame, as decoded. */
export type ClientFrame = typeof ClientFrame.Type

// ---------------------------------------------------------------------------
// Broker → client
// ---------------------------------------------------------------------------

/** `registered` (P12), broker → client: the first frame after a successful `register`, with the granted features. */
export const RegisteredFrame = Schema.Struct({
  type: Schema.tag("registered"),
  sessionId: Schema.String,
  features: Schema.optionalKey(Schema.Array(Schema.String)),
  /** Extension `supervisor-v1`: the supervisor this child is bound to, as the broker confirmed it. */
  supervisorSessionId: Schema.optionalKey(Schema.String),
  /** Extension `state-epoch-v1`: the id of the routing state the broker holds (kept across a durable restart). */
  stateEpoch: Schema.optionalKey(Schema.String)
})
/** A `registered` frame (P12), as decoded. */
export type RegisteredFrame = typeof RegisteredFrame.Type

/** `error` (P05, P18), broker → client: a refusal before the connection closes; ours sends only P18's session cap. */
export const ErrorFrame = Schema.Struct({ type: Schema.tag("error"), error: Schema.String })
/** An `error` frame, as decoded. */
export type ErrorFrame = typeof ErrorFrame.Type

/**
 * `registration_failed`, broker → client (extension `supervisor-v1`): the
 * registration was refused (a child's capability did not check out); the
 * broker closes the connection after it. `code` `E_SESSION_HELD` (extension
 * `reclaim-v1`): a register with `ifFree` found the id held by a live
 * connection. `code` `E_SESSION_NOT_RELEASED` (extension
 * `reclaim-released-v1`): a register with `ifReleased` found the id free, but
 * not given up by its last holder on this broker.
 */
export const RegistrationFailedFrame = Schema.Struct({
  type: Schema.tag("registration_failed"),
  reason: Schema.String,
  code: Schema.optionalKey(Schema.String)
})
/** A `registration_failed` frame, as decoded. */
export type RegistrationFailedFrame = typeof RegistrationFailedFrame.Type

/**
 * `taken_over`, broker → client (extension `takeover-v1`): another connection
 * registered this session's id (P16), with `pid` in its registration; the
 * broker ends this connection right after it.
 */
export const TakenOverFrame = Schema.Struct({
  type: Schema.tag("taken_over"),
  sessionId: Schema.String,
  pid: Schema.optionalKey(Schema.Number)
})
/** A `taken_over` frame, as decoded. */
export type TakenOverFrame = typeof TakenOverFrame.Type

/**
 * `ask_expired`, broker → asker (extension `ask-expiry-v1`): the edge of the
 * ask `messageId` closed unanswered at `expiredAt` (broker clock, ms), its
 * deadline; no reply to it will be accepted. Written after every reply the
 * broker accepted for it before, so the asker that reads this has read them.
 */
export const AskExpiredFrame = Schema.Struct({
  type: Schema.tag("ask_expired"),
  messageId: Schema.String,
  expiredAt: Schema.Finite
})
/** An `ask_expired` frame, as decoded. */
export type AskExpiredFrame = typeof AskExpiredFrame.Type

/**
 * `ask_answered_elsewhere`, broker → asker (extension `reply-elsewhere-v1`):
 * the asker's ask `messageId` was answered by `replyId`, and that reply went
 * for good to another client instance of the asker's session
 * (AnsweredAsks.ts): no reply will come to this one. Written at the asker's
 * registration of the session, or behind the answer to its resend.
 */
export const AskAnsweredElsewhereFrame = Schema.Struct({
  type: Schema.tag("ask_answered_elsewhere"),
  messageId: Schema.String,
  replyId: Schema.String
})
/** An `ask_answered_elsewhere` frame, as decoded. */
export type AskAnsweredElsewhereFrame = typeof AskAnsweredElsewhereFrame.Type

/** `supervisor_authorized`, broker → supervisor (extension `supervisor-v1`): the capability for `childName`. */
export const SupervisorAuthorizedFrame = Schema.Struct({
  type: Schema.tag("supervisor_authorized"),
  requestId: Schema.String,
  childName: Schema.String,
  capability: Schema.String
})
/** A `supervisor_authorized` frame, as decoded. */
export type SupervisorAuthorizedFrame = typeof SupervisorAuthorizedFrame.Type

/** `supervisor_authorization_failed`, broker → supervisor (extension `supervisor-v1`): why no capability was issued. */
export const SupervisorAuthorizationFailedFrame = Schema.Struct({
  type: Schema.tag("supervisor_authorization_failed"),
  requestId: Schema.String,
  reason: Schema.String
})
/** A `supervisor_authorization_failed` frame, as decoded. */
export type SupervisorAuthorizationFailedFrame = typeof SupervisorAuthorizationFailedFrame.Type

/** `health_ok` (P20), broker → client: the answer to `health`, naming protocol `pi-intercom` version 1. */
export const HealthOkFrame = Schema.Struct({
  type: Schema.tag("health_ok"),
  requestId: Schema.String,
  protocol: Schema.Literal("pi-intercom"),
  version: Schema.Literal(1)
})
/** A `health_ok` frame (P20), as decoded. */
export type HealthOkFrame = typeof HealthOkFrame.Type

/** `sessions` (P31), broker → client: the answer to `list`, in registration order, the requester included. */
export const SessionsFrame = Schema.Struct({
  type: Schema.tag("sessions"),
  requestId: Schema.String,
  sessions: Schema.Array(SessionInfo),
  /** Extension `list-page-v1`: live sessions of the scope in all. */
  total: Schema.optionalKey(Schema.Int),
  /** Extension `list-page-v1`: present while sessions remain; pass it back as `cursor`. */
  nextCursor: Schema.optionalKey(Schema.String)
})
/** A `sessions` frame (P31), as decoded. */
export type SessionsFrame = typeof SessionsFrame.Type

/** `session_joined` (P30), broker → client: another session of the scope registered. */
export const SessionJoinedFrame = Schema.Struct({ type: Schema.tag("session_joined"), session: SessionInfo })
/** A `session_joined` frame (P30), as decoded. */
export type SessionJoinedFrame = typeof SessionJoinedFrame.Type

/** `session_left` (P33), broker → client: another session of the scope left. */
export const SessionLeftFrame = Schema.Struct({ type: Schema.tag("session_left"), sessionId: Schema.String })
/** A `session_left` frame (P33), as decoded. */
export type SessionLeftFrame = typeof SessionLeftFrame.Type

/** `presence_update` (P32), broker → client: another session of the scope changed its presence. */
export const PresenceUpdateFrame = Schema.Struct({ type: Schema.tag("presence_update"), session: SessionInfo })
/** A `presence_update` frame (P32), as decoded. */
export type PresenceUpdateFrame = typeof PresenceUpdateFrame.Type

/** `message` (P50), broker → receiver: a message with its sender's SessionInfo and the broker's timestamps. */
export const MessageFrame = Schema.Struct({
  type: Schema.tag("message"),
  from: SessionInfo,
  message: Message,
  /** Extension `ask-timeout-v1`: for an ask, how long its asker waits, from `message.brokerReceivedAt`. */
  askTimeoutMs: Schema.optionalKey(Schema.Finite),
  /** Extension `supervisor-v1`: set by the broker, and only by it, on a child's `supervisor_send`. */
  channel: Schema.optionalKey(Schema.Literal("supervisor")),
  /** Extension `reply-error-v1`: this reply (`message.replyTo`) says its ask failed, with this text (C-ASK-7). */
  replyError: Schema.optionalKey(Schema.String),
  /** Extension `delivery-v1`: the sender's delivery mode, when not the default `steer`. */
  delivery: Schema.optionalKey(DeliveryModeField),
  /** Extension `delivery-v1`: the sender's queue mode, with `delivery: "queue"`. */
  queueMode: Schema.optionalKey(QueueModeField),
  /** Extension `delivery-v1`: the replace thread, with `queueMode: "replace"`. */
  threadId: Schema.optionalKey(Schema.String),
  /** Extension `trace-v1`: the W3C trace context of the hop that routed it (the broker's span, or the sender's). */
  traceparent: Schema.optionalKey(Schema.String)
})
/** A `message` frame (P50), as decoded. */
export type MessageFrame = typeof MessageFrame.Type

/** `delivered` (P41), broker → sender: the broker accepted a send (written to the receiver, or queued) or a cancel (P71). */
export const DeliveredFrame = Schema.Struct({
  type: Schema.tag("delivered"),
  messageId: Schema.String,
  delivery: Schema.optionalKey(Schema.Literals(["socket_delivered", "queued"])),
  retryable: Schema.optionalKey(Schema.Boolean),
  outcomeKnown: Schema.optionalKey(Schema.Boolean)
})
/** A `delivered` frame (P41), as decoded. */
export type DeliveredFrame = typeof DeliveredFrame.Type

/** `delivery_failed` (P45), broker → sender: a send or cancel was refused, with its `E_…` code and reason. */
export const DeliveryFailedFrame = Schema.Struct({
  type: Schema.tag("delivery_failed"),
  messageId: Schema.String,
  reason: Schema.String,
  delivery: Schema.optionalKey(Schema.Literals(["failed", "unknown"])),
  code: Schema.optionalKey(Schema.String),
  retryable: Schema.optionalKey(Schema.Boolean),
  outcomeKnown: Schema.optionalKey(Schema.Boolean)
})
/** A `delivery_failed` frame (P45), as decoded. */
export type DeliveryFailedFrame = typeof DeliveryFailedFrame.Type

/**
 * `delivery_queued`, broker → sender (extension `delivery-v1`): the answer to
 * a `replace` send the broker staged for coalescing (C-DLV-6). It is
 * delivered when the window closes unless a later message of the same thread
 * replaces it first; then the sender gets a `superseded` receipt.
 */
export const DeliveryQueuedFrame = Schema.Struct({
  type: Schema.tag("delivery_queued"),
  messageId: Schema.String,
  threadId: Schema.String,
  /** The broker time (ms) at which the staged message is due to be delivered. */
  deliverAt: Schema.Finite
})
/** A `delivery_queued` frame, as decoded. */
export type DeliveryQueuedFrame = typeof DeliveryQueuedFrame.Type

/** `message_receipt` (P70), broker → sender: a receipt from the receiver of one of its messages. */
export const ReceiptForwardFrame = Schema.Struct({
  type: Schema.tag("message_receipt"),
  from: SessionInfo,
  receipt: MessageReceipt
})
/** A broker's `message_receipt` frame (P70), as decoded. */
export type ReceiptForwardFrame = typeof ReceiptForwardFrame.Type

/** `message_control` (P73), broker → receiver: the sender cancelled or superseded a message it had delivered. */
export const MessageControlFrame = Schema.Struct({
  type: Schema.tag("message_control"),
  from: SessionInfo,
  control: MessageControl
})
/** A `message_control` frame (P73), as decoded. */
export type MessageControlFrame = typeof MessageControlFrame.Type

/** Every broker → client frame, tagged by `type` (the client's decoder: `decodeBrokerFrameText`); a plain union, as `ClientFrame`. */
export const BrokerFrame = Schema.Union([
  RegisteredFrame,
  ErrorFrame,
  HealthOkFrame,
  SessionsFrame,
  SessionJoinedFrame,
  SessionLeftFrame,
  PresenceUpdateFrame,
  MessageFrame,
  DeliveredFrame,
  DeliveryFailedFrame,
  ReceiptForwardFrame,
  MessageControlFrame,
  RegistrationFailedFrame,
  TakenOverFrame,
  AskExpiredFrame,
  AskAnsweredElsewhereFrame,
  SupervisorAuthorizedFrame,
  SupervisorAuthorizationFailedFrame,
  DeliveryQueuedFrame,
  Topics.TopicPublishedFrame,
  Topics.TopicSubscribedFrame,
  Topics.TopicUnsubscribedFrame,
  Topics.TopicStateFrame,
  Topics.TopicFailedFrame,
  Topics.TopicRecordFrame,
  Results.ResultStoredFrame,
  Results.ResultListedFrame,
  Results.ResultPageFrame,
  Results.ResultFailedFrame,
  Questions.QuestionResultFrame,
  Questions.QuestionFailedFrame,
  Questions.QuestionAnsweredFrame,
  Questions.QuestionCancelledFrame,
  Stats.StatsResultFrame
])
/** A broker → client frame, as decoded. */
export type BrokerFrame = typeof BrokerFrame.Type
