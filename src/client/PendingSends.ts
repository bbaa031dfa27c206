/**
 * The sends one client connection has taken and not yet seen answered, in
 * the order it took them — which is the order their frames went to the
 * socket, since a send is entered here in the same synchronous step that
 * hands its frame to the transport.
 *
 * When the connection closes, the sends still waiting fail with
 * `ConnectionLost`, and are kept as `unanswered`, oldest first — a child's
 * `supervisor_send` among them in its place. The client writes them again on its next connection, as one
 * batch and before anything else can use that connection (`retake`), so a
 * sender's messages reach the broker in the order it first sent them even
 * across a reconnect. Each send's own fiber, retrying after the loss, finds
 * its message already taken again and waits for that answer (C-BRK-8: the
 * same send twice shares one answer). Without this, each fiber wrote its
 * send again on its own, in whatever order the fibers woke (docs/testing.md,
 * known issue 10).
 *
 * A re-sent send may be answered before its fiber comes back for it (the
 * fiber was still backing off, or the answer simply came first): its answer
 * is then kept here, under its message id, and the fiber's retry collects it
 * (`collect`) instead of writing the message once more. The connection drops
 * what nobody collected when its grace ends (`release`), and all of it when
 * it closes. It remembers, for its life, which sends it wrote again so
 * (`writtenAfterLoss`): any answer to one of them read here — joined,
 * collected, or to a write of it once more after `release` — speaks only for
 * a write after the loss; so does one to a send an earlier connection lost
 * (the client's record, asked through `lostBefore`: Resending.ts).
 *
 * A send whose every caller left before its answer came (timed out, or gave
 * up once its frame was out) is ABANDONED, not forgotten: it stays here, its
 * answer, read later, goes to `sinks.lateAnswer` (an ask settling with the
 * broker may need it), and a close keeps it among the unanswered, marked
 * abandoned: the client writes it again on the next connection only for an
 * ask still settling with the broker (ConnectionLifetime.ts; the broker
 * answers from its record, P46) — forgotten, a question whose frame the
 * broker never read was lost with the connection (review revas AS1); a
 * plain send whose caller was told it timed out is not (review revav AV2). Callers are counted (`join`, `leave`): one caller leaving abandons
 * nothing another still waits on (AS3). Only a write withdrawn before its
 * frame left is forgotten (`forget`). Abandoned sends go when answered, with
 * the close (then within the replay window, Resending.ts), and past
 * `MAX_ABANDONED` the oldest is forgotten.
 *
 * Owned by one connection and touched only by its synchronous code.
 */
import { Deferred, Exit } from "effect"
import { ConnectionLost, type DeliveryError } from "./errors.ts"
import type { Delivery } from "./events.ts"
import { askTimeoutAt, type SendFrameType, type SendRequest, signatureOf } from "./requests.ts"

/**
 * How many abandoned sends (every caller gone, no answer read) one
 * connection keeps for their late answers and a re-send after a drop; past
 * it the oldest is forgotten: its answer, read later, still reaches
 * `sinks.lateAnswer`, but a drop no longer keeps it for the next connection.
 * As many as a session may have asks open (`E_TOO_MANY_ASKS`).
 *
 * @category constants
 * @since 0.1.0
 */
export const MAX_ABANDONED = 1_024

/** What a write at `now` carries as `askTimeoutMs`, kept only for an ask whose first send is known. */
const writtenAskTimeout = (request: SendRequest, now: number): number | undefined =>
  request.askSince === undefined ? undefined : askTimeoutAt(request, now)

/** A send its connection had taken and not seen answered when it closed. */
export interface UnansweredSend {
  readonly request: SendRequest
  readonly frameType: SendFrameType
  /** What makes a retry "the same send" (requests.ts `signatureOf`). */
  readonly signature: string
  /** When it was first written, on whichever connection (Clock milliseconds). */
  readonly since: number
  /**
   * Every caller had left it unanswered (`PendingSends.leave`): re-sent, its
   * answer is a late one (`sinks.lateAnswer`), not kept for a retry.
   */
  readonly abandoned: boolean
}

