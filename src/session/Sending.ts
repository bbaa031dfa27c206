/**
 * The outgoing path that `send`, `ask` and `reply` share: a new message,
 * resolving a target from the broker's list (C-TGT), the epoch-bound send
 * with its single re-list after `E_TARGET_REBOUND` (P47), turning the
 * client's failures into the session's `NotDelivered` / `DeliveryUnknown` /
 * `DeliveredBeforeLoss` / `SelfTargetRefused` (C-TOOL-3, C-TOOL-4), and the `intercom_sent` history
 * record.
 *
 * Stateless: everything it touches belongs to the `Generation` it is made for.
 */
import { Clock, Effect } from "effect"
import { randomUUID } from "node:crypto"
import { ConnectionLost, type RequestTimeout } from "../client/errors.ts"
import type { SendError, SendRequest } from "../client/requests.ts"
import type { Delivery } from "../client/events.ts"
import { type DeliveryChoice, isDefaultDelivery } from "../protocol/deliveryModes.ts"
import { EXACT_SEND_V1 } from "../protocol/features.ts"
import type { Attachment, Message, SessionInfo } from "../protocol/frames.ts"
import {
  type ClientFailure,
  DeliveredBeforeLoss,
  DeliveryUnknown,
  NotDelivered,
  SelfTargetRefused,
  SessionEnded,
  TargetLookupUnanswered,
  TargetUnresolved
} from "./errors.ts"
import type { Generation } from "./Generation.ts"
import { resolutionFailure, resolveTarget } from "./targets.ts"

/**
 * A fresh outgoing message: new id, the clock's time, attachments only when
 * there are some.
 *
 * @category constructors
 * @since 0.1.0
 */
export const newMessage = (
  text: string,
  attachments: ReadonlyArray<Attachment> | undefined,
  extra: { readonly replyTo?: string | undefined; readonly expectsReply?: boolean }
): Effect.Effect<Message> =>
  Effect.map(Clock.currentTimeMillis, (timestamp) => ({
    id: randomUUID(),
    timestamp,
    content: attachments === undefined || attachments.length === 0 ? { text } : { text, attachments },
    ...(extra.replyTo === undefined ? {} : { replyTo: extra.replyTo }),
    ...(extra.expectsReply === true ? { expectsReply: true } : {})
  }))

/**
 * A failed client `send` as the session's error: the broker's
 * `E_SELF_TARGET` becomes `SelfTargetRefused`; a send the broker never
 * answered (the connection lost, the send timeout) `DeliveryUnknown`, since
 * the message may have arrived — but `DeliveredBeforeLoss` when the loss is
 * marked `firstWriteDeliveredHere` (the broker's record says the first write
 * arrived at the session `to` resolves to now), which `send`, `reply` and a
 * `progress_update` turn into their success (`deliveredBeforeLoss`); a
 * refusal `NotDelivered` with the broker's reason and code.
 *
 * @category errors
 * @since 0.1.0
 */
