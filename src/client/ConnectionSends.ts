/**
 * One connection's sends and cancels: `send` (and a child's `supervisor_send`),
 * the re-send of what an earlier connection left unanswered (`resend`), and
 * `cancel_message` (P71), ordered after a send of the same id still waiting.
 * It owns the two tables their answers settle — the sends waiting for an
 * answer (PendingSends.ts) and the cancels waiting for theirs
 * (PendingCancels.ts) — and reads the broker's answers to them: the reader
 * hands each `delivered` / `delivery_failed` (`answered`: a bare one is a
 * cancel's, unless a send of the id that does not wait takes it first) and
 * each `delivery_queued` (`queued`) here, and an answer no send waits for any
 * more goes to `sinks.lateAnswer`, as that send would have ended. The close
 * fails what still waits (`failAll`). Owned by one `ClientConnection`; its
 * tables are touched only synchronously.
 */
import { Clock, Deferred, Duration, Effect, Exit, Fiber, type Scope } from "effect"
import { DeliveryCode } from "../protocol/delivery.ts"
import { ASK_EXPIRY_V1, REUSE_REASON_V1 } from "../protocol/features.ts"
import type { BrokerFrame, DeliveredFrame, DeliveryFailedFrame, DeliveryQueuedFrame } from "../protocol/frames.ts"
import type { ClientConnection } from "./ClientConnection.ts"
import type { ConnectionWrites } from "./ConnectionWrites.ts"
import { answerAfterLoss } from "./afterLoss.ts"
import { ConnectionLost, deliveryError, RequestTimeout } from "./errors.ts"
import type { ClientSinks, Delivery } from "./events.ts"
import { PendingCancels } from "./PendingCancels.ts"
import { addressedTo, PendingSends, type SendAnswer } from "./PendingSends.ts"
import type { Registered } from "./RegisterHandshake.ts"
import { awaitAnswer, sendFrameText, signatureOf, writeThenAwait } from "./requests.ts"

/**
 * The sends and cancels of one connection, as `makeConnectionSends` makes them: the connection's `send`,
 * `resend`, `cancel`, `writtenAfterLoss` and `unanswered` (ClientConnection.ts says what each does), and what
 * the reader and the close call; see the module header.
 */
export interface ConnectionSends
  extends Pick<ClientConnection, "send" | "resend" | "cancel" | "writtenAfterLoss" | "unanswered">
{
  /** A `delivered` or `delivery_failed` was read: the cancel or send it answers, or `sinks.lateAnswer`. */
  readonly answered: (frame: DeliveredFrame | DeliveryFailedFrame) => void
  /** A `delivery_queued` was read: the send it answers, or `sinks.lateAnswer`. */
  readonly queued: (frame: DeliveryQueuedFrame) => void
  /** The connection closed: every send and cancel still waiting ends (PendingSends.ts, PendingCancels.ts `failAll`). */
  readonly failAll: () => void
}

/** What the sends of one connection need from it. */
export interface ConnectionSendsOptions {
  /** The broker's `registered`: its state epoch (told with a late answer) and a child's supervisor (`resend`). */
  readonly registered: Registered
  /** The features the broker granted. */
  readonly granted: ReadonlySet<string>
  /** Whether an earlier connection lost a send unanswered (`RegisterRequest.lostOnTheWay`). */
  readonly lostOnTheWay: ((messageId: string, signature: string, now: number) => boolean) | undefined
  readonly sinks: ClientSinks
  readonly writes: ConnectionWrites
  /** The connection's Scope: the re-sent answers' grace and an ask's question's write live in it. */
  readonly scope: Scope.Scope
}

/** A send's answer read after its send stopped waiting (`ClientSinks.lateAnswer`), as the send would have ended. */
const lateAnswer = (
  frame: Extract<BrokerFrame, { readonly type: "delivered" | "delivery_failed" | "delivery_queued" }>
): SendAnswer => {
  switch (frame.type) {
    case "delivered":
      return Exit.succeed({ messageId: frame.messageId, delivery: frame.delivery ?? "socket_delivered" })
    case "delivery_queued":
      return Exit.succeed({ messageId: frame.messageId, delivery: "staged", threadId: frame.threadId, deliverAt: frame.deliverAt })
    default:
      return Exit.fail(deliveryError({
        messageId: frame.messageId,
        code: frame.code ?? "",
        reason: frame.reason,
        retryable: frame.retryable ?? false
      }))
  }
}

