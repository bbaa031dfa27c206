/**
 * What a refusal read after a loss means: the one rule the client reads a send's answer by once a connection lost
 * that send on the way, whoever reads it — the send's own retry through the rejoin grace (Resending.ts `send`) or a
 * connection that read it late, after its caller stopped waiting (ConnectionSends.ts, `ClientSinks.lateAnswer`).
 *
 * A write after a loss is answered by the broker reached next, which may not know what became of the first write (a
 * broker restarted, or a durable one killed after delivering it and before storing it). Every refusal a send can get
 * is classified here, in one table (`BY_REFUSAL`; docs/client.md, Reconnect and liveness): one that follows from the write
 * itself (malformed, a target of no valid form) was the first write's too, "not delivered", and is passed on as
 * given, as is one that the broker's record of the first write gives and that no read can have preceded (cancelled,
 * superseded); one that says only what that broker holds now may be its forgetting, and the record's eviction or
 * expiry may follow a read, so the first write's fate is unknown — retried
 * through the grace when a retry can succeed ("not found", "target disconnected", "no pending ask", …), else the
 * loss at once; if it stands, the send ends as the loss (`ConnectionLost`, outcome unknown) carrying that refusal,
 * never a "not delivered". An id reuse is read by its reason (broker/SendReplays.ts `reuseReason`, review revda): P46's own
 * text is the caller's own reuse, passed on as given, only from a connection granted `reuse-reason-v1` (any other
 * broker gives it for every mismatch: the loss, review revdh DH3); the same content, recorded for the session `to`
 * named then, is the first write's record — delivered to the session `to` resolves to now (`deliveredHere`),
 * delivered to that earlier one (`received`), or queued with no delivery confirmed (`queued`): the loss, so marked.
 * A rebound is marked `afterLoss`. What a send ends on, by that
 * class, is `endedAfterLoss`, for both of its readers. Owns no state: a constant table and plain synchronous
 * functions.
 */
import { Exit } from "effect"
import { Reason } from "../protocol/delivery.ts"
import { ASK_TIMED_OUT_UNWRITTEN, type SendError } from "./requests.ts"
import {
  ConnectionLost,
  type DeliveryError,
  type IntercomNotConnected,
  reboundAfterLoss,
  type TargetRebound
} from "./errors.ts"
import type { SendAnswer } from "./PendingSends.ts"

/**
 * What a refusal read as the answer to a write of a send after a connection lost it on the way says of the first
 * write, and so what the send ends as:
 * - `asGiven` — it follows from the write itself (the first write was refused the same way), or the broker's record
 *   of the first write gives it: true of the first write, passed on as it is;
 * - `retried` — it says what the broker reached next holds now, which a restart may have emptied and which may fill
 *   again within the rejoin grace: retried through it, and if it stands, the loss;
 * - `unknown` — it says what that broker holds now, or it is the broker's record of the first write but does not
 *   tell whether its recipient read it (an expiry, an eviction), and no retry within the grace can change it: the
 *   loss at once;
 * - `received` — it is the broker's record of the first write itself, which says that broker delivered it to the
 *   session `to` named then (another holds the name now): the loss at once, marked `firstWriteReceived` — most
 *   likely delivered, never "not delivered", and not read as the caller reusing an id;
 * - `deliveredHere` — as `received`, but the record names as its receiver the very session `to` resolves to now
 *   (P49's other holder took the mail): the loss at once, marked `firstWriteDeliveredHere` — delivered where a
 *   re-send would go (review revdh DH1);
 * - `queued` — as `received`, but the record says the first write is queued for that earlier session, its delivery
 *   not confirmed (it may have been written to a client that dropped before confirming): the loss at once, marked
 *   `firstWriteQueued`;
 * - `rebound` — the exact target re-registered: the refusal marked `afterLoss` (the caller lists and sends again).
 *
 * @category models
 * @since 0.1.0
 */
export type AfterLoss = "asGiven" | "retried" | "unknown" | "received" | "deliveredHere" | "queued" | "rebound"

/**
 * Every refusal of a send, by its class, and why (docs/client.md has the table in prose). A function reads the reason
 * where one code covers refusals of both kinds. Typed over every `DeliveryError`: a new refusal must be classified.
 */
