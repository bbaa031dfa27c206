/**
 * Delivery failure codes and their reason strings (P45). Base-protocol reasons
 * are part of the wire contract: clients match on them, so keep them verbatim.
 */
import { SUPERVISOR_V1 } from "./features.ts"

/**
 * The `code` of a `delivery_failed` frame (P45), by name. The client turns
 * each into its own error class (`deliveryError` in `effect-intercom/client`).
 */
export const DeliveryCode = {
  InvalidMessage: "E_INVALID_MESSAGE",
  SenderNotFound: "E_SENDER_NOT_FOUND",
  InvalidTarget: "E_INVALID_TARGET",
  TargetNotFound: "E_TARGET_NOT_FOUND",
  TargetRebound: "E_TARGET_REBOUND",
  AmbiguousTarget: "E_AMBIGUOUS_TARGET",
  ReplyTarget: "E_REPLY_TARGET",
  SupersedeTarget: "E_SUPERSEDE_TARGET",
  MutualAsk: "E_MUTUAL_ASK",
  TargetDisconnected: "E_TARGET_DISCONNECTED",
  MessageIdReuse: "E_MESSAGE_ID_REUSE",
  DeliverySuperseded: "E_DELIVERY_SUPERSEDED",
  DeliveryCancelled: "E_DELIVERY_CANCELLED",
  DeliveryExpired: "E_DELIVERY_EXPIRED",
  DeliveryEvicted: "E_DELIVERY_EVICTED",
  DeliveryFailed: "E_DELIVERY_FAILED",
  /** Our deviation: the broker refuses a send that resolves to the sender itself. */
  SelfTarget: "E_SELF_TARGET",
  /** Our addition: the forwarded `message` frame would exceed the 1 MiB frame limit. */
  MessageTooLarge: "E_MESSAGE_TOO_LARGE",
  /** Our addition: the asker, or the broker as a whole, has as many open asks as it may. */
  TooManyAsks: "E_TOO_MANY_ASKS",
  /** Extension `groups-v1`: the target is live, but in another group of the scope (C-GRP-3). */
  CrossGroup: "E_CROSS_GROUP",
  /** Extension `supervisor-v1`: a `supervisor_send` from a session that is not bound to a supervisor (C-SUP-12). */
  SupervisorUnauthorized: "E_SUPERVISOR_UNAUTHORIZED",
  /** Extension `supervisor-v1`: a `supervisor_send` to someone other than the bound supervisor (C-SUP-12). */
  SupervisorTarget: "E_SUPERVISOR_TARGET",
  /** Extension `delivery-v1`: replace staging is at its cap, per sender or overall (C-DLV-8). */
  ReplaceQueueFull: "E_REPLACE_QUEUE_FULL",
  /** Client-side (`delivery-v1`): a delivery mode was asked of a broker that did not grant the extension. */
  DeliveryUnsupported: "E_DELIVERY_UNSUPPORTED"
} as const
/** One of the `E_…` delivery codes. */
export type DeliveryCode = (typeof DeliveryCode)[keyof typeof DeliveryCode]

/** The mailbox bound a message met (the broker's `MailboxBound`): messages overall, bytes overall, bytes per recipient. */
export type MailboxBoundName = "capacity" | "bytes" | "bytesPerTarget"

/**
 * `names` as prose: `a`, `a and b`, `a, b and c`.
 *
 * @category encoding
 * @since 0.1.0
 */
export const namesOf = (names: ReadonlyArray<string>): string =>
  names.length <= 1 ? names.join("") : `${names.slice(0, -1).join(", ")} and ${names[names.length - 1]}`

/**
 * The broker's `reason` text for each refusal (P45), verbatim: clients match
 * on the base-protocol ones, so they must not change.
 */