/** The sends and cancels of one connection; see the module header. */
export const makeConnectionSends = (options: ConnectionSendsOptions): ConnectionSends => {
  const { granted, registered, scope, sinks, writes } = options
  const sends = new PendingSends(options.lostOnTheWay)
  // A cancel let go unanswered (dropped past the bound, or cut off by the close) leaves its question's pair
  // reopened; one the close cuts off whose frame never left is withdrawn, as one its caller took back.
  const cancels = new PendingCancels(sinks.cancelAbandoned, sinks.cancelWithdrawn)
  /** A broker that settles asks writes delivery details on every send answer (P41): a bare answer is a cancel's. */
  const settlesAsks = granted.has(ASK_EXPIRY_V1)

  const send: ConnectionSends["send"] = (request, timeoutMs, frameType = "send") =>
    Effect.suspend(() => {
      const messageId = request.message.id
      const signature = signatureOf(request, frameType)
      const inFlight = sends.get(messageId)
      if (inFlight !== undefined) {
        // C-BRK-8: the same send twice shares one answer; a different one is refused.
        if (inFlight.signature !== signature) {
          return Effect.fail(
            deliveryError({
              messageId,
              code: DeliveryCode.MessageIdReuse,
              reason: `Message id ${messageId} is already pending with a different target or payload`,
              retryable: false
            })
          )
        }
        // A caller that gives up leaves (`leave`); the last to leave abandons the send, as its first writer's
        // timeout does: it stays, kept by a close for the next connection to write again, and its answer, read
        // later, is handed to `sinks.lateAnswer`, for an ask settling with the broker (PendingSends.ts).
        return awaitAnswer(sends.join(inFlight), timeoutMs, "send", () => sends.leave(inFlight)).pipe(
          Effect.onInterrupt(() => Effect.sync(() => sends.leave(inFlight)))
        )
      }
      // A retry after a loss whose re-send was answered before it came back: that answer is its own.
      const kept = sends.collect(messageId, signature)
      if (kept !== undefined) return kept
      return Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const text = sendFrameText(request, frameType, granted, now)
        if (typeof text !== "string") return Effect.fail(text)
        if (!writes.open) return Effect.fail(new ConnectionLost({ operation: "send" }))
        // A cancel of this id whose callers all left, still detached for its late answer, must not take this
        // send's bare answer (P41) for its own (review revai AI3): it goes, its question's pair left reopened.
        cancels.dropDetached(messageId)
        const pending = sends.begin(request, frameType, signature, now)
        // A write cut short by the connection's close leaves the send in the table, so the close
        // keeps it among the unanswered, in its place; a caller that gives up before the frame is
        // written withdraws it (the broker never saw it, and a later send with the id must not join).
        // One that gives up after leaves (abandons) it: see the joined case above.
        // Forgotten only when the outbox really took the frame back: one in a write the socket had not taken
        // whole may still reach the broker, and is left (abandoned) for the close to keep (review revav AV4).
        let withdrawn = false
        const writing = writes.writeText(text, "send", () => {
          withdrawn = true
        }).pipe(
          Effect.onInterrupt(() => Effect.sync(() => withdrawn ? sends.forget(pending) : undefined)),
          // A write that failed before the close was read (the transport refused it) ends this caller's wait:
          // it leaves, so a retry that joins and times out abandons the send rather than leaving a waiter
          // no one is behind (review revax AX-A3); never written, it is forgotten.
          Effect.tapError(() => Effect.sync(() => withdrawn ? sends.forget(pending) : sends.leave(pending)))
        )
        // The question of an ask settling with the broker is never taken back by its caller's timeout: written
        // in the connection's Scope, it goes out when the writes ahead of it do, or stays in the table for the
        // close to keep, whatever ends that write (review revax AX-A2: taken back, it was forgotten — lost after
        // a drop, and "delivered" to the settle).
        const written = sinks.awaitsVerdict(messageId)
          ? Effect.flatMap(Effect.forkIn(writes.writeText(text, "send"), scope), Fiber.join)
          : writing
        return writeThenAwait(
          written,
          pending.answer,
          timeoutMs,
          "send",
          () => sends.leave(pending)
        ).pipe(Effect.onInterrupt(() => Effect.sync(() => sends.leave(pending))))
      })
    })

  const resend: ConnectionSends["resend"] = (lost, keepMs) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      if (!writes.open) return Effect.fail(new ConnectionLost({ operation: "send" }))
      const { messageIds, texts } = sends.retake(
        addressedTo(lost, registered.frame.supervisorSessionId),
        (send) => sendFrameText(send.request, send.frameType, granted, now),
        now
      )
      if (texts.length === 0) return Effect.void
      // Answers nobody came back for are dropped after `keepMs`, on the Clock; with the connection, at its close.
      const release = Effect.sleep(Duration.millis(keepMs)).pipe(Effect.andThen(Effect.sync(() => sends.release(messageIds))))
      // Cut short, the batch stays in the table: this connection's close keeps it, in order, for the next.
      return Effect.forkIn(release, scope).pipe(Effect.andThen(writes.writeTexts(texts, "send")))
    })

  const cancel: ConnectionSends["cancel"] = (messageId, timeoutMs) =>
    Effect.acquireUseRelease(
      Effect.sync(() => {
        // A second cancel of the same id while the first waits shares its answer (and its ConnectionLost).
        const entered = cancels.enter(messageId)
        // Told as the frame goes, not before (a send of the id waited above): the broker may write the
        // question the reply answered again ahead of the cancel's answer (RecentMessages.cancelWritten).
        if (entered.first) sinks.cancelWritten(messageId)
        return entered
      }),
      ({ first, pending }) =>
        Effect.flatMap(Clock.currentTimeMillis, (start) =>
          (first
            ? writeThenAwait(
              // From the moment its frame is queued it may reach the broker, unless the outbox takes it back.
              Effect.suspend(() => {
                if (!writes.open) return Effect.fail(new ConnectionLost({ operation: "cancel" }))
                pending.maybeSent = true
                const text = JSON.stringify({ type: "cancel_message", messageId })
                return writes.outbox.write([text], "cancel", () => (pending.maybeSent = false))
              }),
              pending.answer,
              timeoutMs,
              "cancel",
              () => undefined
            )
            : awaitAnswer(pending.answer, timeoutMs, "cancel", () => undefined)).pipe(
              // Joined to a cancel whose frame was taken back unwritten: it writes its own, within what is left of its time.
              Effect.flatMap((answer) =>
                answer !== "withdrawn"
                  ? Effect.succeed(answer)
                  : Effect.flatMap(Clock.currentTimeMillis, (now) => cancelAfterSend(messageId, Math.max(0, timeoutMs - (now - start))))
              )
            )),
      // Each caller leaves as it ends (answered, timed out, given up, its write failed). The last to leave
      // without an answer leaves the cancel detached (PendingCancels.ts): the broker may have carried it
      // out and write the question it asks again ahead of its late answer, so the question's pair stays
      // reopened until that answer is read (`answered`, which also keeps it from a send's answers, review revag
      // AG3), the connection closes, or newer detached cancels push it out (review revag AG1: a duplicate costs
      // less than a lost question; revai AI4). One whose frame was never written (its caller gave up while it
      // was queued: the outbox took it back; not one already in a write the socket had not taken whole, which
      // goes out as that write ends) reached no broker: it ends with its first caller, the question a repeat
      // again unless something else keeps the pair open (review revaj AJ1, revam AM1), and a later cancel writes its
      // own (review revai AI1, AI2); a caller that joined it writes the cancel anew (helper cancelb).
      ({ first, pending }) =>
        Effect.sync(() => {
          if (cancels.leave(messageId, pending, first) === "stays") return
          // Closes the pair unless something else keeps it open: an earlier cancel may have reached the broker,
          // or a reply's loss read meanwhile means the question may be asked again (review revaj AJ1, revam AM1).
          sinks.cancelWithdrawn(messageId)
          if (pending.waiters > 0) Deferred.doneUnsafe(pending.answer, Exit.succeed("withdrawn"))
        })
    )

  /**
   * A base broker's bare `delivered` to a send (P41) cannot be told from a cancel's answer (P71): the
   * cancel of a message whose send still waits here is written once that send is answered (or the
   * connection closes), at most `timeoutMs` later, so each takes its own answer.
   */
  const cancelAfterSend: ConnectionSends["cancel"] = (messageId, timeoutMs) =>
    Effect.suspend(() => {
      const inFlight = sends.get(messageId)
      // A send nobody waits for any more (its callers timed out: the usual reason to cancel) is not waited for
      // either: the broker that never answered it may never do, and it orders the cancel after the send it read
      // (review revav AV1). Its answer and the cancel's are told apart by their details, or, from a broker that
      // may write bare send answers, by their order (`answered`; review revax AX-A1).
      if (inFlight === undefined || sends.isAbandoned(inFlight)) return cancel(messageId, timeoutMs)
      return Deferred.await(inFlight.answer).pipe(
        Effect.exit, // the send's outcome is its caller's
        Effect.timeoutOrElse({
          duration: Duration.millis(timeoutMs),
          orElse: () => Effect.fail(new RequestTimeout({ operation: "cancel", timeoutMs }))
        }),
        Effect.andThen(cancelAfterSend(messageId, timeoutMs))
      )
    })

  const answered: ConnectionSends["answered"] = (frame) => {
    // Cancel answers are bare: no delivery details (P71).
    const bare = frame.type === "delivered" ? frame.delivery === undefined : frame.code === undefined
    // A broker that does not settle asks may answer a send bare too (P41), in frame order: an abandoned send
    // of this id, written before the cancel that did not wait for it, takes the first (review revax AX-A1).
    const sendFirst = bare && !settlesAsks && sends.abandonedFor(frame.messageId)
    const cancel = bare && !sendFirst ? cancels.take(frame.messageId) : undefined
    if (cancel !== undefined) {
      sinks.cancelEnded(frame.messageId, frame.type === "delivered")
      Deferred.doneUnsafe(cancel.answer, Exit.succeed(frame.type === "delivered"))
      return
    }
    const pending = sends.take(frame.messageId)
    if (pending === undefined) {
      // Its send gave up waiting (the send timeout): an ask settling with the broker may still need it. Only an
      // answer with delivery details answers a send there: a broker that settles asks (`ask-expiry-v1`) writes
      // them (P41), and a bare one is a cancel's (P71) whose cancel was let go — never the ask's verdict (AP5).
      if (!bare) sinks.lateAnswer(frame.messageId, lateAnswer(frame), registered.frame.stateEpoch)
      return
    }
    const answer: SendAnswer = frame.type === "delivered"
      ? Exit.succeed<Delivery>({
        messageId: frame.messageId,
        delivery: frame.delivery ?? "socket_delivered",
        ...(pending.writtenAskTimeoutMs === undefined ? {} : { askTimeoutMs: pending.writtenAskTimeoutMs })
      })
      : Exit.fail(deliveryError({
        messageId: frame.messageId,
        code: frame.code ?? "",
        reason: frame.reason,
        retryable: frame.retryable ?? false
      }))
    // An abandoned send (every caller left: PendingSends.ts) has its answer read late, as one no send waits for;
    // one written again after a loss is read as its own retry would read it (afterLoss.ts, one rule for both).
    if (!sends.settle(pending, answer) && !bare) {
      sinks.lateAnswer(frame.messageId, pending.afterLoss ? answerAfterLoss(frame.messageId, answer, granted.has(REUSE_REASON_V1)) : answer, registered.frame.stateEpoch)
    }
  }

  const queued: ConnectionSends["queued"] = (frame) => {
    const pending = sends.take(frame.messageId)
    if (pending === undefined) {
      sinks.lateAnswer(frame.messageId, lateAnswer(frame), registered.frame.stateEpoch)
      return
    }
    const answer: SendAnswer = Exit.succeed<Delivery>({
      messageId: frame.messageId,
      delivery: "staged",
      threadId: frame.threadId,
      deliverAt: frame.deliverAt
    })
    if (!sends.settle(pending, answer)) sinks.lateAnswer(frame.messageId, answer, registered.frame.stateEpoch)
  }

  const failAll = (): void => {
    sends.failAll()
    // No answer came: whether the broker carried the cancel out is unknown, so each is told abandoned and the
    // question's pair stays reopened — a copy a next connection reads passes once (a possible duplicate, never a loss)
    // — unless its frame surely never left: the outbox's queue is dropped first, marking each cancel still in
    // it unsent (`takenBack`), and such a cancel is told withdrawn, as one its caller took back (helper cancelc).
    cancels.failAll()
  }

  return {
    send,
    resend,
    cancel: cancelAfterSend,
    writtenAfterLoss: (request, frameType = "send") =>
      sends.writtenAfterLoss(request.message.id, signatureOf(request, frameType)),
    unanswered: () => sends.unanswered(),
    answered,
    queued,
    failAll
  }
}
