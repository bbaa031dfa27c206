/**
 * The child side of the supervisor channel: `contact_supervisor` (C-SUP-1…5,
 * C-INT-7). It exists only in a delegated child whose bridge metadata is
 * complete and that holds a supervisor grant (`readChildBridge`); the wiring
 * builds it then, and leaves it out otherwise.
 *
 * - `need_decision` and `interview_request` take the session's single
 *   reply-waiter slot, exactly like `ask` (C-SUP-4, C-ASK-1): a call while an
 *   ask waits — or an ask while one of these waits — is refused with
 *   `Already waiting for a reply`. The question goes out as `supervisor_send`
 *   with `expectsReply` to the supervisor the broker bound this child to
 *   (C-SUP-11, C-SUP-12), and the wait ends on the supervisor's threaded reply,
 *   the session's ask timeout (on the broker's clock where it grants
 *   `ask-expiry-v1`: `awaitAnswer` in Ask.ts), the generation closing or
 *   interruption (then `cancel_ask` goes to the broker, as for `ask`).
 * - `progress_update` is fire-and-forget (C-SUP-3): no waiter, so it runs even
 *   while an ask waits, and its result confirms broker acceptance only.
 *
 * The supervisor gets the text of `supervisorMessages.ts` (C-SUP-5) from this
 * child, which registered under its deterministic target (C-SUP-6). For an
 * interview the reply is parsed (`interviewReply.ts`): the visible text is
 * the raw reply, the structure goes into `details` (C-INT-7).
 *
 * When the broker keeps questions (`questions-v1`), `need_decision` and
 * `interview_request` are durable questions instead (DurableQuestion.ts,
 * C-SUP-18, C-DQ): saved before the supervisor is notified, no ask timeout,
 * and a disconnect does not end the wait. Without it (a memory-only or older
 * broker) they keep the ordinary ask and its timeout (contracts.md open
 * question 2); a timeout is never an approval (C-WKR-15).
 */
import { Clock, Effect, Exit, Result, type Scope } from "effect"
import type { RequestTimeout } from "../client/errors.ts"
import { SUPERVISOR_TO } from "../client/requests.ts"
import { QUESTIONS_V1 } from "../protocol/features.ts"
import type { ContactSupervisorError, ContactSupervisorParams, ContactSupervisorRequest } from "./contactSupervisor.ts"
import { validateContactSupervisor } from "./contactSupervisor.ts"
import { awaitAnswer, cancelWait, settleUnacknowledged, settleUnwritten, untilSent } from "./Ask.ts"
import { AlreadyWaiting, askEndedOn, type AskFailure, ReplyFailed, ReplyTimeout } from "./errors.ts"
import type { Generation } from "./Generation.ts"
import { interviewReplyDetails, parseInterviewReply } from "./interviewReply.ts"
import type { ToolResult } from "./models.ts"
import type { InboundMessage } from "../client/events.ts"
import { messageBody, receivedText } from "./render.ts"
import type { Waiter } from "./ReplyWaiter.ts"
import { DELIVERED_BEFORE_LOSS_NOTE, deliveredBeforeLoss, newMessage, notDelivered, type Sending } from "./Sending.ts"
import { type ChildBridge, childSessionName, type SupervisorGrant } from "./supervisorBridge.ts"
import { supervisorMessage } from "./supervisorMessages.ts"
import { checkText } from "./validation.ts"
import { type DurableAnswer, type DurableWaitError, waitDurably } from "./DurableQuestion.ts"


/**
 * A delegated child's bridge metadata together with its grant: what makes
 * `contact_supervisor` available (C-SUP-1).
 *
 * @category models
 * @since 0.1.0
 */
export type GrantedChildBridge = ChildBridge & { readonly grant: SupervisorGrant }