export const notDelivered = (kind: NotDelivered["kind"], to: string) =>
(error: SendError): SelfTargetRefused | NotDelivered | DeliveryUnknown | DeliveredBeforeLoss => {
  switch (error._tag) {
    case "SelfTarget":
      return new SelfTargetRefused()
    case "RequestTimeout":
      // Only the send's own timeout: the re-list after `E_TARGET_REBOUND` may time out too (review revak AK2).
      return new DeliveryUnknown({
        kind,
        to,
        reason: error.operation === "send"
          ? `the broker did not acknowledge it within ${error.timeoutMs / 1000} s (Send timeout)`
          : `the broker did not answer its ${error.operation} request within ${error.timeoutMs / 1000} s`,
        ...(error.operation === "send" ? { sendTimedOut: true } : {})
      })
    case "ConnectionLost":
      // The broker's record says the first write arrived at the very session `to` resolves to now (review revdh DH1):
      // delivered, not "maybe" (task here).
      if (error.refusal !== undefined && error.firstWriteDeliveredHere === true) {
        return new DeliveredBeforeLoss({
          kind,
          to,
          reason: `the broker reached after the reconnect refused the re-send «${error.refusal.reason}» ` +
            `(${error.refusal.code}), as its record says the first attempt was delivered to the session "${to}" ` +
            `resolves to now`
        })
      }
      // A refusal read after the loss says what the broker reached since holds now (the target away, say): told.
      return new DeliveryUnknown({
        kind,
        to,
        reason: error.refusal === undefined
          ? "the connection to the broker was lost before it acknowledged the message"
          : error.firstWriteReceived === true
          // An id reuse from the broker's record: the broker took the first attempt, for the session `to` meant then.
          ? `the connection to the broker was lost before it acknowledged the message, and the broker, which took ` +
            `the first attempt, refused the re-send: «${error.refusal.reason}» (${error.refusal.code}), as that ` +
            `attempt went to the session "${to}" named then and another session holds that name now; it most likely ` +
            `arrived there`
          : error.firstWriteQueued === true
          // The same, but the record says it waits in the mailbox for that earlier session, delivery not confirmed
          // (reviews revda DA2, revdh DH4).
          ? `the connection to the broker was lost before it acknowledged the message, and the broker, which took ` +
            `the first attempt, refused the re-send: «${error.refusal.reason}» (${error.refusal.code}), as that ` +
            `attempt is queued for the session "${to}" named then, no delivery to it confirmed (it may have been ` +
            `written to a client that dropped before confirming), and another session holds that name now`
          : `the connection to the broker was lost before it acknowledged the message, and the broker reached since ` +
            `refused the re-send: «${error.refusal.reason}» (${error.refusal.code}), which does not tell whether ` +
            `the first attempt arrived`
      })
    default:
      return new NotDelivered({ kind, to, reason: error.reason, code: error.code })
  }
}

/**
 * `Message sent to <to>` / `Message queued for <to>` (and `Reply …`): the
 * broker accepted it, nothing more (C-TOOL-4). A replace message the broker
 * staged (`delivery: "staged"`, C-DLV-6) says so in parentheses.
 *
 * @category rendering
 * @since 0.1.0
 */
export const sentText = (
  verb: "Message" | "Reply",
  to: string,
  delivery: Delivery["delivery"],
  threadId?: string
): string =>
  delivery === "staged"
    ? `${verb} queued for ${to} (replace mode, thread "${
      threadId ?? ""
    }": only the latest message of the thread is delivered, once the coalescing window closes)`
    : delivery === "queued"
    ? `${verb} queued for ${to}`
    : `${verb} sent to ${to}`

/**
 * What `sentText` is followed by for a message the broker's record says was
 * delivered before the connection was lost (`DeliveredBeforeLoss`).
 *
 * @category rendering
 * @since 0.1.0
 */
export const DELIVERED_BEFORE_LOSS_NOTE =
  " (delivered before the connection to the broker was lost: the broker's record says that session has it, so it " +
  "was not sent again)"

/**
 * The delivery a send ends on when the broker's record says its first write
 * arrived at the session `to` resolves to now (`DeliveredBeforeLoss`): the
 * answer that broker gives a re-send from its record when the target has not
 * changed (P46, `delivered`). `send`, `reply`, a `progress_update` and an
 * ask to a busy peer end on it; an ask that waits does not (it ends on the
 * error, `askEndedOn`).
 *
 * @category constructors
 * @since 0.1.0
 */
export const deliveredBeforeLoss = (messageId: string): Delivery => ({ messageId, delivery: "socket_delivered" })

/**
 * The client request fields of a delivery choice: none for the default `steer`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const deliveryFields = (choice: DeliveryChoice | undefined): Pick<SendRequest, "delivery" | "queueMode" | "threadId"> =>
  choice === undefined || isDefaultDelivery(choice)
    ? {}
    : {
      delivery: choice.delivery,
      ...(choice.queueMode === undefined ? {} : { queueMode: choice.queueMode }),
      ...(choice.threadId === undefined ? {} : { threadId: choice.threadId })
    }

/** What a send carries besides its target and message. */
type SendExtra = Pick<SendRequest, "askTimeoutMs" | "askSince" | "delivery" | "queueMode" | "threadId">