/**
 * `sends` as a connection bound to `supervisorSessionId` writes them again:
 * a child's `supervisor_send` addressed to another supervisor (or to none)
 * is addressed to this one, with its signature to match, so that the send's
 * own retry — which addresses the connection's supervisor — joins it. The
 * same array when nothing changes (the usual case: a grant names one
 * supervisor for good).
 */
export const addressedTo = (
  sends: ReadonlyArray<UnansweredSend>,
  supervisorSessionId: string | undefined
): ReadonlyArray<UnansweredSend> => {
  const stale = (send: UnansweredSend) =>
    send.frameType === "supervisor_send" && supervisorSessionId !== undefined && send.request.to !== supervisorSessionId
  if (supervisorSessionId === undefined || !sends.some(stale)) return sends
  return sends.map((send) => {
    if (!stale(send)) return send
    const request = { ...send.request, to: supervisorSessionId }
    return { ...send, request, signature: signatureOf(request, send.frameType) }
  })
}

/** A send waiting for its answer, and who waits for it. */
export interface PendingSend extends Omit<UnansweredSend, "abandoned"> {
  /** The `askTimeoutMs` its last write carried (`askTimeoutAt`), for an ask sent with `askSince`. */
  readonly writtenAskTimeoutMs: number | undefined
  readonly answer: Deferred.Deferred<Delivery, DeliveryError | ConnectionLost>
  /**
   * Re-sent by `retake` and not yet joined by a caller: nobody waits on
   * `answer`, so its answer is kept for the caller's retry (`settle`).
   */
  unclaimed: boolean
  /**
   * Written on this connection again after an earlier one lost it (`retake`), or written here once more after
   * such a re-send (`begin`: a retry after its answer was read or `release`d): a refusal of it speaks for this
   * write only, and an earlier one may have been delivered (`TargetRebound.afterLoss`).
   */
  readonly afterLoss: boolean
  /** The callers waiting on `answer` (`begin`, `join`, less `leave`); none and not `unclaimed`: abandoned. */
  waiters: number
}

/** Nobody waits for `pending`'s answer and none is kept for a retry: it is a late one (`sinks.lateAnswer`). */
const isAbandoned = (pending: PendingSend): boolean => pending.waiters === 0 && !pending.unclaimed

/** What the broker answered a send: the outcome a caller gets. */
export type SendAnswer = Exit.Exit<Delivery, DeliveryError | ConnectionLost>

/** The answer to a re-sent send that no caller was waiting on yet. */
interface KeptAnswer {
  readonly signature: string
  readonly answer: SendAnswer
}

/**
 * The pending-send table of one connection.
 *
 * @example
 * ```ts
 * const sends = new PendingSends()
 * const pending = sends.begin(request, "send", signature, now)
 * // … the broker answers:
 * sends.take(request.message.id) // === pending, and gone from the table
 * ```
 */
export class PendingSends {
  private readonly table = new Map<string, PendingSend>()
  private lost: ReadonlyArray<UnansweredSend> = []
  /** Answers to re-sent sends that came before their caller did, by message id. */
  private readonly kept = new Map<string, KeptAnswer>()
  /** How many entries of `table` are abandoned (`isAbandoned`), bounded by `MAX_ABANDONED`. */
  private abandonedCount = 0
  /**
   * The sends this connection wrote again after an earlier one lost them (`retake`), by message id, with their
   * signature: as many as that batch held, for the connection's life. A later write of the same send here
   * (`begin`) is one after the loss too (`afterLoss`), its answer kept or not (`writtenAfterLoss`).
   */
  private readonly resent = new Map<string, string>()
  /**
   * Whether an earlier connection lost a send unanswered (the client's record, Resending.ts `lostOnTheWay`):
   * a write of it here is after the loss even when this connection did not write it again (`begin`).
   */
  private readonly lostBefore: (messageId: string, signature: string, now: number) => boolean

  constructor(lostBefore: (messageId: string, signature: string, now: number) => boolean = () => false) {
    this.lostBefore = lostBefore
  }

  /**
   * Whether this connection wrote the send `messageId` (with this `signature`) again after an earlier one lost it
   * (`retake`): every answer to it read here speaks for a write after the loss, whoever waits for it — a caller
   * that joined the re-send, collected its kept answer, or wrote it once more after `release`.
   */
  writtenAfterLoss(messageId: string, signature: string): boolean {
    return this.resent.get(messageId) === signature
  }

