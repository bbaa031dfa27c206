/**
 * The non-blocking actions of the `intercom` tool: `list`, `send`, `reply`,
 * `pending` and `status` (C-TOOL, C-RPL). The blocking `ask` has its own
 * module (`Ask.ts`) because it holds the reply-waiter slot.
 *
 * `send` and `reply` come twice: the public ones check their input (for
 * direct callers), the `…Checked` ones take input that `checkOutgoing`
 * already accepted (the tool adapter checks once, then calls these).
 */
import { Clock, Effect } from "effect"
import { DeliveryCode, Reason } from "../protocol/delivery.ts"
import { HEALTH_V1 } from "../protocol/features.ts"
import type { Attachment } from "../protocol/frames.ts"
import {
  AskNoLongerOpen,
  InvalidInput,
  NoReplyContext,
  NotDelivered,
  type ReplyFailure,
  SelfNotListed,
  SelfTargetRefused,
  type SendFailure,
  TargetUnresolved
} from "./errors.ts"
import type { Generation } from "./Generation.ts"
import type { IntercomSessionService, ReplyRequest, SendDeclined, SendRequest, Sent } from "./IntercomSession.ts"
import { inScope, type ListScope } from "./project.ts"
import { formatAttachments, renderPending, renderSessionList, renderStatus } from "./render.ts"
import {
  DELIVERED_BEFORE_LOSS_NOTE,
  deliveredBeforeLoss,
  deliveryFields,
  newMessage,
  notDelivered,
  type Sending,
  sentText
} from "./Sending.ts"
import { checkDeliveryChoice, checkOutgoing, checkReplyError, replyBody } from "./validation.ts"

/**
 * The non-blocking actions of one generation (see the module header).
 *
 * @category models
 * @since 0.1.0
 */
export interface Actions {
  /** `list` showing the sessions of a scope (C-TOOL-16). */
  readonly listIn: (scope: ListScope) => IntercomSessionService["list"]
  readonly send: IntercomSessionService["send"]
  /** `send` for a request whose fields `checkOutgoing` accepted, with the attachments it returned. */
  readonly sendChecked: (
    request: SendRequest,
    attachments: ReadonlyArray<Attachment> | undefined
  ) => Effect.Effect<Sent | SendDeclined, SendFailure>
  readonly reply: IntercomSessionService["reply"]
  /** `reply` for a request whose fields `checkOutgoing` accepted, with the attachments it returned. */
  readonly replyChecked: (
    request: ReplyRequest,
    attachments: ReadonlyArray<Attachment> | undefined
  ) => Effect.Effect<Sent, ReplyFailure>
  readonly pending: IntercomSessionService["pending"]
  /** `status` counting the sessions of a scope (C-TOOL-16). */
  readonly statusIn: (scope: ListScope) => IntercomSessionService["status"]
}

/** Why a reply found no session: the words after the broker's "Session not found". */
const ASKER_GONE = "the asker is no longer connected and the broker keeps no mail for it (a one-shot " +
  "`intercom ask` that has ended, say); if it comes back, send the answer again"

