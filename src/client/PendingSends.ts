/**
 * The sends one client connection has taken and not yet seen answered, in
 * the order it took them — which is the order their frames went to the
 * socket, since a send is entered here in the same synchronous step that
 * hands its frame to the transport.
 *
 * When the connection closes, the sends still waiting fail with
 * `ConnectionLost`, and the plain sends among them are kept as `unanswered`,
 * oldest first. The client writes them again on its next connection, as one
 * batch and before anything else can use that connection (`retake`), so a
 * sender's messages reach the broker in the order it first sent them even
 * across a reconnect. Each send's own fiber, retrying after the loss, finds
 * its message already taken again and waits for that answer (C-BRK-8: the
 * same send twice shares one answer). Without this, each fiber wrote its
 * send again on its own, in whatever order the fibers woke (docs/testing.md,
 * known issue 10).
 *
 * Owned by one connection and touched only by its synchronous code.
 */
import { Deferred, Exit } from "effect"
import { ConnectionLost, type DeliveryError } from "./errors.ts"
import type { Delivery } from "./events.ts"
import type { SendFrameType, SendRequest } from "./requests.ts"

/** A send its connection had taken and not seen answered when it closed. */
export interface UnansweredSend {
  readonly request: SendRequest
  readonly frameType: SendFrameType
  /** What makes a retry "the same send" (requests.ts `signatureOf`). */
  readonly signature: string
  /** When it was first written, on whichever connection (Clock milliseconds). */
  readonly since: number
}

/** A send waiting for its answer, and who waits for it. */
export interface PendingSend extends UnansweredSend {
  readonly answer: Deferred.Deferred<Delivery, DeliveryError | ConnectionLost>
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

  /** The send waiting under this id, if any (a retry with the same id joins it). */
  get(messageId: string): PendingSend | undefined {
    return this.table.get(messageId)
  }

  /** Enters a send about to be written; its answer is the returned entry's `answer`. */
  begin(request: SendRequest, frameType: SendFrameType, signature: string, since: number): PendingSend {
    const pending: PendingSend = { request, frameType, signature, since, answer: Deferred.makeUnsafe() }
    this.table.set(request.message.id, pending)
    return pending
  }

  /** The send this answer is for, removed from the table; `undefined` for a late or unknown answer. */
  take(messageId: string): PendingSend | undefined {
    const pending = this.table.get(messageId)
    if (pending !== undefined) this.table.delete(messageId)
    return pending
  }

  /** Forgets `pending` if it is still the entry under its id (a write that failed, a timeout). */
  forget(pending: PendingSend): void {
    const messageId = pending.request.message.id
    if (this.table.get(messageId) === pending) this.table.delete(messageId)
  }

  /**
   * The connection closed: every send still waiting fails with
   * `ConnectionLost`, and the plain sends among them are kept, oldest
   * first, for `unanswered`. A child's `supervisor_send` is not kept: its
   * target is the supervisor the next connection is bound to, which the
   * send's own retry looks up again.
   */
  failAll(): void {
    const lost: Array<UnansweredSend> = []
    for (const [messageId, pending] of this.table) {
      if (pending.frameType === "send") {
        lost.push({
          request: pending.request,
          frameType: pending.frameType,
          signature: pending.signature,
          since: pending.since
        })
      }
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
   * their order, and returns their frames to be written as one batch. A send
   * already waiting here under its id is left as it is (and not written
   * again); one whose frame cannot be built for this connection is skipped,
   * and its own retry reports why.
   */
  retake(
    sends: ReadonlyArray<UnansweredSend>,
    encode: (send: UnansweredSend) => string | DeliveryError
  ): ReadonlyArray<string> {
    const texts: Array<string> = []
    for (const send of sends) {
      if (this.table.has(send.request.message.id)) continue
      const text = encode(send)
      if (typeof text !== "string") continue
      this.table.set(send.request.message.id, { ...send, answer: Deferred.makeUnsafe() })
      texts.push(text)
    }
    return texts
  }
}
