/**
 * Every frame of the base protocol (pi-intercom v1) as Schemas.
 *
 * Numbers that a peer re-broadcasts are `Finite`: `JSON.parse("1e400")` is
 * `Infinity`, which `JSON.stringify` turns into `null` and which a strict
 * pi-intercom client rejects — one such value would disconnect every peer.
 */
import { Schema } from "effect"

// ---------------------------------------------------------------------------
// Shared shapes
// ---------------------------------------------------------------------------

export const ExtensionCapability = Schema.Struct({
  namespace: Schema.String.check(Schema.isPattern(/^[a-z0-9][a-z0-9._/-]{0,63}$/)),
  ownerEligible: Schema.Boolean
})
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
  contextWindow: Schema.optionalKey(Schema.Finite)
})
export type SessionInfo = typeof SessionInfo.Type

export const Attachment = Schema.Struct({
  type: Schema.Literals(["file", "snippet", "context"]),
  name: Schema.String,
  content: Schema.String,
  language: Schema.optionalKey(Schema.String)
})
export type Attachment = typeof Attachment.Type

/** A message as authored by a client (P40); the broker adds its timestamps. */
export const Message = Schema.Struct({
  id: Schema.String,
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
  supersedes: Schema.optionalKey(Schema.String),
  retryOf: Schema.optionalKey(Schema.String),
  replyTo: Schema.optionalKey(Schema.String),
  expectsReply: Schema.optionalKey(Schema.Boolean)
})
export type Message = typeof Message.Type

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
export type ReceiptStatus = typeof ReceiptStatus.Type

export const MessageReceipt = Schema.Struct({
  messageId: Schema.String,
  status: ReceiptStatus,
  timestamp: Schema.Finite,
  detail: Schema.optionalKey(Schema.String)
})
export type MessageReceipt = typeof MessageReceipt.Type

export const MessageControl = Schema.Struct({
  messageId: Schema.String,
  action: Schema.Literals(["cancel", "supersede"]),
  timestamp: Schema.Finite,
  supersededBy: Schema.optionalKey(Schema.String),
  detail: Schema.optionalKey(Schema.String)
})
export type MessageControl = typeof MessageControl.Type

export const DeliveryState = Schema.Literals(["socket_delivered", "queued", "failed", "unknown"])
export type DeliveryState = typeof DeliveryState.Type

/** A context-usage field in `presence`: a number sets it, `null` clears it, absent leaves it (P32). */
const ContextField = Schema.optionalKey(Schema.NullOr(Schema.Finite))

// ---------------------------------------------------------------------------
// Client → broker
// ---------------------------------------------------------------------------

export const RegisterFrame = Schema.Struct({
  type: Schema.tag("register"),
  session: SessionRegistration,
  sessionId: Schema.optionalKey(Schema.String.check(Schema.isPattern(/\S/))),
  scopeId: Schema.optionalKey(Schema.String),
  stateId: Schema.optionalKey(Schema.String),
  /** Extension: features the client asks for (see `features.ts`). Base clients omit it. */
  features: Schema.optionalKey(Schema.Array(Schema.String).check(Schema.isMaxLength(64)))
})
export type RegisterFrame = typeof RegisterFrame.Type

export const UnregisterFrame = Schema.Struct({ type: Schema.tag("unregister") })
export type UnregisterFrame = typeof UnregisterFrame.Type

export const HealthFrame = Schema.Struct({
  type: Schema.tag("health"),
  requestId: Schema.String,
  stateId: Schema.optionalKey(Schema.String)
})
export type HealthFrame = typeof HealthFrame.Type

export const ListFrame = Schema.Struct({
  type: Schema.tag("list"),
  requestId: Schema.String,
  /** Extension `list-page-v1`: where the previous page ended (its `nextCursor`). */
  cursor: Schema.optionalKey(Schema.String),
  /** Extension `list-page-v1`: at most this many sessions in the page. */
  limit: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)))
})
export type ListFrame = typeof ListFrame.Type

export const PresenceFrame = Schema.Struct({
  type: Schema.tag("presence"),
  name: Schema.optionalKey(Schema.String),
  runtimeFallbackAlias: Schema.optionalKey(Schema.Boolean),
  status: Schema.optionalKey(Schema.String),
  model: Schema.optionalKey(Schema.String),
  contextPct: ContextField,
  contextTokens: ContextField,
  contextWindow: ContextField
})
export type PresenceFrame = typeof PresenceFrame.Type

/**
 * `send` as a fully valid frame. The broker decodes sends in two steps (see
 * `decodeSend`) because an invalid send is answered, not fatal (P48).
 */
export const SendFrame = Schema.Struct({
  type: Schema.tag("send"),
  to: Schema.String,
  message: Message,
  targetId: Schema.optionalKey(Schema.String),
  targetEpoch: Schema.optionalKey(Schema.String),
  /** Extension `ask-timeout-v1`: how long the asker waits for the reply to this ask. */
  askTimeoutMs: Schema.optionalKey(Schema.Finite)
})
export type SendFrame = typeof SendFrame.Type