  /** The send waiting under this id, if any (a retry with the same id joins it). */
  get(messageId: string): PendingSend | undefined {
    return this.table.get(messageId)
  }

  /**
   * Enters a send about to be written; its answer is the returned entry's `answer`. Marked `afterLoss` when this
   * connection wrote the same send again after a loss (`writtenAfterLoss`), or an earlier one lost it (`lostBefore`).
   */
  begin(request: SendRequest, frameType: SendFrameType, signature: string, since: number): PendingSend {
    const pending: PendingSend = {
      request,
      frameType,
      signature,
      since,
      writtenAskTimeoutMs: writtenAskTimeout(request, since),
      answer: Deferred.makeUnsafe(),
      unclaimed: false,
      // A retry after its re-send's answer was read (or dropped by `release`) writes it again here: still after the loss.
      // So is the first write here of a send an earlier connection lost (after a second loss, or abandoned before it).
      afterLoss: this.writtenAfterLoss(request.message.id, signature) || this.lostBefore(request.message.id, signature, since),
      waiters: 1
    }
    this.table.set(request.message.id, pending)
    return pending
  }

  /** The send this answer is for, removed from the table; `undefined` for a late or unknown answer. */
  take(messageId: string): PendingSend | undefined {
    const pending = this.table.get(messageId)
    if (pending === undefined) return undefined
    this.table.delete(messageId)
    if (isAbandoned(pending)) this.abandonedCount -= 1
    return pending
  }

  /**
   * Completes `pending` (just `take`n) with the broker's answer. A re-sent
   * send that no caller joined keeps it, for that caller's retry to `collect`.
   * False when nobody waited for it and none is kept: an abandoned send's
   * answer, which the connection hands to `sinks.lateAnswer`.
   */
  settle(pending: PendingSend, answer: SendAnswer): boolean {
    Deferred.doneUnsafe(pending.answer, answer)
    if (pending.unclaimed) this.kept.set(pending.request.message.id, { signature: pending.signature, answer })
    return !isAbandoned(pending)
  }

  /** A caller waits for `pending` (a retry joining the re-send, or the same send twice): its answer is the caller's, not kept. */
  join(pending: PendingSend): PendingSend["answer"] {
    if (isAbandoned(pending) && this.table.get(pending.request.message.id) === pending) this.abandonedCount -= 1
    pending.unclaimed = false
    pending.waiters += 1
    return pending.answer
  }

  /** Whether the send of `messageId` waiting here was left unanswered by every caller (`isAbandoned`). */
  abandonedFor(messageId: string): boolean {
    const pending = this.table.get(messageId)
    return pending !== undefined && isAbandoned(pending)
  }

  /** Whether every caller of `pending` left it unanswered (`leave`): nobody waits for its answer. */
  isAbandoned(pending: PendingSend): boolean {
    return isAbandoned(pending)
  }

  /**
   * A caller of `pending` stopped waiting with no answer read (its timeout,
   * an interruption once its frame was out). The last to leave abandons it:
   * it stays, for its late answer and a re-send after a drop (see the module
   * header); past `MAX_ABANDONED` the oldest abandoned send is forgotten.
   */
  leave(pending: PendingSend): void {
    if (pending.waiters === 0) return
    pending.waiters -= 1
    if (isAbandoned(pending) && this.table.get(pending.request.message.id) === pending) this.noteAbandoned()
  }

  /** One more entry is abandoned: counted, and the oldest forgotten past the bound. */
  private noteAbandoned(): void {
    this.abandonedCount += 1
    if (this.abandonedCount <= MAX_ABANDONED) return
    for (const [messageId, pending] of this.table) {
      if (!isAbandoned(pending)) continue
      this.table.delete(messageId)
      this.abandonedCount -= 1
      return
    }
  }

  /**
   * The kept answer to a re-sent send with this id, taken by the caller
   * retrying it; `undefined` when none is kept, or the retry is not the same
   * send (another signature: the broker judges it).
   */
  collect(messageId: string, signature: string): SendAnswer | undefined {
    if (this.kept.size === 0) return undefined
    const kept = this.kept.get(messageId)
    if (kept === undefined || kept.signature !== signature) return undefined
    this.kept.delete(messageId)
    return kept.answer
  }

