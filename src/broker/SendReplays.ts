/**
 * The replay check (P46): a send under a message id its sender used
 * before, while the broker keeps that send's record (DeliveryRecords.ts),
 * gets the recorded answer again — `replayed` — rather than being delivered
 * twice; other content, or the same content to another target, under a
 * kept id is refused `E_MESSAGE_ID_REUSE`, its reason by `reuseReason`
 * (`reuse-reason-v1`). Also the two forms of it off the plain path: a
 * target this broker does not know now (`replayedUnresolved`, a durable
 * broker restarted from its store) and a send held behind parked output
 * whose session was taken over (`recordedAnswer`).
 *
 * Its own module because it is one rule — what a kept record answers —
 * read from three places (the pipeline before and after resolving, and a
 * takeover); the pipeline (Send.ts) only decides when it runs. Plain
 * synchronous code on the per-frame path: one record lookup per send; when
 * no record answers (none kept, or a retryable failure's), the reused-id
 * notes' bounds are asked too (`reuseRefused`: three comparisons unless a
 * bound was reached, then a map look-up or two).
 */
import { DeliveryCode, isRetryable, Reason } from "../protocol/delivery.ts"
import { REPLY_ELSEWHERE_V1, REUSE_REASON_V1 } from "../protocol/features.ts"
import { decodeMessage, isFrameDecodeError } from "../protocol/decode.ts"
import type { Message } from "../protocol/frames.ts"
import type { OutFrame } from "../protocol/framing.ts"
import type { AnsweredAsks } from "./AnsweredAsks.ts"
import { type DeliveryRecord, type Fingerprint, recordKeyOf, sameContent, sameFingerprint } from "./DeliveryRecords.ts"
import * as Encode from "./encode.ts"
import { OutboundRecord } from "./OutboundRecord.ts"
import type { Peer } from "./Peer.ts"
import { replyErrorOf } from "./ReplyErrors.ts"
import type { RouteOutcome } from "./RouteCounts.ts"
import type { RouterContext } from "./RouterContext.ts"
import type { SendAnswers } from "./SendAnswers.ts"

/** What a kept record answers a send under its id with (P46). */
export class SendReplays {
  private readonly ctx: RouterContext
  private readonly answers: SendAnswers
  /** Which reply answered each recent ask (`reply-elsewhere-v1`): read only when an ask is replayed. */
  private readonly answered: AnsweredAsks | undefined

  /** @param answers how a replayed send is answered (SendAnswers.ts). */
  constructor(ctx: RouterContext, answers: SendAnswers, answered: AnsweredAsks | undefined) {
    this.ctx = ctx
    this.answers = answers
    this.answered = answered
  }

  /**
   * P46: answers a retried send from its record: `replayed`, or the refusal
   * of a reused id; undefined when it must be delivered (again). `targetKey`:
   * the session `to` resolves to now — the record's message's, since the
   * record answers only a retry to its own target id — carried by an answer
   * held for a commit, so a failed commit pairs the retry with that session's
   * row under the id, as it does the send's first answer (review rvbf).
   */
  replayed(peer: Peer, fingerprint: OutboundRecord, now: number, to: unknown, targetKey: string | undefined): RouteOutcome | undefined {
    const messageId = fingerprint.id
    const record = this.ctx.records.get(fingerprint.senderKey, messageId, now)
    if (record === undefined) {
      // A send under an id at a bound of the reused ids' withdrawal notes is refused rather than drop a note
      // (DeliveryRecords.reuseRefused; reviews revmodel probes 1, 2, 4). Three comparisons while none is reached.
      return this.ctx.records.reuseRefused(fingerprint.senderKey, messageId, now, fingerprint) ? this.pastNotes(peer, messageId, to) : undefined
    }
    if (!sameFingerprint(record, fingerprint)) {
      return this.answers.fail(peer, messageId, { code: DeliveryCode.MessageIdReuse, reason: reuseReason(record, fingerprint, peer.features.has(REUSE_REASON_V1)) }, to)
    }
    if (!record.outcome.ok && record.outcome.retryable) {
      // Sent again after a retryable failure (P47): judged by the notes' bounds as a send with no record is, since
      // an earlier message's route under the id may make it a reuse (review revnotes8 D2, D3).
      return this.ctx.records.reuseRefused(fingerprint.senderKey, messageId, now, fingerprint) ? this.pastNotes(peer, messageId, to) : undefined
    }
    const notice = record.expectsReply === true && record.outcome.ok ? this.answeredElsewhere(peer, fingerprint) : undefined
    this.answers.answer(peer, messageId, record.outcome, notice, targetKey)
    return "replayed"
  }

  /**
   * Refuses `messageId` `E_MESSAGE_ID_REUSE` at a bound of the reused ids' withdrawal notes (`replayed`), with
   * `reuse-reason-v1`'s text where granted, else a base text that claims nothing about the content: P46's
   * "different authored content" was false for an unchanged resend (task byid item 4). Out of `replayed`, which
   * runs for every send.
   */
  private pastNotes(peer: Peer, messageId: string, to: unknown): RouteOutcome {
    const reason = peer.features.has(REUSE_REASON_V1) ? Reason.messageIdReusedPastNotes : Reason.messageIdReusedPastBound
    return this.answers.fail(peer, messageId, { code: DeliveryCode.MessageIdReuse, reason }, to)
  }

