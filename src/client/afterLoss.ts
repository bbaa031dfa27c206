/**
 * What a refusal read after a loss means: the one rule the client reads a send's answer by once a connection lost
 * that send on the way, whoever reads it — the send's own retry through the rejoin grace (Resending.ts `send`) or a
 * connection that read it late, after its caller stopped waiting (ConnectionSends.ts, `ClientSinks.lateAnswer`).
 *
 * A write after a loss is answered by the broker reached next, which may not know what became of the first write (a
 * broker restarted, or a durable one killed after delivering it and before storing it). A refusal that says only what
 * that broker does not hold now — the target not found, not connected (an ask's "target disconnected", a child's
 * `supervisor_send` refused "supervisor away"), or no pending ask for a reply — may mean "not back yet" and is
 * retried through the grace; if it stands, the outcome is unknown: the loss (`ConnectionLost`), never a "not
 * delivered". A rebound is marked `afterLoss`. Owns no state: plain synchronous functions.
 */
import { Exit } from "effect"
import { Reason } from "../protocol/delivery.ts"
import { ConnectionLost, type IntercomNotConnected, reboundAfterLoss } from "./errors.ts"
import type { SendAnswer } from "./PendingSends.ts"
import type { SendError } from "./requests.ts"

/**
 * Whether `error`, read as the answer to a write of a send after a connection lost it on the way, says only what the
 * broker reached next does not hold now — the target not found or not connected there, or no pending ask for a
 * reply — so the first write may have been delivered all the same: if it stands, it is the loss.
 *
 * @category predicates
 * @since 0.1.0
 */
export const unknownAfterLoss = (error: SendError | IntercomNotConnected): boolean =>
  error._tag === "TargetNotFound" || error._tag === "TargetDisconnected" ||
  (error._tag === "ReplyTargetMismatch" && error.reason === Reason.replyNoAsk)

/**
 * Whether a send refused just after a reconnect is retried through the rejoin grace (Resending.ts `send`): a "not
 * found" or a reply's "no pending ask" always (a broker restart empties its registry: the target, or the asker, may
 * not be back yet); after a loss (`afterLoss`), every refusal `unknownAfterLoss` names, "target disconnected" too.
 * Without a loss a "target disconnected" stands at once: it answers the first write, and the target was gone then.
 *
 * @category predicates
 * @since 0.1.0
 */
export const retriedInGrace = (error: SendError | IntercomNotConnected, afterLoss: boolean): boolean =>
  afterLoss
    ? unknownAfterLoss(error)
    : error._tag === "TargetNotFound" || (error._tag === "ReplyTargetMismatch" && error.reason === Reason.replyNoAsk)

/**
 * `answer` to the send `messageId` written after a connection lost it, read after its caller stopped waiting, as the
 * send's own retry would end on it once the grace is over: a rebound marked `afterLoss` (review revas AS2), a refusal
 * `unknownAfterLoss` names the loss (`ConnectionLost`, outcome unknown), any other answer as it is.
 *
 * @category constructors
 * @since 0.1.0
 */
export const answerAfterLoss = (messageId: string, answer: SendAnswer): SendAnswer =>
  Exit.isFailure(answer)
    ? Exit.mapError(answer, (error) =>
      error._tag === "TargetRebound"
        ? reboundAfterLoss(error)
        : unknownAfterLoss(error)
        ? new ConnectionLost({ operation: "send", messageId })
        : error)
    : answer
