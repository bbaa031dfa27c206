/**
 * Typed errors of the session runtime. Each `message` is the exact text a
 * tool result shows (C-TOOL, C-TGT, C-ASK, C-RPL); `intercom()` turns every
 * one of them into an error result, never a throw.
 */
import { Data } from "effect"
import { formatWait } from "./render.ts"

/** `Missing 'to' or 'message' parameter` / `Missing 'message' parameter` (C-TOOL-2). */
export class MissingParameter extends Data.TaggedError("MissingParameter")<{
  readonly required: "to and message" | "message"
}> {
  override get message(): string {
    return this.required === "message" ? "Missing 'message' parameter" : "Missing 'to' or 'message' parameter"
  }
}

/** `Unknown action: <x>` (C-TOOL-1). */
export class UnknownAction extends Data.TaggedError("UnknownAction")<{ readonly action: string }> {
  override get message(): string {
    return `Unknown action: ${this.action}`
  }
}

/** A parameter breaks C-TOOL-5 (attachments) or C-TOOL-6 (control characters); nothing was sent. */
export class InvalidInput extends Data.TaggedError("InvalidInput")<{ readonly detail: string }> {
  override get message(): string {
    return `Invalid message: ${this.detail}`
  }
}

/** The target resolves to the caller (C-TOOL-3, C-TGT-4), here or in the broker (`E_SELF_TARGET`). */
export class SelfTargetRefused extends Data.TaggedError("SelfTargetRefused")<{}> {
  override get message(): string {
    return "Cannot message the current session"
  }
}

/** Ambiguous or too-short target (C-TGT-2, C-TGT-3, C-TGT-5); `reason` is the full text. */
export class TargetUnresolved extends Data.TaggedError("TargetUnresolved")<{
  readonly target: string
  readonly reason: string
}> {
  override get message(): string {
    return this.reason
  }
}

/**
 * The broker (or the connection) did not deliver: `Message to "<to>" was not
 * delivered: <reason>` (C-TOOL-4, C-ASK-6), or `Reply to "<x>" …` for `reply`.
 */
export class NotDelivered extends Data.TaggedError("NotDelivered")<{
  readonly kind: "Message" | "Reply"
  readonly to: string
  readonly reason: string
  /** The broker's code (`E_…`) when it gave one. */
  readonly code?: string | undefined
}> {
  override get message(): string {
    return `${this.kind} to "${this.to}" was not delivered: ${this.reason}`
  }
}

/** Another blocking call holds the single reply-waiter slot (C-ASK-1). */
export class AlreadyWaiting extends Data.TaggedError("AlreadyWaiting")<{}> {
  override get message(): string {
    return "Already waiting for a reply"
  }
}

/** `No reply from "<target>" within N minutes` (C-ASK-5). */
export class ReplyTimeout extends Data.TaggedError("ReplyTimeout")<{
  readonly target: string
  readonly timeoutMs: number
}> {
  override get message(): string {
    return `No reply from "${this.target}" within ${formatWait(this.timeoutMs)}`
  }
}

/** The asked peer left the broker before answering (C-ASK-9, C-BRK-33). */
export class ReplyPeerDisconnected extends Data.TaggedError("ReplyPeerDisconnected")<{ readonly peerId: string }> {
  override get message(): string {
    return `Reply peer disconnected before answering: ${this.peerId}`
  }
}

/** The session generation closed while a call was running (C-ORD-35). */
export class SessionEnded extends Data.TaggedError("SessionEnded")<{}> {
  override get message(): string {
    return "Intercom session ended"
  }
}

/** `reply` found nothing (or too much) to answer (C-RPL-3, C-RPL-4). `text` is the full message. */
export class NoReplyContext extends Data.TaggedError("NoReplyContext")<{ readonly text: string }> {
  override get message(): string {
    return this.text
  }
}

/** The broker's list does not contain this session (C-TOOL-9). */
export class SelfNotListed extends Data.TaggedError("SelfNotListed")<{}> {
  override get message(): string {
    return "Current session is missing from intercom session list."
  }
}

/** A positive `timeoutMs` is required when one is given. */
export class InvalidTimeout extends Data.TaggedError("InvalidTimeout")<{ readonly value: number }> {
  override get message(): string {
    return `Invalid timeoutMs: ${this.value} (must be a positive number of milliseconds)`
  }
}