const BY_REFUSAL: {
  readonly [Tag in DeliveryError["_tag"]]: AfterLoss | ((reason: string, reuseReasons: boolean) => AfterLoss)
} = {
  // From the write itself: its fields, its target's form. Not the answer a takeover gives a `supervisor_send` held
  // on a connection not granted `supervisor-v1` (broker/PeerReader.ts `refuseHeldSends`): that connection's grants,
  // which the first write's connection may have had — connection state, as the client's own `SupervisorUnauthorized`
  // for a missing grant is (task afterloss3).
  InvalidMessage: (reason) => reason === Reason.supervisorSendUngranted ? "unknown" : "asGiven",
  InvalidTarget: "asGiven",
  // The broker's record of the first write (P46): its sender cancelled or superseded it — no read comes before either.
  DeliveryCancelled: "asGiven",
  DeliverySuperseded: "asGiven",
  // The record's "expired" is written also of mail its recipient read, gave back unconfirmed, and left in the mailbox
  // past its retention (MailDelivery.ts `prune`), as of an ask given back whose timeout ran out (StaleAsks.ts): the
  // loss, as an eviction is (review revci CI2; task afterloss3). The client's own `ASK_TIMED_OUT_UNWRITTEN` (an ask
  // whose timeout ran out before its re-send, however its first write went) is passed on: its asker settles with the
  // broker on it, knowing the first write may have arrived (session/Ask.ts `timedOutUnwritten`).
  DeliveryExpired: (reason) => reason === ASK_TIMED_OUT_UNWRITTEN ? "asGiven" : "unknown",
  // Neither eviction tells the first write's fate: "evicted at once, so nothing was queued" is the mailbox full now,
  // and the record's "evicted the delivery" is written also of mail its recipient read, gave back unconfirmed, and
  // lost to the mailbox's bound (review revci CI2; review revce CE2 had made the record's as given).
  DeliveryEvicted: "unknown",
  // The registry, the ask edges and the staging a restart empties, refilled as sessions come back in the grace.
  TargetNotFound: "retried",
  TargetDisconnected: "retried",
  AmbiguousTarget: "retried",
  CrossGroup: "retried",
  ReplyTargetMismatch: "retried",
  TooManyAsks: "retried",
  ReplaceQueueFull: "retried",
  // `to` resolved to the sender itself now; the resolution is tiered (exact id, names, id prefixes), so a session
  // named `to`, not back yet, may have taken the first write (review revce CE1).
  SelfTarget: "retried",
  // A durable broker's failed commit (it clears once one succeeds), or another broker's code the client does not know.
  DeliveryFailed: "retried",
  // The target not live comes back in the grace; a route, or a fate already settled (by the first write itself,
  // maybe), does not.
  SupersedeTargetMismatch: (reason) => reason === Reason.supersedeDisconnected ? "retried" : "unknown",
  // By its reason (broker/SendReplays.ts `reuseReason`; review revda DA1, DA2): from a connection granted `reuse-reason-v1`,
  // P46's own text is given only for other content under the id — not this re-send's, which is the first write's
  // again: the caller reused the id, as given. Without that grant the broker (a base one, or this one before review
  // revda) gives P46's text for every mismatch, a re-send of a delivered first write too: the loss (review revdh DH3). The same content recorded for the session `to` named then (another holds the name now) is the first
  // write's record: delivered to the session `to` resolves to now (`deliveredHere`, review revdh DH1), delivered to
  // that earlier one (`received`) or queued for it, not confirmed delivered (`queued`); settled otherwise (a
  // withdrawal, a refusal) it does not say whether that session got it (`unknown`). Questions.ts's stage (a durable
  // question of this session's under the id) is the question's state now, which a retry does not end: `unknown`.
  MessageIdReuse: (reason, reuseReasons) =>
    reason === Reason.messageIdReuse
      ? reuseReasons ? "asGiven" : "unknown"
      : reason === Reason.messageIdReuseDeliveredHere
      ? "deliveredHere"
      : reason === Reason.messageIdReuseDelivered
      ? "received"
      : reason === Reason.messageIdReuseQueued
      ? "queued"
      : "unknown",
  // Broker state no retry within the grace changes: the asked session's own ask waits on this one; the forwarded frame's
  // size, which counts the sender's registered info as it is now (its status may have grown since: review revce CE4);
  // this connection's registration, its binding, the extensions this broker granted.
  MutualAsk: "unknown",
  MessageTooLarge: "unknown",
  SenderNotFound: "unknown",
  SupervisorUnauthorized: "unknown",
  SupervisorTargetMismatch: "unknown",
  DeliveryUnsupported: "unknown",
  TargetRebound: "rebound"
}

/**
 * What `error`, read as the answer to a write of a send after a connection lost it on the way, says of the first
 * write (`AfterLoss`, the table `BY_REFUSAL`). `reuseReasons`: the connection that read it was granted
 * `reuse-reason-v1` (absent: not, as from a broker that negotiated nothing). A timeout, a loss or no connection is no
 * refusal: `asGiven`.
 *
 * @category predicates
 * @since 0.1.0
 */
export const afterLossOf = (error: SendError | IntercomNotConnected, reuseReasons = false): AfterLoss => {
  const refusal = refusalOf(error)
  if (refusal === undefined) return "asGiven"
  const entry = BY_REFUSAL[refusal._tag]
  return typeof entry === "function" ? entry(refusal.reason, reuseReasons) : entry
}