/**
 * The non-blocking actions over a generation and its outgoing path.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeActions = (generation: Generation, sending: Sending): Actions => {
  const { client, connect, host, selfId, settings, tracker } = generation

  /** The clock to age health timestamps by, when the broker granted `health-v1` (rows show health, C-HLT-1). */
  const healthNow = Effect.gen(function*() {
    const granted = (yield* client.status).features.includes(HEALTH_V1)
    return granted ? yield* Clock.currentTimeMillis : undefined
  })

  const listIn: Actions["listIn"] = (scope) =>
    Effect.gen(function*() {
      yield* connect
      const sessions = yield* client.list
      const self = sessions.find((session) => session.id === selfId)
      if (self === undefined) return yield* new SelfNotListed()
      const shown = inScope(scope, self, sessions)
      const now = yield* healthNow
      return {
        self,
        sessions: shown,
        group: client.group,
        text: renderSessionList(self, sessions, shown, client.group, now)
      }
    })

  const sendChecked: Actions["sendChecked"] = (request, attachments) =>
    Effect.gen(function*() {
      // C-DLV-2…4: a refused delivery combination sends nothing.
      const choice = yield* checkDeliveryChoice(request, "send")
      yield* connect
      const target = yield* sending.resolveForSend(request.to)
      const now = yield* Clock.currentTimeMillis
      // P66: a plain send to the one peer whose single live ask is pending here answers that ask.
      const threaded = request.replyTo === undefined && target !== undefined
        ? tracker.autoThread(request.to, target.id, now)
        : undefined
      if (settings.confirmSend && host.hasUI && request.replyTo === undefined && threaded === undefined) {
        const confirmed = yield* host.confirm({
          title: "Send Message",
          text: `Send to "${request.to}":\n\n${request.message}${formatAttachments(attachments)}`
        })
        if (!confirmed) return { _tag: "Declined", text: "Message cancelled by user" } satisfies SendDeclined
      }
      const sendAs = (replyTo: string | undefined) =>
        Effect.flatMap(
          newMessage(request.message, attachments, { replyTo }),
          (message) =>
            sending.deliver("Message", request.to, message, target, { delivery: choice }).pipe(
              Effect.map((delivery) => ({ message, delivery, beforeLoss: false })),
              // The broker's record says it arrived at the session `to` resolves to now: sent (task here).
              Effect.catchTag("DeliveredBeforeLoss", () =>
                Effect.succeed({ message, delivery: deliveredBeforeLoss(message.id), beforeLoss: true }))
            )
        )
      // C-ORD-35: a generation that closes while the message waits in the client ends the send: nothing
      // after it is recorded or returned (`whileOpen`).
      const { message, delivery, beforeLoss } = yield* sending.whileOpen(
        threaded === undefined
          ? sendAs(request.replyTo)
          : sendAs(threaded.message.id).pipe(
            // The broker holds no open ask of that id (answered, expired or withdrawn there): the ask is closed, not
            // answered by this send, which stays plain. Refused for another reason (`replyWrongAsk`, `replyAskerLeft`),
            // the ask is still open there: it stays pending, and the send stays plain.
            Effect.catchIf(
              (error) => error._tag === "NotDelivered" && error.code === DeliveryCode.ReplyTarget,
              (error) =>
                Effect.andThen(
                  Effect.sync(() => {
                    if (error._tag === "NotDelivered" && error.reason === Reason.replyNoAsk) tracker.askClosed(threaded)
                  }),
                  sendAs(undefined)
                )
            )
          )
      )
      // Marked before `recordSent` republishes health, so `pendingAsks` already counts it answered.
      if (message.replyTo !== undefined) {
        // The asker is the resolved target; unresolved here (the broker took the name), the sender `to` names
        // of the asks of that id, if exactly one is found: asks are told apart by asker and id.
        const named = target === undefined ? tracker.resolve({ to: request.to, replyTo: message.replyTo }, now) : undefined
        const asker = target?.id ?? (named === undefined || named instanceof Error ? undefined : named.from.id)
        if (asker !== undefined) {
          tracker.markReplied(asker, message.replyTo, delivery.delivery === "staged" ? message.id : undefined)
        }
      }
      yield* sending.recordSent(request.to, message)
      return {
        _tag: "Sent",
        to: request.to,
        targetId: target?.id,
        messageId: message.id,
        delivery: delivery.delivery,
        threadId: delivery.threadId,
        replyTo: message.replyTo,
        text: sentText("Message", request.to, delivery.delivery, delivery.threadId) +
          (beforeLoss ? DELIVERED_BEFORE_LOSS_NOTE : ""),
        ...(beforeLoss ? { deliveredBeforeLoss: true } : {})
      } satisfies Sent
    })

  const replyChecked: Actions["replyChecked"] = (request, attachments) =>
    Effect.gen(function*() {
      const choice = yield* checkDeliveryChoice(request, "reply")
      yield* connect
      const now = yield* Clock.currentTimeMillis
      const context = tracker.resolve({ to: request.to, replyTo: request.replyTo }, now)
      if (context instanceof NoReplyContext || context instanceof TargetUnresolved || context instanceof AskNoLongerOpen) {
        return yield* Effect.fail(context)
      }
      if (context.from.id === selfId) return yield* new SelfTargetRefused()
      const display = context.from.name?.trim() || context.from.id
      // The broker accepts `replyTo` only for an open ask (P62); an answer to a
      // plain message in its triggered turn goes to the same sender, unthreaded.
      const replyTo = context.message.expectsReply === true ? context.message.id : undefined
      const { replyError } = request
      if (replyError !== undefined && replyTo === undefined) {
        return yield* new InvalidInput({
          reason: `replyError answers an ask, and the message from ${display} is not one (it expects no reply); send a plain reply instead`
        })
      }
      const message = yield* newMessage(request.message, attachments, { replyTo })
      // C-ORD-35, as for `send`: the generation's close ends the reply's send (`whileOpen`).
      const send = sending.whileOpen(client.send({
        to: context.from.id,
        message,
        ...deliveryFields(choice),
        ...(replyError === undefined ? {} : { replyError })
      }))
      // A reply to a traced message joins its trace, under the message's receive span (InboundTracing.ts).
      const { delivery, beforeLoss } = yield* (context.trace === undefined ? send : Effect.withParentSpan(send, context.trace)).pipe(
        Effect.tapError((error) => {
          // P62: the broker holds no open ask for it (withdrawn, expired, or lost with a memory-mode
          // broker's restart): nobody waits for this answer, so `pending` stops offering it. Closed, not
          // answered: a later reply to it is refused here, saying so.
          if (error._tag !== "ReplyTargetMismatch" || error.reason !== Reason.replyNoAsk) return Effect.void
          tracker.askClosed(context)
          return generation.pendingChanged
        }),
        Effect.mapError((error) => {
          if (error._tag === "IntercomNotConnected" || error._tag === "SessionEnded") return error
          // The asker no longer waits: say so and what to do, not only the broker's words.
          if (error._tag === "ReplyTargetMismatch" && error.reason === Reason.replyNoAsk && replyTo !== undefined) {
            return new AskNoLongerOpen({ to: display, askId: replyTo, code: error.code })
          }
          // The asker is neither connected nor remembered: say what that means for a reply.
          if (error._tag === "TargetNotFound") {
            return new NotDelivered({ kind: "Reply", to: display, reason: `${error.reason}: ${ASKER_GONE}`, code: error.code })
          }
          return notDelivered("Reply", display)(error)
        }),
        Effect.map((delivery) => ({ delivery, beforeLoss: false })),
        // The broker's record says it arrived at the asker as `to` resolves now: sent, as for `send` (task here).
        Effect.catchTag("DeliveredBeforeLoss", () =>
          Effect.succeed({ delivery: deliveredBeforeLoss(message.id), beforeLoss: true }))
      )
      // A staged answer (replace) that a later message of the thread replaces reopens the ask (InboundControls.ts).
      tracker.markReplied(context.from.id, context.message.id, delivery.delivery === "staged" ? message.id : undefined)
      yield* sending.recordSent(display, message)
      return {
        _tag: "Sent",
        to: display,
        targetId: context.from.id,
        messageId: message.id,
        delivery: delivery.delivery,
        threadId: delivery.threadId,
        replyTo: context.message.id,
        text: sentText("Reply", display, delivery.delivery, delivery.threadId) + (beforeLoss ? DELIVERED_BEFORE_LOSS_NOTE : ""),
        ...(beforeLoss ? { deliveredBeforeLoss: true } : {})
      } satisfies Sent
    })

  const pending: Actions["pending"] = Effect.gen(function*() {
    yield* connect
    const now = yield* Clock.currentTimeMillis
    const asks = tracker.pending(now)
    return { asks, text: renderPending(asks, now, settings.replyCall) }
  })

  const statusIn: Actions["statusIn"] = (scope) =>
    Effect.gen(function*() {
      yield* connect
      const sessions = yield* client.list
      const self = sessions.find((session) => session.id === selfId)
      const shown = self === undefined ? sessions : inScope(scope, self, sessions)
      const base = renderStatus(selfId, shown.length, client.group)
      // With `health-v1`: the same rows as `list`, with health tags and guidance (C-HLT-1).
      const now = yield* healthNow
      return {
        sessionId: selfId,
        group: client.group,
        activeSessions: shown.length,
        text: now === undefined || self === undefined
          ? base
          : `${base}\n\n${renderSessionList(self, sessions, shown, client.group, now)}`
      }
    })

  return {
    listIn,
    send: (request) => Effect.flatMap(checkOutgoing(request, true), (attachments) => sendChecked(request, attachments)),
    sendChecked,
    reply: (request) => {
      const invalid = checkReplyError(request.replyError)
      if (invalid !== undefined) return Effect.fail(invalid)
      const checked = { ...request, message: replyBody(request.message, request.replyError) ?? "" }
      return Effect.flatMap(checkOutgoing(checked, false), (attachments) => replyChecked(checked, attachments))
    },
    replyChecked,
    pending,
    statusIn
  }
}