export const CancelAskFrame = Schema.Struct({ type: Schema.tag("cancel_ask"), messageId: Schema.String })
export type CancelAskFrame = typeof CancelAskFrame.Type

export const CancelMessageFrame = Schema.Struct({ type: Schema.tag("cancel_message"), messageId: Schema.String })
export type CancelMessageFrame = typeof CancelMessageFrame.Type

export const ReceiptFrame = Schema.Struct({ type: Schema.tag("message_receipt"), receipt: MessageReceipt })
export type ReceiptFrame = typeof ReceiptFrame.Type

export const ClientFrame = Schema.Union([
  RegisterFrame,
  UnregisterFrame,
  HealthFrame,
  ListFrame,
  PresenceFrame,
  SendFrame,
  CancelAskFrame,
  CancelMessageFrame,
  ReceiptFrame
]).pipe(Schema.toTaggedUnion("type"))
export type ClientFrame = typeof ClientFrame.Type

// ---------------------------------------------------------------------------
// Broker → client
// ---------------------------------------------------------------------------

export const RegisteredFrame = Schema.Struct({
  type: Schema.tag("registered"),
  sessionId: Schema.String,
  features: Schema.optionalKey(Schema.Array(Schema.String))
})
export type RegisteredFrame = typeof RegisteredFrame.Type

export const ErrorFrame = Schema.Struct({ type: Schema.tag("error"), error: Schema.String })
export type ErrorFrame = typeof ErrorFrame.Type

export const HealthOkFrame = Schema.Struct({
  type: Schema.tag("health_ok"),
  requestId: Schema.String,
  protocol: Schema.Literal("pi-intercom"),
  version: Schema.Literal(1)
})
export type HealthOkFrame = typeof HealthOkFrame.Type

export const SessionsFrame = Schema.Struct({
  type: Schema.tag("sessions"),
  requestId: Schema.String,
  sessions: Schema.Array(SessionInfo),
  /** Extension `list-page-v1`: live sessions of the scope in all. */
  total: Schema.optionalKey(Schema.Int),
  /** Extension `list-page-v1`: present while sessions remain; pass it back as `cursor`. */
  nextCursor: Schema.optionalKey(Schema.String)
})
export type SessionsFrame = typeof SessionsFrame.Type

export const SessionJoinedFrame = Schema.Struct({ type: Schema.tag("session_joined"), session: SessionInfo })
export type SessionJoinedFrame = typeof SessionJoinedFrame.Type

export const SessionLeftFrame = Schema.Struct({ type: Schema.tag("session_left"), sessionId: Schema.String })
export type SessionLeftFrame = typeof SessionLeftFrame.Type

export const PresenceUpdateFrame = Schema.Struct({ type: Schema.tag("presence_update"), session: SessionInfo })
export type PresenceUpdateFrame = typeof PresenceUpdateFrame.Type

export const MessageFrame = Schema.Struct({
  type: Schema.tag("message"),
  from: SessionInfo,
  message: Message,
  /** Extension `ask-timeout-v1`: for an ask, how long its asker waits, from `message.brokerReceivedAt`. */
  askTimeoutMs: Schema.optionalKey(Schema.Finite)
})
export type MessageFrame = typeof MessageFrame.Type

export const DeliveredFrame = Schema.Struct({
  type: Schema.tag("delivered"),
  messageId: Schema.String,
  delivery: Schema.optionalKey(Schema.Literals(["socket_delivered", "queued"])),
  retryable: Schema.optionalKey(Schema.Boolean),
  outcomeKnown: Schema.optionalKey(Schema.Boolean)
})
export type DeliveredFrame = typeof DeliveredFrame.Type

export const DeliveryFailedFrame = Schema.Struct({
  type: Schema.tag("delivery_failed"),
  messageId: Schema.String,
  reason: Schema.String,
  delivery: Schema.optionalKey(Schema.Literals(["failed", "unknown"])),
  code: Schema.optionalKey(Schema.String),
  retryable: Schema.optionalKey(Schema.Boolean),
  outcomeKnown: Schema.optionalKey(Schema.Boolean)
})
export type DeliveryFailedFrame = typeof DeliveryFailedFrame.Type

export const ReceiptForwardFrame = Schema.Struct({
  type: Schema.tag("message_receipt"),
  from: SessionInfo,
  receipt: MessageReceipt
})
export type ReceiptForwardFrame = typeof ReceiptForwardFrame.Type

export const MessageControlFrame = Schema.Struct({
  type: Schema.tag("message_control"),
  from: SessionInfo,
  control: MessageControl
})
export type MessageControlFrame = typeof MessageControlFrame.Type

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
  MessageControlFrame
]).pipe(Schema.toTaggedUnion("type"))
export type BrokerFrame = typeof BrokerFrame.Type