  /**
   * The grace of these re-sent sends is over: their answers kept and not
   * collected are dropped, and one still to come is not kept. A retry after
   * this writes its message again (the broker answers it from its record),
   * still marked `afterLoss` (`writtenAfterLoss`): the send was lost once.
   */
  release(messageIds: ReadonlyArray<string>): void {
    for (const messageId of messageIds) {
      this.kept.delete(messageId)
      const pending = this.table.get(messageId)
      if (pending === undefined || !pending.unclaimed) continue
      pending.unclaimed = false
      if (isAbandoned(pending)) this.noteAbandoned()
    }
  }

  /**
   * Forgets `pending` if it is still the entry under its id: its write was
   * withdrawn before its frame left (the broker never saw it, and a later
   * send with the id must not join it). A send whose frame may have left is
   * abandoned instead (`leave`).
   */
  forget(pending: PendingSend): void {
    const messageId = pending.request.message.id
    if (this.table.get(messageId) !== pending) return
    this.table.delete(messageId)
    if (isAbandoned(pending)) this.abandonedCount -= 1
  }

  /**
   * The connection closed: every send still waiting fails with
   * `ConnectionLost`, and all of them are kept, oldest first, for
   * `unanswered` — a child's `supervisor_send` too, in its place, or the
   * plain sends written after it would overtake it when the next connection
   * writes them again (that connection addresses it to the supervisor it is
   * bound to: `retake`'s `encode`). Abandoned sends are kept too, marked
   * so: the next connection writes them again, and hands their answers to
   * `sinks.lateAnswer`. Kept answers are dropped: a retry goes
   * to the next connection, which writes its message again.
   */
  failAll(): void {
    this.kept.clear()
    this.resent.clear()
    this.abandonedCount = 0
    const lost: Array<UnansweredSend> = []
    for (const [messageId, pending] of this.table) {
      lost.push({
        request: pending.request,
        frameType: pending.frameType,
        signature: pending.signature,
        since: pending.since,
        abandoned: isAbandoned(pending)
      })
      Deferred.doneUnsafe(pending.answer, Exit.fail(new ConnectionLost({ operation: "send", messageId })))
    }
    this.table.clear()
    this.lost = lost
  }

  /** The sends waiting when the connection closed, oldest first (empty while it is open). */
  unanswered(): ReadonlyArray<UnansweredSend> {
    return this.lost
  }

  /**
   * Takes sends a previous connection left unanswered into this table, in
   * their order (an ask's `askTimeoutMs` as of `now`, the write's time), and
   * returns their frames to be written as one batch, with
   * their message ids (for `release`). A send already waiting here under its
   * id is left as it is (and not written again); one whose frame cannot be
   * built for this connection is skipped, and its own retry reports why.
   * Nobody waits on a taken send until its caller's retry joins it: until
   * then its answer is kept (`settle`) — unless it was abandoned, whose
   * answer is a late one.
   */
  retake(
    sends: ReadonlyArray<UnansweredSend>,
    encode: (send: UnansweredSend) => string | DeliveryError,
    now: number
  ): { readonly texts: ReadonlyArray<string>; readonly messageIds: ReadonlyArray<string> } {
    const texts: Array<string> = []
    const messageIds: Array<string> = []
    for (const send of sends) {
      const messageId = send.request.message.id
      if (this.table.has(messageId)) continue
      const text = encode(send)
      if (typeof text !== "string") continue
      this.table.set(messageId, {
        request: send.request,
        frameType: send.frameType,
        signature: send.signature,
        since: send.since,
        writtenAskTimeoutMs: writtenAskTimeout(send.request, now),
        answer: Deferred.makeUnsafe(),
        unclaimed: !send.abandoned,
        afterLoss: true,
        waiters: 0
      })
      if (send.abandoned) this.noteAbandoned()
      this.resent.set(messageId, send.signature)
      texts.push(text)
      messageIds.push(messageId)
    }
    return { texts, messageIds }
  }
}
