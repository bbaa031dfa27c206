/**
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

/** The broker could not be reached or started, or registration failed (C-TOOL-12): `Intercom not connected: <reason>`. */
export class IntercomNotConnected extends Data.TaggedError("IntercomNotConnected")<{
  /** Why there is no connection, e.g. `no connection within 10000 ms (last error: …)`. */
  readonly reason: string
}> {
  override get message(): string {
    return `Intercom not connected: ${this.reason}`
  }
}

/** A request was sent but the connection dropped before its answer: the outcome is unknown. */
export class ConnectionLost extends Data.TaggedError("ConnectionLost")<{
  readonly operation: string
  readonly messageId?: string
}> {
  override get message(): string {
    return this.messageId === undefined
      ? `Intercom connection lost during ${this.operation}`
      : `Intercom connection lost before the broker confirmed message ${this.messageId}; it may or may not have been delivered. Retrying with the same message id within ${REPLAY_WINDOW_MS / 60_000} minutes of the first attempt is safe: the broker answers it from its record and never delivers it twice.`
  }
}

/** The broker did not answer in time (P41: "Send timeout"; P31: "List sessions timeout"). */
export class RequestTimeout extends Data.TaggedError("RequestTimeout")<{
  readonly operation: "send" | "list" | "cancel" | "connect"
  readonly timeoutMs: number
}> {
  override get message(): string {
    switch (this.operation) {
      case "send":
        return "Send timeout"
      case "list":
        return "List sessions timeout"
      case "cancel":
        return "Cancel timeout"
      case "connect":
        return "Connection timeout"
    }
  }
}

interface DeliveryFailure {
  readonly messageId: string
  readonly code: string
  /** The broker's reason, verbatim; also the error's `message`. */
  readonly reason: string
  readonly retryable: boolean
}

type DeliveryFields = DeliveryFailure & { readonly message: string }

export class InvalidMessage extends Data.TaggedError("InvalidMessage")<DeliveryFields> {}
export class SenderNotFound extends Data.TaggedError("SenderNotFound")<DeliveryFields> {}
export class InvalidTarget extends Data.TaggedError("InvalidTarget")<DeliveryFields> {}
export class TargetNotFound extends Data.TaggedError("TargetNotFound")<DeliveryFields> {}
export class TargetRebound extends Data.TaggedError("TargetRebound")<DeliveryFields> {}
export class AmbiguousTarget extends Data.TaggedError("AmbiguousTarget")<DeliveryFields> {}
export class ReplyTargetMismatch extends Data.TaggedError("ReplyTargetMismatch")<DeliveryFields> {}
export class SupersedeTargetMismatch extends Data.TaggedError("SupersedeTargetMismatch")<DeliveryFields> {}
export class MutualAsk extends Data.TaggedError("MutualAsk")<DeliveryFields> {}
export class TargetDisconnected extends Data.TaggedError("TargetDisconnected")<DeliveryFields> {}
export class MessageIdReuse extends Data.TaggedError("MessageIdReuse")<DeliveryFields> {}
export class DeliverySuperseded extends Data.TaggedError("DeliverySuperseded")<DeliveryFields> {}
export class DeliveryCancelled extends Data.TaggedError("DeliveryCancelled")<DeliveryFields> {}
export class DeliveryExpired extends Data.TaggedError("DeliveryExpired")<DeliveryFields> {}
export class DeliveryEvicted extends Data.TaggedError("DeliveryEvicted")<DeliveryFields> {}
export class SelfTarget extends Data.TaggedError("SelfTarget")<DeliveryFields> {}
export class MessageTooLarge extends Data.TaggedError("MessageTooLarge")<DeliveryFields> {}
/** A failure with no code, or a code this client does not know (other brokers). */
export class DeliveryFailed extends Data.TaggedError("DeliveryFailed")<DeliveryFields> {}

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
  [DeliveryCode.MessageTooLarge]: MessageTooLarge
}

/** The typed error for a `delivery_failed` frame. */
export const deliveryError = (failure: DeliveryFailure): DeliveryError => {
  const make = byCode[failure.code] ?? DeliveryFailed
  return new make({ ...failure, message: failure.reason })
}
