/**
 * How a send is answered (P45): a refusal at once (`delivery_failed`, the
 * live view told), a staged send's `delivery_queued` at once, and an
 * accepted send's `delivered` at once or, in durable mode, held for the
 * commit of what it acknowledges (StoreJournal.holdAck; held until read is
 * ReadAcks.ts, asked for by the pipeline itself). A notice that belongs
 * right behind an answer (`ask_answered_elsewhere`) goes wherever the
 * answer waits.
 *
 * Its own module because every way a send ends — the pipeline (Send.ts),
 * the replay check (SendReplays.ts) — answers through these, so there is
 * one place that decides where an answer waits. Plain synchronous code on
 * the per-frame path; it keeps no state.
 */
import { DeliveryCode, isRetryable, Reason } from "../protocol/delivery.ts"
import type { Message } from "../protocol/frames.ts"
import { textControlOf } from "../protocol/limits.ts"
import type { Outcome } from "./DeliveryRecords.ts"
import * as Encode from "./encode.ts"
import type { Peer } from "./Peer.ts"
import type { RouterContext } from "./RouterContext.ts"
import type { Refusal } from "./SendStage.ts"
import type { Traffic } from "./Traffic.ts"

/** The answers to sends: written to the sender's outbox, or held by the journal. */
export class SendAnswers {
  private readonly ctx: RouterContext
  private readonly traffic: Traffic

  /** @param traffic the live view (`observe-v1`), told of every refusal. */
  constructor(ctx: RouterContext, traffic: Traffic) {
    this.ctx = ctx
    this.traffic = traffic
  }

  /**
   * Answers `peer`'s send `messageId` with `outcome`; returns it. A
   * `notice` goes right behind the answer, wherever the answer waits (a
   * held acknowledgement carries it: StoreJournal.holdAck). `targetKey`: the
   * session the send's mail is for, when known — a held acknowledgement
   * carries it, so a failed commit refuses the send by that session's row.
   */
  answer(peer: Peer, messageId: string, outcome: Outcome, notice?: string, targetKey?: string): Outcome {
    const output = this.ctx.output
    if (!outcome.ok) {
      output.enqueue(peer, Encode.deliveryFailedFrame(messageId, outcome.code, outcome.reason, outcome.retryable))
      if (notice !== undefined) output.enqueue(peer, notice)
      return outcome
    }
    const journal = this.ctx.journal
    const staged = outcome.staged
    if (staged !== undefined) {
      // A staged send's answer (the first, or a retry's): as the pipeline writes it, not held for a commit.
      journal?.mark(peer)
      output.enqueue(peer, Encode.deliveryQueuedFrame(messageId, staged.threadId, staged.deliverAt))
      if (notice !== undefined) output.enqueue(peer, notice)
      return outcome
    }
    // It waits for the commit of what it acknowledges: aside for a client that takes it in any order.
    if (journal !== undefined && peer.custody !== undefined) journal.holdAck(peer, messageId, outcome.delivery, notice, targetKey)
    else {
      journal?.mark(peer)
      output.enqueue(peer, Encode.deliveredFrameParts(messageId, outcome.delivery))
      if (notice !== undefined) output.enqueue(peer, notice)
    }
    return outcome
  }

  /** Refuses `peer`'s send `messageId`, addressed to `to`, and tells the live view (Traffic.ts); returns the outcome. */
  fail(peer: Peer, messageId: string, refusal: Refusal, to: unknown): Outcome {
    this.traffic.refused(peer.session, to, messageId, refusal.code, refusal.reason, this.ctx.now())
    return this.answer(peer, messageId, {
      ok: false,
      code: refusal.code,
      reason: refusal.reason,
      retryable: isRetryable(refusal.code)
    })
  }

  /** Refuses a send whose text holds a control character (C-TOOL-6), naming it. */
  failTextControl(peer: Peer, message: Message, to: unknown): Outcome {
    const found = textControlOf(message.content.text)
    const reason = found === undefined ? Reason.invalidMessage : Reason.textControl(found.code, found.position)
    return this.fail(peer, message.id, { code: DeliveryCode.InvalidMessage, reason }, to)
  }
}