/** `error` when it is the broker's (or the client's own) refusal of the write; undefined for a timeout, a loss, no connection. */
const refusalOf = (error: SendError | IntercomNotConnected): DeliveryError | undefined => {
  switch (error._tag) {
    case "RequestTimeout":
    case "ConnectionLost":
    case "IntercomNotConnected":
      return undefined
    default:
      return error
  }
}

/**
 * Whether `error`, read as the answer to a write of a send after a connection lost it on the way, ends the send as
 * the loss carrying it if it stands: it leaves the first write's fate unknown to the caller (`retried`, `unknown`),
 * or it is the broker's record of the first write, taken for a session another now replaces under its name
 * (`received`, `queued`) or delivered to the one that holds it now (`deliveredHere`: delivered, by that record; the
 * loss all the same, marked `firstWriteDeliveredHere`). `reuseReasons` as for `afterLossOf`.
 *
 * @category predicates
 * @since 0.1.0
 */
export const unknownAfterLoss = (error: SendError | IntercomNotConnected, reuseReasons = false): boolean => {
  const kind = afterLossOf(error, reuseReasons)
  return kind === "retried" || kind === "unknown" || kind === "received" || kind === "deliveredHere" ||
    kind === "queued"
}

/**
 * Whether a send refused just after a reconnect is retried through the rejoin grace (Resending.ts `send`): a "not
 * found" or a reply's "no pending ask" always (a broker restart empties its registry: the target, or the asker, may
 * not be back yet); after a loss (`afterLoss`), every refusal the table classes `retried`. Without a loss any other
 * refusal stands at once: it answers the first write. `reuseReasons` as for `afterLossOf`.
 *
 * @category predicates
 * @since 0.1.0
 */
export const retriedInGrace = (
  error: SendError | IntercomNotConnected,
  afterLoss: boolean,
  reuseReasons = false
): boolean =>
  afterLoss
    ? afterLossOf(error, reuseReasons) === "retried"
    : error._tag === "TargetNotFound" || (error._tag === "ReplyTargetMismatch" && error.reason === Reason.replyNoAsk)

/**
 * The loss `lost` as a send lost on the way ends on `error`, the refusal that stood: carrying it
 * (`ConnectionLost.refusal`, said in its message) when it leaves the first write unknown (`unknownAfterLoss`), so
 * that its reader learns what the broker answers now (the target away, say), marked `firstWriteReceived` or
 * `firstWriteDeliveredHere` or `firstWriteQueued` when that refusal is the broker's record of the first write
 * delivered to an earlier session (`received`), to the one `to` resolves to now (`deliveredHere`) or queued
 * (`queued`); `lost` itself otherwise. `reuseReasons` as for `afterLossOf`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const lostWithRefusal = (
  lost: ConnectionLost,
  error: SendError | IntercomNotConnected,
  reuseReasons = false
): ConnectionLost => {
  const refusal = refusalOf(error)
  if (refusal === undefined || !unknownAfterLoss(refusal, reuseReasons) || lost.refusal === refusal) return lost
  const kind = afterLossOf(refusal, reuseReasons)
  return new ConnectionLost({
    operation: lost.operation,
    ...(lost.messageId === undefined ? {} : { messageId: lost.messageId }),
    refusal,
    ...(kind === "received"
      ? { firstWriteReceived: true }
      : kind === "deliveredHere"
      ? { firstWriteDeliveredHere: true }
      : kind === "queued"
      ? { firstWriteQueued: true }
      : {})
  })
}

/**
 * What a send lost on the way (`lost`) ends on when `error` stands, by its class (`afterLossOf`): a rebound marked
 * `afterLoss` (review revas AS2), a refusal that leaves the first write unknown the loss carrying it
 * (`lostWithRefusal`), any other failure as it is. The one reading of both the send's own retry (Resending.ts `send`)
 * and a late answer (`answerAfterLoss`). `reuseReasons` as for `afterLossOf`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const endedAfterLoss = <E extends SendError | IntercomNotConnected>(
  lost: ConnectionLost,
  error: E,
  reuseReasons = false
): E | ConnectionLost | TargetRebound => {
  switch (afterLossOf(error, reuseReasons)) {
    case "asGiven":
      return error
    case "rebound":
      return error._tag === "TargetRebound" ? reboundAfterLoss(error) : error
    default:
      return lostWithRefusal(lost, error, reuseReasons)
  }
}

/**
 * `answer` to the send `messageId` written after a connection lost it, read after its caller stopped waiting, as the
 * send's own retry would end on it once the grace is over (`endedAfterLoss`): a refusal the table retries is the loss
 * at once here, as no retry follows. `reuseReasons` as for `afterLossOf`: the connection that read it.
 *
 * @category constructors
 * @since 0.1.0
 */
export const answerAfterLoss = (messageId: string, answer: SendAnswer, reuseReasons = false): SendAnswer =>
  Exit.isFailure(answer)
    ? Exit.mapError(
      answer,
      (error) => endedAfterLoss(new ConnectionLost({ operation: "send", messageId }), error, reuseReasons)
    )
    : answer
