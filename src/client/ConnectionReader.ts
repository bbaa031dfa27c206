/**
 * One connection's reader side: the per-frame dispatch of what the broker
 * writes and the `received-v1` count the reader owes for it. Each batch read
 * (`handle`) is decoded and routed frame by frame, in plain synchronous code:
 * answers to the tables waiting for them (ListRequests, ConnectionSends,
 * AuthorizeRequests, and the topic, result and question requests), messages,
 * presence, controls, topic records and question notices to the client's
 * sinks, and `taken_over` kept for `takenOver`. It owns the reader's state:
 * the frames read and the one being dispatched, whether some are left
 * unconfirmed, and whether the close began (`leave`) or the client dropped
 * the socket itself (`drop`) — after which, under `received-v1`, a message is
 * neither handed on nor confirmed (the broker keeps it). The count itself is
 * written by a fiber of its own (Confirmations.ts), so the reader never waits
 * to write. Owned by one `ClientConnection`; touched only synchronously.
 */
import { Effect } from "effect"
import { decodeBrokerFrameText, isFrameDecodeError } from "../protocol/decode.ts"
import type { DeliveryChoice } from "../protocol/deliveryModes.ts"
import type { BrokerFrame, MessageFrame, ReceiptStatus } from "../protocol/frames.ts"
import type { AuthorizeRequests } from "./AuthorizeRequests.ts"
import type { Confirmations } from "./Confirmations.ts"
import type { ConnectionSends } from "./ConnectionSends.ts"
import type { ConnectionWrites } from "./ConnectionWrites.ts"
import type { TakenOver } from "./errors.ts"
import type { ClientSinks, InboundMessage } from "./events.ts"
import type { ListRequests } from "./ListRequests.ts"
import type { QuestionRequests } from "./QuestionRequests.ts"
import type { ResultRequests } from "./ResultRequests.ts"
import type { TopicRequests } from "./TopicRequests.ts"

/**
 * Receipts the broker itself writes about a message it dropped (`expired`,
 * `superseded`): like mail, it keeps them until the client confirms reading
 * them (broker/Custody.ts), so a batch carrying one is confirmed.
 */
const isBrokerNotice = (status: ReceiptStatus): boolean => status === "expired" || status === "superseded"

/** The sender's delivery choice carried by a forwarded message (`delivery-v1`). */
const deliveryOfMessage = (frame: MessageFrame): DeliveryChoice => ({
  delivery: frame.delivery ?? "steer",
  ...(frame.queueMode === undefined ? {} : { queueMode: frame.queueMode }),
  ...(frame.threadId === undefined ? {} : { threadId: frame.threadId })
})

/** The reader side of one connection, as `makeConnectionReader` makes it; see the module header. */
export interface ConnectionReader {
  /** Dispatches one batch the connection read, then owes the broker its confirmation where one is due. */
  readonly handle: (texts: ReadonlyArray<string>) => Effect.Effect<void>
  /** Confirms what was read and left unconfirmed, as far as the client's bound lets it now (ClientConnection.ts `confirmRead`). */
  readonly confirmRead: Effect.Effect<void>
  /** `close` has begun: nothing read from now on is confirmed, nor (under `received-v1`) handed on. */
  readonly leave: () => void
  /** The client drops the socket itself (`destroy`): false, changing nothing, once `close` has begun. */
  readonly drop: () => boolean
  /** What the broker's `taken_over` said, once it came. */
  readonly takenOver: () => TakenOver | undefined
}

/** What the reader of one connection routes to. */
export interface ConnectionReaderOptions {
  readonly sinks: ClientSinks
  /** Whether the broker granted `received-v1`. */
  readonly confirmsReceipt: boolean
  /** The connection's write side: its outbox holds the writes of what a batch's answers resume (`holdWhile`). */
  readonly writes: ConnectionWrites
  readonly confirmations: Confirmations
  readonly lists: ListRequests
  readonly sends: ConnectionSends
  readonly authorizations: AuthorizeRequests
  readonly topicRequests: TopicRequests
  readonly resultRequests: ResultRequests
  readonly questionRequests: QuestionRequests
}