/**
 * Whether a bridge (from `readChildBridge`) is complete and carries a grant:
 * the condition for `contact_supervisor` to exist.
 *
 * @example
 * ```ts
 * import { hasSupervisorGrant, readChildBridge } from "effect-intercom/session"
 *
 * const bridge = readChildBridge(process.env)
 * if (hasSupervisorGrant(bridge)) {
 *   // register contact_supervisor; start the client with supervisorGrant: bridge.grant
 * }
 * ```
 *
 * @category supervisor
 * @since 0.1.0
 */
export const hasSupervisorGrant = (bridge: ChildBridge | undefined): bridge is GrantedChildBridge =>
  bridge !== undefined && bridge.grant !== undefined

/**
 * Why a `contact_supervisor` call failed: its parameters (C-SUP-2, C-INT-1…3),
 * a control character in the text, or what fails an `ask` (the slot is taken,
 * not delivered, no reply in time, the generation ended, …).
 *
 * @category errors
 * @since 0.1.0
 */
export type SupervisorContactError = ContactSupervisorError | AskFailure | DurableWaitError

/**
 * The `contact_supervisor` operation of one generation.
 *
 * @category models
 * @since 0.1.0
 */
export interface SupervisorContact {
  /** The bridge it was built from. */
  readonly bridge: GrantedChildBridge
  /**
   * The whole tool in one call: checks the parameters, sends, waits for a
   * blocking reason, renders. Never fails: an error is a result with `isError`.
   */
  readonly contact: (params: ContactSupervisorParams) => Effect.Effect<ToolResult>
}

/**
 * The error result of a failed call: its message verbatim, its kind, the
 * broker's code if any, and for a failure reply the reply's id and sender, so
 * a host's history names the reply it holds (`InboundJournal.handled`).
 */
const failureResult = (error: SupervisorContactError): ToolResult => ({
  text: error.message,
  isError: true,
  details: {
    error: error._tag,
    ...(error._tag === "NotDelivered" && error.code !== undefined ? { code: error.code } : {}),
    ...(error._tag === "ReplyFailed" ? { replyId: error.reply.id, from: error.fromId } : {})
  }
})