export const Reason = {
  invalidMessage: "Invalid message format",
  senderNotFound: "Sender session not found",
  invalidTarget: "Exact target requires an id and endpoint epoch",
  targetNotFound: "Session not found",
  targetRebound: "Target endpoint changed before delivery",
  ambiguousLive: (to: string) => `Multiple sessions named "${to}" are connected. Use the session ID instead.`,
  ambiguousDisconnected: (to: string) =>
    `Multiple disconnected sessions named "${to}" can receive queued mail. Use the session ID instead.`,
  replyNoAsk: "Reply target does not match a pending ask",
  replyWrongAsk: "Reply target does not match the pending ask",
  /**
   * Ours: a reply from the asked session, addressed to a live session that is
   * not the asker, while the asker has left — typically addressed by name,
   * which a new session with that name now holds. Starts as `replyWrongAsk` does.
   */
  replyAskerLeft:
    "Reply target does not match the pending ask: the session that asked it has left, and another session now answers to that name. Reply to the asker's session id instead: the answer waits for it in the mailbox",
  supersedeNoRoute: "Supersede target does not match a previous message from this sender to this receiver",
  supersedeDisconnected: "Supersede target is not connected",
  /**
   * Ours: a `supersedes` naming a message its sender cancelled already.
   * Starts as `supersedeNoRoute` does. It does not say the receiver was told:
   * a message cancelled in the mailbox, or given to an instance a takeover
   * replaced, was cancelled with no control.
   */
  supersedeCancelled:
    "Supersede target does not match a previous message from this sender to this receiver: that message was cancelled already. Send the new message without supersedes",
  /**
   * Ours (`questions-v1`): a `supersedes` naming a supervisor's reply that a
   * durable question saved as its answer (SupersedeStage.ts). Starts as
   * `supersedeNoRoute` does.
   */
  supersedeAnswer: (questionId: string) =>
    `Supersede target does not match a previous message from this sender to this receiver: that message already answered durable question ${questionId}, whose answer is saved. Send the new message without supersedes`,
  /**
   * Ours: a `supersedes` naming a message its sender superseded already by
   * another (`superseded`, the old message's record reason, names it). Starts
   * as `supersedeNoRoute` does. It does not say the receiver was told: a
   * supersede of a message given to an instance a takeover replaced writes
   * no control.
   */
  supersedeSuperseded: (superseded: string) =>
    `Supersede target does not match a previous message from this sender to this receiver: that message was superseded already (${superseded}). Supersede the message that replaced it instead`,
  mutualAsk: "Mutual ask refused: target session is already waiting for a reply from this session.",
  targetDisconnected: "Target session is not currently connected; blocking asks are not queued",
  /**
   * P46's text. To a connection granted `reuse-reason-v1` this broker gives it only where it is true: a send under
   * a kept id whose authored content differs from the record's — another message under the id, the caller's error
   * (broker/SendReplays.ts `replayed`, `recordedAnswer`); the same content to another target gets one of the four below
   * (review revda DA1). Every other connection gets it for every mismatch, as P45 fixes it (review revdh DH2).
   */
  messageIdReuse: "Message id was reused with different authored content",
  /**
   * Ours (`reuse-reason-v1`): a send under a kept id whose content is the record's but whose `to` resolves now to
   * another session than the record names — a re-send after the name came to mean another session, or the caller sending the same
   * message to another target under its id — and the record says the message was delivered. Starts "Message id
   * was reused", as P46's text does; the code stays `E_MESSAGE_ID_REUSE` (review revda DA1).
   */
  messageIdReuseDelivered:
    "Message id was reused for another target: this message, with this content and id, was delivered to another session than the one the target resolves to now (the one it resolved to when first sent, if the target is unchanged). It is not delivered again",
  /**
   * Ours (`reuse-reason-v1`): as `messageIdReuseDelivered`, but the record names as the session that got the message
   * the very session the target resolves to now (P49's other holder took the mail queued for the session named
   * then): it was delivered there, where this re-send would go (review revdh DH1).
   */
  messageIdReuseDeliveredHere:
    "Message id was reused for another target: this message, with this content and id, was delivered to the session the target resolves to now (the mail queued for the session it named when first sent went to this one). It is not delivered again",
  /**
   * Ours (`reuse-reason-v1`): as `messageIdReuseDelivered`, but the record says the message is queued (in the
   * mailbox, or staged) for that other session, with no delivery confirmed: it may never have been written, or it
   * was written to a client of that session that dropped before confirming it and was given back (MailReturns.ts
   * rewrites the record to queued; review revda DA2, revdh DH4).
   */
  messageIdReuseQueued:
    "Message id was reused for another target: this message, with this content and id, is queued for another session than the one the target resolves to now (the one it resolved to when first sent, if the target is unchanged): not confirmed delivered — it may have been written to a client of that session that dropped before confirming. It is not queued again",
  /**
   * Ours (`reuse-reason-v1`): as `messageIdReuseDelivered`, but the record is a refusal or a withdrawal (`recorded`, its reason), which
   * does not say whether that other session got the message.
   */
  messageIdReuseSettled: (recorded: string) =>
    `Message id was reused for another target: this message, with this content and id, was addressed to another session than the one the target resolves to now (the one it resolved to when first sent, if the target is unchanged), and the broker's record of it reads «${recorded}». It is not sent again`,
  /**
   * Ours (`reuse-reason-v1`): a send under an id its sender reused, refused because the broker could not keep
   * telling that id's messages apart after it — eight withdrawals noted under the id within a day, 4,096 other ids
   * its sender reused within a day (a bound per sender), or the id's earlier withdrawal no longer noted (broker/ReusedIdWithdrawals.ts
   * `refusesReuse`). Nothing of the send was delivered. Starts as `messageIdReuse` does; a base connection gets
   * `messageIdReusedPastBound`.
   */
  messageIdReusedPastNotes:
    "Message id was reused: the broker keeps no more withdrawals under this id, or no more of this sender's reused ids, to tell a message sent under it now from the earlier ones. It is not sent. Send the message with a new id",
  /**
   * What a base connection (no `reuse-reason-v1`) gets for the refusal `messageIdReusedPastNotes` explains: the same
   * code, a text that says only what is true of any such send. P46's `messageIdReuse` claims different authored
   * content than a kept record's, and such a send was compared with none: it was refused for the bound (task byid
   * item 4). Starts as P46's does.
   */
  messageIdReusedPastBound:
    "Message id was reused past the broker's bound on reused message ids: it is not sent. Send the message with a new id",
  /**
   * Ours (`questions-v1`): a send (an ask, a plain message or a reply) whose
   * id is the id of a durable question its sender asked and still waits on
   * (its `question_ask` queued or saved): the question's notification is a
   * message from the child under that id — its supervisor's client drops a
   * second one as one it has had (P50) — and an ask would keep its edge
   * under the question's key. Starts as `messageIdReuse` does.
   */
  messageIdOfQuestion: (messageId: string) =>
    `Message id was reused: "${messageId}" is the id of a durable question this session asked and still waits on; message ids (a question's too) must be unique per sender. Send the message with a new id`,
  superseded: (newId: string) => `Superseded by ${newId}`,
  cancelled: "Sender cancelled the delivery",
  cancelledQueued: "Sender cancelled the queued delivery",
  expired: "Mailbox delivery expired",
  evicted: "Mailbox capacity evicted the delivery",
  /**
   * Ours: the `expired` receipt of an ask that went back to the mailbox (its
   * recipient's connection closed before it confirmed reading it) and whose
   * ask timed out before the recipient came back: it is not asked any more.
   * Starts as `expired` does.
   */
  askExpired:
    "Mailbox delivery expired: the recipient's connection closed before it read this question, and the ask timed out before the recipient came back, so it was withdrawn unanswered. Ask again if you still need the answer",
  /**
   * Ours: the `expired` receipt of mail the mailbox evicted — which bound,
   * its value, the message's size, and what to do. Starts as `evicted` does.
   */
  evictedBy: (bound: MailboxBoundName, limit: number, bytes: number) =>
    `Mailbox capacity evicted the delivery: ${
      bound === "capacity"
        ? `the mailbox holds at most ${limit} messages, and its sender had the most queued`
        : bytes > limit
        ? `the message alone is bigger than the mailbox holds ${bound === "bytes" ? "overall" : "for one recipient"} (about ${limit} bytes)`
        : bound === "bytes"
        ? `the mailbox holds about ${limit} bytes of mail, and its sender's queued mail was the largest`
        : `the mailbox holds about ${limit} bytes of mail for one recipient, and this was the recipient's oldest`
    } (this message: about ${bytes} bytes). Send it again once the recipient is back, or send less to absent sessions.`,
  /** Ours: a send to an absent session that the mailbox could not take (`E_DELIVERY_EVICTED`); nothing was queued. */
  notQueued: (bound: MailboxBoundName, limit: number, bytes: number) =>
    `Mailbox capacity evicted the delivery at once, so nothing was queued: ${
      bound === "capacity"
        ? `the mailbox is full (${limit} messages), and its sender has the most queued, which go first`
        : bytes > limit
        ? `this message takes about ${bytes} bytes, more than the mailbox holds ${
          bound === "bytes" ? "overall" : "for one recipient"
        } (about ${limit} bytes)`
        : `the mailbox is full (about ${limit} bytes), and this message (about ${bytes} bytes) would make its sender's queued mail the largest, which goes first`
    }. Send it once the recipient is back, or send less.`,
  /**
   * Ours (`ephemeral-v1`): the `expired` receipt of mail that was on its way
   * to a short-lived session (a CLI one-shot command) when it ended by
   * `unregister` without reading it — who it was, and what to do. Starts as
   * `expired` does; the replay record keeps `expired` itself.
   */
  endedUnread: (recipient: string) =>
    `Mailbox delivery expired at once: the recipient ${recipient} was a one-shot session that ended without reading this message, so nothing can deliver it now. Send it to a live session instead`,
  previousFailed: "Previous delivery failed",
  cannotCancel: "Message cannot be cancelled by this session",
  /**
   * Ours (`questions-v1`): a cancel of a supervisor's reply that a durable question saved as its answer — queued for
   * the absent child (the reply stays queued, task fixq2) or delivered to it (no control is sent, task fixq3).
   */
  cannotCancelAnswer: (questionId: string) =>
    `Message cannot be cancelled by this session: it already answered durable question ${questionId}, whose answer is saved; send a new message to correct it`,
  selfTarget: "Cannot message the current session",
  tooManyAsks: (max: number) =>
    `Too many open asks from this session (${max}); wait for answers, or cancel asks you no longer need`,
  tooManyAsksOverall: "The broker holds as many open asks as it can; try again when some are answered",
  crossGroup: "Target session is in a different intercom group",
  /**
   * Ours: the answer (`E_INVALID_MESSAGE`) to an extension's send frame from
   * a connection not granted the extension, where the broker answers it
   * rather than closing the connection (a `supervisor_send` held behind
   * parked output when its session is taken over, PeerReader.ts) — which
   * extension to ask for, and where.
   */
  withoutExtension: (frameType: string, extension: string, purpose: string) =>
    `"${frameType}" frame without the ${extension} extension: register with "${extension}" in features ${purpose}`,
  /**
   * Ours: `withoutExtension` of a `supervisor_send` held at a takeover on a
   * connection not granted `supervisor-v1` (PeerReader.ts
   * `refuseHeldSends`): the connection's grants, not the frame's fields — a
   * client reading it after a loss classes it so (client/afterLoss.ts).
   */
  supervisorSendUngranted:
    `"supervisor_send" frame without the ${SUPERVISOR_V1} extension: register with "${SUPERVISOR_V1}" in features to send to a supervisor`,
  invalidChannel: "Invalid channel",
  /**
   * Ours (C-TOOL-6): a send whose `message.content.text` holds a control
   * character other than TAB, LF and CR. Starts as `invalidMessage` does, as
   * the client's own refusal before sending does.
   */
  textControl: (code: string, position: number) =>
    `Invalid message format: message.content.text contains the control character ${code} at position ${position}; only TAB, LF and CR are allowed in a message text. Nothing was sent: remove it (or describe it in words) and send again`,
  /**
   * Ours (C-TOOL-6): a send whose attachment holds a control character its
   * field may not hold (`attachmentControlOf`): none in a `name` or
   * `language`, none but TAB, LF and CR in a `content`.
   */
  attachmentControl: (field: string, code: string, position: number) =>
    `Invalid message format: ${field} contains the control character ${code} at position ${position}; an attachment's name and language may hold no control character, its content only TAB, LF and CR. Nothing was sent: remove it and send again`,
  supervisorUnauthorized: "Supervisor channel is not authorized",
  supervisorTarget: "Supervisor target does not match the authorized relationship",
  supervisorAway: "Supervisor session is not currently connected; try again when it is back",
  targetTooLong: (max: number) => `Target is longer than ${max} characters; address a session by its id or name`,
  invalidAskTimeout: (maxMs: number) =>
    `Invalid askTimeoutMs: it must be a whole number of milliseconds from 1 to ${maxMs}`,
  replyErrorWithoutReplyTo:
    "Invalid replyError: it is only allowed on a reply (message.replyTo set to the ask it answers); send the text as a plain message instead",
  invalidReplyError: (max: number) =>
    `Invalid replyError: it must be a non-empty string of at most ${max} characters`,
  replaceQueueFull: "Replace-mode delivery queue is full; retry after pending updates are delivered.",
  /**
   * Ours (C-DLV-8 keeps its own text for the per-sender and overall caps): a
   * recipient already has `max` replace messages staged for it, typically
   * because it does not read, so this one was refused without costing other
   * recipients their share of the overall cap.
   */
  replaceQueueFullFor: (recipient: string, max: number) =>
    `Replace-mode delivery queue for ${recipient} is full: ${max} replace messages already wait for it (it may not be reading its messages); nothing was staged. Retry after pending updates to it are delivered, or use fewer threads for it`,
  /**
   * Ours: the overall cap is nearly reached, and a recipient already holds
   * `held` places, no fewer than those still free, so this one was refused to
   * keep the rest for other recipients (a few recipients that do not read
   * cannot take the whole room together).
   */
  replaceQueueShareFull: (recipient: string, held: number) =>
    `Replace-mode delivery queue for ${recipient} is at its share: ${held} replace messages already wait for it (it may not be reading its messages), and the places left are kept for other recipients; nothing was staged. Retry after pending updates to it are delivered, or use fewer threads for it`,
  replaced: (newId: string, threadId: string) =>
    `Replaced by ${newId} on thread "${threadId}" before delivery; only the latest staged message is delivered`,
  stagedRecipientLeft: "Recipient left before the staged replace message was delivered; it was dropped",
  /** Our addition (C-DLV-9): what the asker of a dropped staged ask is told, when it is back. */
  stagedAskerLeft:
    "Your connection to the broker closed while this ask waited in its replace window; it was dropped before delivery and will get no reply. Ask again",
  /**
   * `bytes`: the forwarded frame's size for a recipient written every field the message carries; `fieldBytes` of
   * them are those fields (`fields`, by name), which a recipient granted their extensions gets after the message.
   */
  tooLarge: (bytes: number, limit: number, fieldBytes = 0, fields: ReadonlyArray<string> = []) =>
    `Message is too large to deliver: the forwarded frame would be ${bytes} bytes${
      fieldBytes === 0 ? "" : ` (${fieldBytes} of them for the ${namesOf(fields)} field${fields.length === 1 ? "" : "s"} a recipient may be given with it)`
    }, over the ${limit}-byte frame limit. Send a smaller message or attach less content.`,
  /** Our addition: a durable broker that cannot save (disk full, I/O error) refuses sends rather than acknowledge them. */
  storeFailed: (detail: string) =>
    `The broker cannot save messages right now (${detail}); nothing was sent. Retry once the disk has room or the database is repaired (docs/store.md)`,
} as const

/** Error-frame texts (P05, P18) and the broker's own refusal texts. */
export const ErrorText = {
  tooManySessions: "Too many registered intercom sessions",
  invalidSupervisorAuthorization: "Invalid supervisor authorization"
} as const

/**
 * Codes whose retry with the same message id may succeed (P45: a rebound
 * target; ours: a store that could not save, replace staging that was full
 * and too many open asks — neither recorded, so a retry once pending updates
 * went, or asks were answered, is judged afresh).
 */
export const isRetryable = (code: DeliveryCode): boolean =>
  code === DeliveryCode.TargetRebound || code === DeliveryCode.DeliveryFailed ||
  code === DeliveryCode.ReplaceQueueFull || code === DeliveryCode.TooManyAsks