  /**
   * A replayed ask whose reply went for good to another client instance of
   * the session (AnsweredAsks.ts): a resending connection granted
   * `reply-elsewhere-v1` is told so (`ask_answered_elsewhere`, this notice),
   * right behind the answer to its send — also when a durable broker holds
   * that answer for a commit (review revp P2) — rather than wait for a
   * reply that cannot come. Undefined when it is not told.
   */
  private answeredElsewhere(peer: Peer, ask: OutboundRecord): string | undefined {
    if (this.answered === undefined || !peer.features.has(REPLY_ELSEWHERE_V1)) return undefined
    const reply = this.answered.handedElsewhere(recordKeyOf(ask.senderKey, ask.id), peer)
    return reply === undefined ? undefined : Encode.askAnsweredElsewhereFrame(ask.id, reply.id)
  }

  /**
   * P46 for a send whose target does not resolve: a retry of a recorded
   * send, its answer lost, whose target this broker does not know now — a
   * durable broker restarted from its store knows no session until it
   * registers again. Its record answers it as `replayed` would when the
   * message matches it against the record's own target (as
   * `recordedAnswer` does): `to` cannot be compared, since nothing names
   * the record's target now, so the id and the content decide (P46's key
   * is the sender and the id). Undefined — the send is judged afresh, and
   * refused — when no record is kept, the content differs, or the record's
   * outcome is retryable. Only on the refused path: a plain send pays
   * nothing for it.
   */
  replayedUnresolved(
    peer: Peer,
    senderKey: string,
    message: Message,
    replyError: string | undefined,
    now: number
  ): RouteOutcome | undefined {
    const record = this.ctx.records.get(senderKey, message.id, now)
    if (record === undefined) return undefined
    if (!record.outcome.ok && record.outcome.retryable) return undefined
    if (!sameFingerprint(record, OutboundRecord.of(senderKey, record.targetId, message, replyError))) return undefined
    this.answers.answer(peer, message.id, record.outcome)
    return "replayed"
  }

  /**
   * P46 for a `send` held behind parked output and never handled, whose
   * connection's session `senderKey` was taken over
   * (PeerReader.refuseHeldSends): the answer its replay record gives, as
   * `replayed` gives it to a retry — the recorded outcome, or
   * `E_MESSAGE_ID_REUSE` for another message under a kept id. Undefined
   * when no record answers it (none, or a retryable failure): the send was
   * not handled. The session is gone, so `to` is not resolved again: the
   * fingerprint is compared with the record's own target. Written as
   * forced output by the caller, so not held for a commit.
   */
  recordedAnswer(peer: Peer, senderKey: string, frame: { readonly [key: string]: unknown }): OutFrame | undefined {
    const message = decodeMessage(frame.message)
    if (isFrameDecodeError(message)) return undefined
    const record = this.ctx.records.get(senderKey, message.id, this.ctx.now())
    if (record === undefined) return undefined
    const replyError = frame.replyError === undefined ? undefined : replyErrorOf(frame, peer)
    if (!sameFingerprint(record, OutboundRecord.of(senderKey, record.targetId, message, replyError))) {
      return Encode.deliveryFailedFrame(message.id, DeliveryCode.MessageIdReuse, Reason.messageIdReuse, isRetryable(DeliveryCode.MessageIdReuse))
    }
    const outcome = record.outcome
    if (!outcome.ok) {
      return outcome.retryable ? undefined : Encode.deliveryFailedFrame(message.id, outcome.code, outcome.reason, outcome.retryable)
    }
    const staged = outcome.staged
    if (staged !== undefined) return Encode.deliveryQueuedFrame(message.id, staged.threadId, staged.deliverAt)
    return Encode.deliveredFrameParts(message.id, outcome.delivery)
  }
}

/**
 * Why a send under a kept id whose fingerprint is not `record`'s is refused (`E_MESSAGE_ID_REUSE` whatever the
 * reason, as P46 says). To a connection not granted `reuse-reason-v1` (`granted` false): P46's text, as P45 fixes it
 * (review revdh DH2). To one granted it: other content under the id is the sender's own reuse (`Reason.messageIdReuse`);
 * the same content to another target is that message sent again after `to` came to name another session, and the
 * reason says what the record says became of it — delivered to the session `to` resolves to now (P49's other
 * holder took it: `receiverId`, review revdh DH1), delivered to another, queued and not confirmed delivered, or
 * settled otherwise — since a client that lost the first write's answer cannot tell these apart from the code
 * (afterLoss.ts; review revda DA1, DA2).
 */
const reuseReason = (record: DeliveryRecord, sent: Fingerprint, granted: boolean): string => {
  if (!granted || !sameContent(record, sent)) return Reason.messageIdReuse
  const outcome = record.outcome
  if (!outcome.ok) return Reason.messageIdReuseSettled(outcome.reason)
  if (outcome.delivery !== "socket_delivered") return Reason.messageIdReuseQueued
  return outcome.receiverId === sent.targetId ? Reason.messageIdReuseDeliveredHere : Reason.messageIdReuseDelivered
}