/**
 * `contact_supervisor` over a generation, for a child with a granted bridge.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeSupervisorContact = (
  generation: Generation,
  sending: Sending,
  bridge: GrantedChildBridge
): SupervisorContact => {
  const { client, connect, slot } = generation
  /** How the supervisor is named in texts: as the child's metadata names it. */
  const display = bridge.supervisorTarget
  /** C-SUP-5: the child's own intercom name is always shown: the name it registered under. */
  const sender = { runId: bridge.runId, agent: bridge.agent, index: bridge.index, sessionName: childSessionName(bridge) }

  /** The id the broker bound this child to (C-SUP-11), else the one in its grant. */
  const supervisorId = Effect.map(
    client.status,
    (status) => status.supervisorSessionId ?? bridge.grant.supervisorSessionId
  )

  const sendFailed = notDelivered("Message", display)

  const progress = (text: string): Effect.Effect<ToolResult, AskFailure> =>
    Effect.gen(function*() {
      yield* connect
      const message = yield* newMessage(text, undefined, {})
      const { delivery, beforeLoss } = yield* client.supervisorSend({ message }).pipe(
        Effect.mapError((error) => error._tag === "IntercomNotConnected" ? error : sendFailed(error)),
        Effect.map((delivery) => ({ delivery, beforeLoss: false })),
        // The broker's record says the supervisor has it: sent, as for `send` (task here).
        Effect.catchTag("DeliveredBeforeLoss", () =>
          Effect.succeed({ delivery: deliveredBeforeLoss(message.id), beforeLoss: true }))
      )
      yield* sending.recordSent(display, message)
      const queued = delivery.delivery === "queued"
      return {
        text: (queued ? `Progress update queued for supervisor ${display}` : `Progress update sent to supervisor ${display}`) +
          (beforeLoss ? DELIVERED_BEFORE_LOSS_NOTE : ""),
        isError: false,
        details: {
          reason: "progress_update",
          messageId: message.id,
          delivered: !queued,
          queued,
          ...(beforeLoss ? { deliveredBeforeLoss: true } : {})
        }
      }
    })

  /** The structured part of an interview's answer (C-INT-7), none for a decision. */
  const structuredOf = (request: ContactSupervisorRequest, answer: string) =>
    request.reason === "interview_request" ? interviewReplyDetails(parseInterviewReply(answer, request.interview)) : {}

  /** A durable question (C-SUP-18, C-DQ): asked through the broker's store, no ask timeout. */
  const durably = (
    held: { current: Waiter },
    request: ContactSupervisorRequest,
    reason: "need_decision" | "interview_request",
    text: string
  ): Effect.Effect<ToolResult, AskFailure | DurableWaitError> =>
    Effect.gen(function*() {
      const targetId = yield* supervisorId
      const message = yield* newMessage(text, undefined, { expectsReply: true })
      const answer: DurableAnswer = yield* waitDurably(
        generation,
        held,
        { questionId: message.id, reason, message, targetId },
        sending.recordSent(display, message)
      )
      if (answer._tag === "Reply") return yield* rendered(request, message.id, answer.reply, true)
      yield* generation.record({
        _tag: "intercom_received",
        from: display,
        message: { text: answer.answer, attachments: undefined },
        messageId: message.id,
        timestamp: answer.answeredAt
      })
      return {
        text: answer.answer,
        isError: false,
        details: {
          reason: request.reason,
          messageId: message.id,
          questionId: message.id,
          durable: true,
          from: targetId,
          answeredAt: answer.answeredAt,
          ...structuredOf(request, answer.answer)
        }
      }
    })

  /** The tool result of a supervisor's reply (recorded in the history). */
  const rendered = (
    request: ContactSupervisorRequest,
    messageId: string,
    answer: InboundMessage,
    durable: boolean
  ): Effect.Effect<ToolResult, ReplyFailed> =>
    Effect.gen(function*() {
      yield* generation.record({
        _tag: "intercom_received",
        from: display,
        message: { text: receivedText(answer), attachments: answer.message.content.attachments },
        messageId: answer.message.id,
        timestamp: answer.message.timestamp
      })
      // C-ASK-7, as for `ask`: the supervisor's correlated failure ends the wait as an error.
      if (answer.replyError !== undefined) {
        return yield* new ReplyFailed({
          target: display,
          fromId: answer.from.id,
          reply: answer.message,
          reason: answer.replyError
        })
      }
      return {
        // C-INT-7: the visible text is the raw reply, for every reason.
        text: messageBody(answer.message),
        isError: false,
        details: {
          reason: request.reason,
          messageId,
          replyId: answer.message.id,
          from: answer.from.id,
          ...(durable ? { questionId: messageId, durable: true } : {}),
          ...structuredOf(request, answer.message.content.text)
        }
      }
    })

  /** The part of a blocking call that runs while it holds the slot. */
  const holding = (
    held: { current: Waiter },
    request: ContactSupervisorRequest,
    text: string
  ): Effect.Effect<ToolResult, AskFailure | DurableWaitError, Scope.Scope> =>
    Effect.gen(function*() {
      const timeoutMs = generation.settings.askTimeoutMs
      yield* connect
      const status = yield* client.status
      const reason = request.reason
      if (reason !== "progress_update" && status.features.includes(QUESTIONS_V1)) {
        return yield* durably(held, request, reason, text)
      }
      const targetId = yield* supervisorId
      const message = yield* newMessage(text, undefined, { expectsReply: true })
      // Watched from before the question goes out: the broker's notice that it expired (`awaitAnswer`).
      const expiry = yield* client.askExpiry(message.id)
      // As for `ask` (`settleUnacknowledged`); watched under the `to` the client notes an acknowledgement read in
      // time under (`supervisorSend`), so one read late is noted in the broker's state alike (review revap AP4).
      const verdict = yield* client.lateVerdict({ to: SUPERVISOR_TO, message })
      const sentMark = yield* client.presenceMark // C-ASK-9, as for `ask`
      // C-ORD-35, as for `ask`: the generation closed while this call waited (on `connect`, say, through a
      // reconnect): its teardown already failed this wait, so the call ends now and nothing is sent. Checked
      // in the same synchronous step as the `bind` below, so no close can come in between.
      const ended = slot.ended()
      if (ended !== undefined) return yield* ended
      const bound = slot.bind(held.current, { questionId: message.id, targetId, targetName: undefined, sentMark })
      const cancelAsk = cancelWait(generation, bound, message.id)
      // C-ORD-35, as for `ask`: the generation's close ends the wait for the acknowledgement too, so a send
      // still waiting in the client goes nowhere and nothing is recorded; the edge is cancelled (`untilSent`).
      const delivery = yield* untilSent(
        generation,
        bound,
        message.id,
        client.supervisorSend({ message, askTimeoutMs: timeoutMs, askSince: yield* Clock.currentTimeMillis }).pipe(
          // As for `ask`: its acknowledgement not read within the send timeout, settled with the broker
          // and ended on its verdict — a refusal or a `queued` read late too (`settleUnacknowledged`).
          Effect.catchIf(
            (error): error is RequestTimeout => error._tag === "RequestTimeout" && error.operation === "send",
            settleUnacknowledged(generation, bound, message.id, verdict)
          ),
          Effect.mapError((error) => error._tag === "IntercomNotConnected" ? error : askEndedOn(sendFailed(error))),
          // As for `ask`: its timeout ran out before a reconnect could write it again (`settleUnwritten`).
          Effect.catch(settleUnwritten(generation, bound, message.id, () => new ReplyTimeout({ target: display, timeoutMs })))
        )
      )
      yield* sending.recordSent(display, message)
      if (delivery.delivery === "queued") {
        // Like a queued ask: the broker holds it for the supervisor; nothing waits here.
        return {
          text: `Message queued for ${display}`,
          isError: false,
          details: { reason: request.reason, messageId: message.id, delivered: false, queued: true }
        }
      }
      // The timeout from the first send, as for `ask`: a resend after a reconnect carried what was left of it.
      const answer = yield* awaitAnswer(
        generation,
        bound,
        expiry,
        delivery.askTimeoutMs ?? timeoutMs,
        () => new ReplyTimeout({ target: display, timeoutMs })
      ).pipe(
        Effect.onExit((exit) => Exit.isSuccess(exit) ? Effect.void : cancelAsk)
      )
      return yield* rendered(request, message.id, answer, false)
    })

  const blocking = (
    request: ContactSupervisorRequest,
    text: string
  ): Effect.Effect<ToolResult, AskFailure | DurableWaitError> =>
    // C-SUP-4 / C-ASK-1: the same synchronous check-and-set as `ask`, released whatever happens
    // (a durable wait may swap its waiter for a fresh one: the current one is released).
    Effect.acquireUseRelease(
      Effect.sync(() => {
        const waiter = slot.reserve()
        return waiter === undefined ? undefined : { current: waiter }
      }),
      (held) => held === undefined ? Effect.fail(new AlreadyWaiting()) : Effect.scoped(holding(held, request, text)),
      (held) => Effect.sync(() => held === undefined ? undefined : slot.release(held.current))
    )

  const contact = (params: ContactSupervisorParams): Effect.Effect<ToolResult, SupervisorContactError> =>
    Effect.gen(function*() {
      const checked = validateContactSupervisor(params)
      if (Result.isFailure(checked)) return yield* Effect.fail(checked.failure)
      const request = checked.success
      const text = supervisorMessage(request, sender)
      const invalid = checkText("message", text)
      if (invalid !== undefined) return yield* Effect.fail(invalid)
      return yield* request.reason === "progress_update" ? progress(text) : blocking(request, text)
    })

  return {
    bridge,
    contact: (params) => contact(params).pipe(Effect.catch((error) => Effect.succeed(failureResult(error))))
  }
}