/** The reader side of one connection; see the module header. */
export const makeConnectionReader = (options: ConnectionReaderOptions): ConnectionReader => {
  const {
    authorizations,
    confirmations,
    confirmsReceipt,
    lists,
    questionRequests,
    resultRequests,
    sends,
    sinks,
    topicRequests,
    writes
  } = options
  let takenOver: TakenOver | undefined
  /**
   * `close` has begun: the session is leaving, and a message read from now on reaches no one, so
   * nothing more is confirmed — the broker sends it to the session's next connection (known issue 8).
   */
  let leaving = false
  /**
   * The client dropped the socket itself (`destroy`: a failed liveness probe). Frames its reader had
   * already taken from the socket may still come through after; under `received-v1` they are the
   * broker's (unconfirmed: it requeues them, or withdraws what their sender cancelled meanwhile), so
   * they are not handed on, and nothing is confirmed on the dead link.
   */
  let dropped = false
  // `received-v1`: frames read on this connection, `registered` included. Once a batch carrying messages
  // (or the broker's own `expired`/`superseded` notices) is in this process, the broker may forget them: the count tells it so
  // (broker/Custody.ts).
  let framesRead = 1
  /** Frames read and not yet confirmed: the client's bound kept them back when they came (ConfirmationPolicy.ts). */
  let unconfirmed = false
  /** The frame number (as `framesRead` counts) of the frame being dispatched. */
  let dispatching = 0

  const dispatch = (frame: BrokerFrame): void => {
    switch (frame.type) {
      case "sessions":
        lists.answer(frame)
        return
      case "delivered":
      case "delivery_failed":
        sends.answered(frame)
        return
      case "delivery_queued":
        sends.queued(frame)
        return
      case "message": {
        // Read while leaving, or dispatched after the client dropped the socket, unconfirmed: the broker gives it
        // to the session's next connection, or withdraws it if its sender cancelled it (`received-v1`), so it is
        // not handed on here too — two consumers would get it, or one a message its sender was told is cancelled.
        // Without the extension the broker counts it delivered: handed on, or it is lost.
        if ((leaving || dropped) && confirmsReceipt) return
        const message: InboundMessage = {
          from: frame.from,
          message: frame.message,
          ...(frame.askTimeoutMs === undefined ? {} : { askTimeoutMs: frame.askTimeoutMs }),
          ...(frame.channel === undefined ? {} : { channel: frame.channel }),
          ...(frame.replyError === undefined ? {} : { replyError: frame.replyError }),
          ...(frame.delivery === undefined ? {} : { delivery: deliveryOfMessage(frame) }),
          ...(frame.traceparent === undefined ? {} : { traceparent: frame.traceparent }),
          read: sinks.nextRead()
        }
        if (sinks.bounded()) confirmations.note(message, dispatching)
        sinks.message(message)
        return
      }
      case "supervisor_authorized":
      case "supervisor_authorization_failed":
        authorizations.answer(frame)
        return
      case "session_joined":
        sinks.presence({ _tag: "Joined", session: frame.session })
        return
      case "presence_update":
        sinks.presence({ _tag: "Updated", session: frame.session })
        return
      case "session_left":
        sinks.presence({ _tag: "Left", sessionId: frame.sessionId })
        return
      case "message_receipt":
        sinks.control({ _tag: "Receipt", from: frame.from, receipt: frame.receipt })
        return
      case "message_control":
        sinks.control({ _tag: "Control", from: frame.from, control: frame.control, read: sinks.lastRead() })
        return
      case "topic_published":
      case "topic_subscribed":
      case "topic_unsubscribed":
      case "topic_state":
      case "topic_failed":
        topicRequests.settle(frame)
        return
      case "topic_record":
        sinks.topic(frame.entry)
        return
      case "result_stored":
      case "result_listed":
      case "result_page":
      case "result_failed":
        resultRequests.settle(frame)
        return
      case "question_result":
      case "question_failed":
        questionRequests.settle(frame)
        return
      case "question_answered":
        sinks.question({ _tag: "Answered", questionId: frame.questionId, answer: frame.answer, answeredAt: frame.answeredAt })
        return
      case "question_cancelled":
        sinks.question({ _tag: "Cancelled", questionId: frame.questionId, cancelledAt: frame.cancelledAt })
        return
      case "ask_expired":
        // Handed on even while leaving: a copy the broker gives the next connection too finds no wait.
        sinks.askExpired(frame.messageId)
        return
      case "ask_answered_elsewhere":
        sinks.control({ _tag: "AnsweredElsewhere", messageId: frame.messageId, replyId: frame.replyId })
        return
      case "taken_over":
        takenOver = { sessionId: frame.sessionId, pid: frame.pid }
        return
      default:
        return // registered again, error, health_ok: nothing waits for them here
    }
  }

  /** Owes the broker the count of frames read that the client's bound lets go; what is left stays unconfirmed. */
  const confirm = Effect.sync(() => {
    const frames = confirmations.confirmable(sinks.confirmBound(), framesRead)
    unconfirmed = frames < framesRead
    confirmations.owe(frames)
  })
  const handle = (texts: ReadonlyArray<string>) =>
    Effect.suspend(() => {
      let messages = false
      // The callers these answers resume write from inside the dispatch: their frames go out as one write.
      writes.outbox.holdWhile(() => {
        dispatching = framesRead
        for (const text of texts) {
          dispatching++
          const frame = decodeBrokerFrameText(text)
          if (isFrameDecodeError(frame)) continue
          if (frame.type === "message" || (frame.type === "message_receipt" && isBrokerNotice(frame.receipt.status))) {
            messages = true
          }
          dispatch(frame)
        }
      })
      framesRead += texts.length
      // What the routing found worth a warning (a message under a reused id dropped as a copy), logged here.
      const warnings = messages ? sinks.warnings() : undefined
      if (!messages || !confirmsReceipt || leaving || dropped) return warnings ?? Effect.void
      // While no session takes messages (its generation retired) they wait in this process, where a close
      // would lose them, so they stay the broker's until a session takes them again (known issue 9); under
      // `confirmWhenHandled`, so do the oldest unhandled message and everything after it (known issue 21).
      return warnings === undefined ? confirm : Effect.andThen(warnings, confirm)
    })

  return {
    handle,
    confirmRead: Effect.suspend(() => unconfirmed && !leaving && !dropped ? confirm : Effect.void),
    leave: () => {
      leaving = true
    },
    drop: () => {
      if (leaving) return false
      dropped = true
      return true
    },
    takenOver: () => takenOver
  }
}