/**
 * A resend after `E_TARGET_REBOUND`: the session the message now goes to, and
 * the client's `presenceMark` taken just before it goes (C-ASK-9: a departure
 * read before it is not one of the incarnation that gets the message).
 *
 * @category models
 * @since 0.1.0
 */
export interface Resend {
  readonly target: SessionInfo
  readonly mark: number
}

/**
 * The outgoing operations of one generation (see the module header).
 *
 * @category models
 * @since 0.1.0
 */
export interface Sending {
  /**
   * Sends to a locally resolved target (epoch-bound when the broker offers
   * `exact-send-v1`; after `E_TARGET_REBOUND` it re-lists once and resends
   * with the same message id, P47; a re-list left unanswered ends on the
   * rebound, `NotDelivered` — `DeliveryUnknown` when the rebound came after
   * the message was lost with a connection, `TargetRebound.afterLoss`; so
   * does a re-list that no longer finds the target), or to the raw string when nothing
   * resolved (C-TGT-7: the broker answers). An ask passes its timeout as
   * `askTimeoutMs`, so a broker with `ask-timeout-v1` keeps the ask open as
   * long as the asker waits, and `onResend`, which hears, just before the
   * resend, the session the message now goes to and the client's
   * `presenceMark` taken then: an ask's wait is on that incarnation (C-ASK-9).
   */
  readonly deliver: (
    kind: NotDelivered["kind"],
    to: string,
    message: Message,
    target: SessionInfo | undefined,
    options?: {
      readonly askTimeoutMs?: number | undefined
      /** When the ask was first sent: every write carries its timeout less the time since (`SendRequest.askSince`). */
      readonly askSince?: number | undefined
      readonly delivery?: DeliveryChoice | undefined
      readonly onResend?: ((resend: Resend) => Effect.Effect<void>) | undefined
      /**
       * What a `send` (the first, or the resend after `E_TARGET_REBOUND`) whose acknowledgement was not
       * read within the client's send timeout ends on instead of that timeout: an ask settles with the
       * broker and ends on its verdict (Ask.ts `settleUnacknowledged`), a refusal then judged as one read
       * in time (a rebound re-lists and resends). By default the timeout (`DeliveryUnknown`).
       */
      readonly unacknowledged?: ((timeout: RequestTimeout) => Effect.Effect<Delivery, SendError>) | undefined
    }
  ) => Effect.Effect<Delivery, SelfTargetRefused | NotDelivered | DeliveryUnknown | DeliveredBeforeLoss | ClientFailure>
  /** Lists and resolves `to` for send/ask (C-TGT); `undefined` when nothing matched. */
  readonly resolveForSend: (
    to: string
  ) => Effect.Effect<SessionInfo | undefined, SelfTargetRefused | TargetUnresolved | TargetLookupUnanswered | ClientFailure>
  /**
   * `send` while the generation is open (C-ORD-35): it fails with
   * `SessionEnded`, sending nothing, when the generation has closed, and a
   * close while it waits (in the client, for a connection, say) interrupts it
   * and fails the same way, so nothing after it is recorded or returned. For
   * `send` and `reply`; an ask's send races the slot itself (`untilSent`).
   */
  readonly whileOpen: <A, E>(send: Effect.Effect<A, E>) => Effect.Effect<A, E | SessionEnded>
  /** The `intercom_sent` history record of a message that went out (C-TOOL-8); also republishes health (C-HLT-8). */
  readonly recordSent: (to: string, message: Message) => Effect.Effect<void>
}

/**
 * The outgoing operations over a generation's client.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeSending = (generation: Generation): Sending => {
  const { client, selfId } = generation

  const exactRequest = (message: Message, target: SessionInfo, exact: boolean, extra: SendExtra): SendRequest =>
    exact && message.replyTo === undefined && target.endpointEpoch !== undefined
      ? { to: target.id, message, targetId: target.id, targetEpoch: target.endpointEpoch, ...extra }
      : { to: target.id, message, ...extra }

  const deliver: Sending["deliver"] = (kind, to, message, target, options) =>
    Effect.gen(function*() {
      const unacknowledged = options?.unacknowledged
      const sendOnce = (request: SendRequest) =>
        unacknowledged === undefined
          ? client.send(request)
          : client.send(request).pipe(
            Effect.catchIf((error): error is RequestTimeout => error._tag === "RequestTimeout" && error.operation === "send", unacknowledged)
          )
      const extra: SendExtra = {
        ...(options?.askTimeoutMs === undefined ? {} : { askTimeoutMs: options.askTimeoutMs }),
        ...(options?.askSince === undefined ? {} : { askSince: options.askSince }),
        ...deliveryFields(options?.delivery)
      }
      if (target === undefined) {
        return yield* sendOnce({ to, message, ...extra }).pipe(
          Effect.mapError((error) => error._tag === "IntercomNotConnected" ? error : notDelivered(kind, to)(error))
        )
      }
      const exact = (yield* client.status).features.includes(EXACT_SEND_V1)
      return yield* sendOnce(exactRequest(message, target, exact, extra)).pipe(
        Effect.catchTag("TargetRebound", (rebound) =>
          Effect.gen(function*() {
            // A re-list the broker does not answer leaves the rebound standing: when it answered the first write the
            // question went nowhere, so it is not delivered (E_TARGET_REBOUND). One read after the question was lost
            // with a connection answered a re-send, and the first write may have been delivered: "maybe delivered"
            // (the list's own timeout, DeliveryUnknown; review revas AS2).
            const sessions = yield* client.list.pipe(
              Effect.catchTag("RequestTimeout", (timeout) => Effect.fail(rebound.afterLoss === true ? timeout : rebound))
            )
            const again = resolveTarget(sessions, to)
            // The target gone from the list: nothing is sent again. After a loss the first write, lost with its
            // connection unacknowledged, may have been delivered: "maybe delivered", as for that loss itself.
            if (again._tag !== "Found") {
              return yield* Effect.fail(
                rebound.afterLoss === true ? new ConnectionLost({ operation: "send", messageId: message.id }) : rebound
              )
            }
            if (again.session.id === selfId) return yield* new SelfTargetRefused()
            const onResend = options?.onResend
            if (onResend !== undefined) yield* onResend({ target: again.session, mark: yield* client.presenceMark })
            return yield* sendOnce(exactRequest(message, again.session, exact, extra))
          })),
        Effect.mapError((error) =>
          error._tag === "IntercomNotConnected" || error._tag === "SelfTargetRefused"
            ? error
            : notDelivered(kind, to)(error)
        )
      )
    })

  /** The sessions to resolve `to` among; a lookup the broker did not answer means nothing was sent. */
  const lookUp = (to: string) =>
    client.list.pipe(Effect.catchTag("RequestTimeout", (timeout) => Effect.fail(new TargetLookupUnanswered({ to, timeout }))))

  const resolveForSend: Sending["resolveForSend"] = (to) =>
    Effect.gen(function*() {
      const sessions = yield* lookUp(to)
      const resolution = resolveTarget(sessions, to)
      switch (resolution._tag) {
        case "NotFound":
          return undefined
        case "Found":
          if (resolution.session.id === selfId) return yield* new SelfTargetRefused()
          return resolution.session
        default:
          return yield* new TargetUnresolved({ target: to, reason: resolutionFailure(to, resolution, sessions) })
      }
    })

  // C-HLT-8: every send, ask and reply goes through here, and republishes this session's health.
  const recordSent: Sending["recordSent"] = (to, message) =>
    Effect.andThen(generation.noteActivity, generation.record({
      _tag: "intercom_sent",
      to,
      message: {
        text: message.content.text,
        attachments: message.content.attachments,
        replyTo: message.replyTo
      },
      messageId: message.id,
      timestamp: message.timestamp
    }))

  const whileOpen: Sending["whileOpen"] = (send) =>
    Effect.suspend(() =>
      generation.slot.ended() === undefined
        ? Effect.raceFirst(send, Effect.mapError(generation.slot.whenEnded, () => new SessionEnded()))
        : Effect.fail(new SessionEnded())
    )

  return { deliver, resolveForSend, whileOpen, recordSent }
}
