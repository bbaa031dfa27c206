/**
 * Size: about 570 lines, over a third of them comments; one concept (one
 * ask's wait: `awaitAnswer` and `untilSent`, shared with a blocking
 * `contact_supervisor`, and the blocking ask over them).
 *
 * The blocking `ask` (C-ASK): reserve the single reply-waiter slot, send the
 * question, wait for the one reply that answers it, and release the slot
 * whatever happens.
 *
 * The slot itself (`ReplyWaiter.ts`) decides which inbound message is the
 * reply; the inbound handling routes to it before anything else (C-ORD-32).
 * What this module owns is the lifetime of one wait: the timeout, and the
 * `cancel_ask` that tells the broker to forget the ask edge when the wait
 * ends without an answer (timeout, departed peer, generation close,
 * interruption).
 *
 * The timeout is the broker's when it grants `ask-expiry-v1` (`awaitAnswer`):
 * the broker closes the ask's edge at its deadline, counted from when it
 * received the ask, and writes `ask_expired` to the asker behind any reply
 * it accepted before. The wait ends on that notice (`ReplyTimeout`, C-ASK-5),
 * so a reply the broker accepts reaches a wait that still takes it. A timer
 * of the asker's own starts later (when it reads the acknowledgement; for a
 * question written again after a reconnect, it and the broker's run what was
 * left of the timeout since the first send, `SendRequest.askSince`): a
 * reply the broker read in between used to be refused while the asker still
 * waited. That timer still bounds the wait for an asker that cannot hear the
 * broker: at its end the asker makes one round trip that the broker answers
 * behind its verdict, ending on whatever that round trip brings first — on
 * the next connection when the live one drops first or none is live (the
 * client reconnecting), within the client's rejoin grace, since a reply the
 * dropped connection lost unread is given back there first. So the user's
 * timeout is a bound within one round trip, plus the rejoin grace when the
 * broker holds its answer (a reply parked elsewhere; the client keeps a
 * connection that answers its probe and waits on, SettleRoundTrip.ts), or
 * plus the rejoin grace and a further round trip when the connection drops
 * at the deadline (a broker that answers neither the round trip nor the
 * probe after it within the liveness timeout each is dropped). An ask whose
 * whole timeout ran out before a reconnect could write it again is not
 * written (`timedOutUnwritten`); it settles on the new connection at once,
 * since its first write may have reached the broker (`settleUnwritten`),
 * and ends on the reply given back there or in `ReplyTimeout`.
 * An acknowledgement still unread at the user's timeout (the broker's
 * writes to this client slow, the connection live) starts no earlier round
 * trip: its answer would queue behind the same slow writes, and a broker
 * that read the question late has its deadline still to come when it reads
 * that round trip, so ending on an answer alone would refuse a reply it
 * accepts before that deadline (test/session/askAckHeld.test.ts). The
 * wait ends on the verdict the broker wrote behind the acknowledgement (a
 * connection's output is FIFO) — a reply, or `ask_expired` — once the slow
 * writes bring it: the timeout is a bound within that delay. At the
 * client's send timeout the send does not fail (`DeliveryUnknown`): the
 * asker settles (`settleUnacknowledged`), ending on the broker's answer to
 * the send read late (a refusal with its own error, as if read in time;
 * test/session/askLateVerdict.test.ts) or the verdict read behind it, or
 * waiting on as if acknowledged then — bounded by the send timeout, that
 * round trip, the timeout once more and its closing round trip, each round
 * trip up to the rejoin grace when the connection drops or the broker
 * holds its answer (test/session/askAckPastSendTimeout.test.ts). An asker whose
 * connection drops after the acknowledgement was read and before that
 * verdict waits its own timer from the acknowledgement (a reply the drop
 * lost is given back on the next connection; the notice is not).
 * Against a broker without the extension the asker keeps its own timer, as
 * before, and the send timeout ends the ask in `DeliveryUnknown`.
 */
import { Clock, Deferred, Duration, Effect, Exit, Metric, type Scope } from "effect"
import type { IntercomNotConnected, RequestTimeout } from "../client/errors.ts"
import type { LateVerdict } from "../client/LateVerdicts.ts"
import { ASK_TIMED_OUT_UNWRITTEN, type SendError } from "../client/requests.ts"
import type { Delivery, InboundMessage } from "../client/events.ts"
import { isAskTimeoutMs } from "../protocol/constants.ts"
import { ASK_EXPIRY_V1 } from "../protocol/features.ts"
import type { Attachment, Message, SessionInfo } from "../protocol/frames.ts"
import { DeliveryCode, Reason } from "../protocol/delivery.ts"
import type { DeliveryChoice } from "../protocol/deliveryModes.ts"
import {
  AlreadyWaiting,
  askEndedOn,
  type AskFailure,
  InvalidTimeout,
  NotDelivered,
  ReplyFailed,
  ReplyTimeout
} from "./errors.ts"
import type { Generation } from "./Generation.ts"
import { PEER_BUSY_REASON, PEER_BUSY_REASON_CODE, peerBusyText } from "./health.ts"
import type { AskRequest, IntercomSessionService, Replied, Sent } from "./IntercomSession.ts"
import { receivedText, renderReply } from "./render.ts"
import type { WaitEnd, Waiter } from "./ReplyWaiter.ts"
import {
  DELIVERED_BEFORE_LOSS_NOTE,
  deliveredBeforeLoss,
  newMessage,
  type Resend,
  type Sending,
  sentText
} from "./Sending.ts"
import { checkDeliveryChoice, checkOutgoing } from "./validation.ts"

/**
 * Ask round trips, ms: from sending the question to its answer (or
 * correlated failure) arriving, for asks that got one. Updated once per
 * answered ask; exported with the other metrics when OTLP metrics are on.
 *
 * @category metrics
 * @since 0.1.0
 */
export const askRoundTrip: Metric.Histogram<number> = Metric.histogram("intercom_client_ask_round_trip", {
  description: "Blocking ask round trip, from sending the question to its answer arriving",
  boundaries: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000, 600_000],
  attributes: { unit: "ms" }
})

/** How long the `cancel_ask` of an ended wait may take before the wait ends anyway. */
const CANCEL_ASK_BOUND = Duration.seconds(1)

/**
 * Ends a wait that has no answer (timeout, departed peer, generation close,
 * interruption): frees the slot if `waiter` still holds it, then tells the
 * broker to forget the ask edge, bounded by CANCEL_ASK_BOUND. The slot goes
 * first, so a reply that comes while the `cancel_ask` is on its way (a slow
 * socket) is no longer this wait's and reaches the session as any late reply
 * does (docs/testing.md, known issue 13). Run inline, not in the background:
 * when the generation closes its background fibers are interrupted, and a
 * lost `cancel_ask` would let a late reply reach the next generation as a new
 * message (C-ORD-35). Used by `ask` and by a blocking `contact_supervisor`.
 *
 * @category combinators
 * @since 0.1.0
 */
export const cancelWait = (generation: Generation, waiter: Waiter, questionId: string): Effect.Effect<void> =>
  Effect.sync(() => generation.slot.release(waiter)).pipe(
    Effect.andThen(generation.client.cancelAsk(questionId).pipe(Effect.timeout(CANCEL_ASK_BOUND), Effect.ignore))
  )

/**
 * Waits for `waiter`'s outcome — its reply, or how its wait ended — or until
 * this session is taken over by another process (`takeover-v1`), which gets
 * the reply now: then the wait ends at once with the client's error, naming
 * that process and how to take the session back, not at its timeout. Used
 * by `ask`, by a blocking `contact_supervisor` and by a durable question.
 *
 * @category combinators
 * @since 0.1.0
 */
export const awaitOutcome = (
  generation: Generation,
  waiter: Waiter
): Effect.Effect<InboundMessage, WaitEnd | IntercomNotConnected> =>
  Effect.raceFirst(Deferred.await(waiter.outcome), generation.client.whenTakenOver)

/**
 * How far short of a wait's deadline its clock may read when its sleep ends
 * for the wait to sleep the rest (ms): a timer may fire a millisecond or so
 * early against the wall clock the broker reads. A clock stepped back
 * further is not waited out (the wait would grow by the step).
 */
const EARLY_WAKE_MS = 10

/**
 * Sleeps `ms`, then, if the clock still reads a little before `at` (the
 * deadline the sleep was for, `EARLY_WAKE_MS` at most), the rest: so the
 * broker, reading the same clock later, finds every edge of the ask due.
 */
const untilDeadline = (at: number, ms: number): Effect.Effect<void> =>
  Effect.andThen(
    Effect.sleep(Duration.millis(ms)),
    Effect.flatMap(
      Clock.currentTimeMillis,
      (now) => now < at && at - now <= EARLY_WAKE_MS ? Effect.sleep(Duration.millis(at - now)) : Effect.void
    )
  )

/**
 * Waits for the answer to a sent question — its reply, or how its wait
 * ended (`awaitOutcome`) — until it times out with `timedOut`. `expiry` is
 * the client's watch for the broker's notice that the ask expired
 * (`IntercomClient.askExpiry`, taken before the question was sent). Used by
 * `ask` and by a blocking `contact_supervisor`.
 *
 * Against a broker that granted `ask-expiry-v1` the broker's clock decides
 * (its deadline counts from when it received the ask, before this wait
 * starts): the wait times out on its notice, unless the answer was routed
 * while the notice was judged. At the wait's own deadline — `timeoutMs`
 * from now, never earlier than the broker's — it settles the ask itself
 * with one round trip (`settleRoundTrip`), which the broker answers only
 * after closing the edges past their deadline, so the notice or a reply it
 * accepted is read first — an answer with neither means the broker no
 * longer knows the ask (lost, restarted), and the wait times out then. A
 * connection that drops before the answer, or none live while the client
 * reconnects, moves the round trip to the next connection (behind what the
 * broker gives back there), if one comes within the client's rejoin grace;
 * the wait times out when none does (an asker that cannot hear the broker
 * keeps a bound). A broker that holds the answer while it answers the
 * connection's probe is waited for until the rejoin grace runs out; one
 * that answers neither within the liveness timeout has its connection
 * dropped, and the round trip moves on as after a drop.
 * Against a broker without the extension its own timer, from now,
 * ends it.
 *
 * @category combinators
 * @since 0.1.0
 */
export const awaitAnswer = <E>(
  generation: Generation,
  waiter: Waiter,
  expiry: Effect.Effect<void>,
  timeoutMs: number,
  timedOut: () => E
): Effect.Effect<InboundMessage, WaitEnd | IntercomNotConnected | E> =>
  Effect.gen(function*() {
    const outcome = awaitOutcome(generation, waiter)
    if (!(yield* generation.client.status).features.includes(ASK_EXPIRY_V1)) {
      return yield* Effect.timeoutOrElse(outcome, {
        duration: Duration.millis(timeoutMs),
        orElse: () => Effect.fail(timedOut())
      })
    }
    // Everything read before the verdict was routed: an answer routed meanwhile is the answer.
    const judged = Effect.suspend((): Effect.Effect<InboundMessage, WaitEnd | IntercomNotConnected | E> =>
      Deferred.isDoneUnsafe(waiter.outcome) ? outcome : Effect.fail(timedOut())
    )
    const deadline = (yield* Clock.currentTimeMillis) + timeoutMs
    const settled = untilDeadline(deadline, timeoutMs).pipe(Effect.andThen(generation.client.settleRoundTrip), Effect.andThen(judged))
    return yield* Effect.raceFirst(outcome, Effect.raceFirst(Effect.andThen(expiry, judged), settled))
  })

/**
 * Whether a question's send failed only because its client would not write
 * it again after a reconnect, its whole timeout since its first send being up
 * (`ASK_TIMED_OUT_UNWRITTEN`, requests.ts): the ask timed out, and ends in
 * `ReplyTimeout` like one whose wait ran out.
 *
 * @category predicates
 * @since 0.1.0
 */
export const timedOutUnwritten = (error: { readonly _tag: string }): boolean =>
  error instanceof NotDelivered && error.code === DeliveryCode.DeliveryExpired && error.reason === ASK_TIMED_OUT_UNWRITTEN

/**
 * What a question's send ends on when its client would not write it again
 * after a reconnect (`timedOutUnwritten`): its first write may have reached
 * the broker on the dropped connection unacknowledged, and a reply the broker
 * accepted before its deadline is given back first thing on the new
 * connection (the rejoin, or the mailbox's flush at the `register`). So
 * against a broker that granted `ask-expiry-v1` the asker settles there, as
 * at its own deadline (`settleRoundTrip`: the answer comes behind that reply,
 * or behind the notice that the ask expired), and the send ends as answered
 * when the reply was routed meanwhile (sim seed 28741 of `--settle-hold
 * --delivery`: the reply, written to the old connection behind a slow write
 * with the question's acknowledgement, came right behind `registered`, read
 * after the ask had timed out). Otherwise, or without the extension, it
 * fails with `timedOut()`; any other error passes through. Used by `ask` and
 * by a blocking `contact_supervisor`, inside `untilSent`.
 *
 * @category combinators
 * @since 0.1.0
 */
export const settleUnwritten = <E extends { readonly _tag: string }, T>(
  generation: Generation,
  waiter: Waiter,
  questionId: string,
  timedOut: () => T
) =>
(error: E): Effect.Effect<Delivery, E | T> =>
  Effect.gen(function*() {
    if (!timedOutUnwritten(error)) return yield* Effect.fail(error)
    if ((yield* generation.client.status).features.includes(ASK_EXPIRY_V1)) yield* generation.client.settleRoundTrip
    if (Deferred.isDoneUnsafe(waiter.outcome)) return { messageId: questionId, delivery: "socket_delivered" } satisfies Delivery
    return yield* Effect.fail(timedOut())
  })

/**
 * What a question's `send` whose acknowledgement was not read within the
 * client's send timeout ends on, against a broker that granted
 * `ask-expiry-v1` (the client's `RequestTimeout` for it, which it passes
 * through otherwise, as it does when no connection is live: the asker
 * cannot hear the broker's verdict). The asker settles (`settleRoundTrip`),
 * a round trip the broker answers behind everything it wrote before — the
 * acknowledgement or refusal of the question, a reply it accepted, its
 * `ask_expired` for an edge past its deadline — then reads what its client
 * kept of that (`verdict`, `IntercomClientService.lateVerdict`, watched
 * from before the question was sent):
 * - the broker's answer to the send, read after the send timeout: the send
 *   ends on it as if read in time — a refusal fails with its own error (an
 *   `E_TARGET_REBOUND` re-lists and resends, `Sending.deliver`), `queued`
 *   is queued, a delivery is delivered (its client noted it in the broker's
 *   state, as an acknowledgement read in time is);
 * - otherwise the send ends as delivered when the round trip was answered,
 *   its `ask_expired` was read (the broker accepted it), or the reply was
 *   routed meanwhile: the wait goes on as for an acknowledged question
 *   (`awaitAnswer`, its timer from now — the broker read the question, if at
 *   all, before that round trip, so its deadline is no later), and ends on
 *   the `ask_expired` already read (`ReplyTimeout`), on a reply or
 *   `ask_expired` still to come, or at that timer;
 * - and fails with `timeout` (`DeliveryUnknown`) when none of that came (no
 *   connection within the client's rejoin grace).
 * So an ask the broker accepted is not reported "maybe not delivered", nor
 * one it refused as timed out. Bounded by the send timeout, the round trip
 * (up to the liveness timeout, plus the rejoin grace when the connection
 * drops or the broker holds its answer), the ask's timeout once more and
 * its closing round trip (bounded the same way). Given to `Sending.deliver`
 * by `ask`, and used by a blocking `contact_supervisor` for its
 * `supervisor_send`.
 *
 * @category combinators
 * @since 0.1.0
 */
export const settleUnacknowledged = (
  generation: Generation,
  waiter: Waiter,
  questionId: string,
  verdict: Effect.Effect<LateVerdict>
) =>
(timeout: RequestTimeout): Effect.Effect<Delivery, SendError> =>
  Effect.gen(function*() {
    if (!(yield* generation.client.status).features.includes(ASK_EXPIRY_V1)) return yield* Effect.fail(timeout)
    const settled = yield* generation.client.settleRoundTrip
    const read = yield* verdict
    if (read.answer !== undefined) return yield* read.answer
    if (!settled && !read.expired && !Deferred.isDoneUnsafe(waiter.outcome)) return yield* Effect.fail(timeout)
    return { messageId: questionId, delivery: "socket_delivered" } satisfies Delivery
  })

/**
 * Waits for the acknowledgement of a question's `send` (bound to `waiter`),
 * cancelling the ask edge if the wait fails or is interrupted. The answer
 * can come before the acknowledgement (a durable broker delivers before its
 * commit and acknowledges after it): once it is here the question was
 * delivered, and the wait ends with it rather than go on, so that nothing
 * (its generation closing, say) can end the ask with its answer in hand. The
 * generation's close ends the wait too (C-ORD-35), whatever became of the
 * waiter meanwhile (its peer may have left first): a send still waiting in
 * the client, for a connection say, must not go out for a generation that
 * has ended, and its broker edge, if the question was written, is
 * cancelled. The wait's other ends are read after it. Used by `ask` and by a
 * blocking `contact_supervisor`.
 *
 * @category combinators
 * @since 0.1.0
 */
export const untilSent = <E>(
  generation: Generation,
  waiter: Waiter,
  questionId: string,
  send: Effect.Effect<Delivery, E>
): Effect.Effect<Delivery, E | WaitEnd> => {
  const answered: Delivery = { messageId: questionId, delivery: "socket_delivered" }
  return Effect.raceFirst(
    Effect.raceFirst(send, Deferred.await(waiter.outcome).pipe(Effect.as(answered), Effect.catch(() => Effect.never))),
    generation.slot.whenEnded
  ).pipe(
    Effect.onError(() => cancelWait(generation, waiter, questionId))
  )
}

/**
 * The blocking ask of one generation.
 *
 * @category models
 * @since 0.1.0
 */
export interface Asking {
  readonly ask: IntercomSessionService["ask"]
  /** `ask` for a request whose fields `checkOutgoing` accepted, with the attachments it returned. */
  readonly askChecked: (
    request: AskRequest,
    attachments: ReadonlyArray<Attachment> | undefined
  ) => Effect.Effect<Replied | Sent, AskFailure>
}

/**
 * The blocking ask over a generation and its outgoing path.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeAsking = (generation: Generation, sending: Sending): Asking => {
  const { connect, slot } = generation

  /**
   * The ask to a busy peer (C-HLT-5): the question goes out with
   * `expectsReply` (the broker keeps its ask edge, so a later answer is still
   * a reply), and the result says at once that nobody waits for it. The
   * generation's close ends it as it does a waited ask's send (`untilSent`,
   * C-ORD-35): a send still waiting in the client goes nowhere, nothing is
   * recorded, and the edge of a question that was written is cancelled.
   */
  const sendWithoutWaiting = (
    to: string,
    message: Message,
    target: SessionInfo,
    timeoutMs: number
  ): Effect.Effect<Sent, AskFailure> =>
    Effect.gen(function*() {
      let sentTo = target
      const { delivery, beforeLoss } = yield* Effect.raceFirst(
        sending.deliver("Message", to, message, target, {
          askTimeoutMs: timeoutMs,
          onResend: (resend) => Effect.sync(() => { sentTo = resend.target })
        }).pipe(
          Effect.map((delivery) => ({ delivery, beforeLoss: false })),
          // Delivered, by the broker's record, before the loss: sent, as a `send` is — this ask waits for nothing
          // either way (task here).
          Effect.catchTag("DeliveredBeforeLoss", () =>
            Effect.succeed({ delivery: deliveredBeforeLoss(message.id), beforeLoss: true }))
        ),
        slot.whenEnded
      ).pipe(
        Effect.onError(() =>
          slot.ended() === undefined
            ? Effect.void
            : generation.client.cancelAsk(message.id).pipe(Effect.timeout(CANCEL_ASK_BOUND), Effect.ignore)
        )
      )
      yield* sending.recordSent(to, message)
      return {
        _tag: "Sent",
        to,
        targetId: sentTo.id,
        messageId: message.id,
        delivery: delivery.delivery,
        replyTo: undefined,
        text: peerBusyText(to) + (beforeLoss ? DELIVERED_BEFORE_LOSS_NOTE : ""),
        reason: PEER_BUSY_REASON,
        reasonCode: PEER_BUSY_REASON_CODE,
        replied: false,
        ...(beforeLoss ? { deliveredBeforeLoss: true } : {})
      } satisfies Sent
    })

  /** The part of `ask` that runs while this call holds the slot. */
  const askHolding = (
    waiter: Waiter,
    request: AskRequest,
    attachments: ReadonlyArray<Attachment> | undefined,
    timeoutMs: number,
    choice: DeliveryChoice
  ): Effect.Effect<Replied | Sent, AskFailure, Scope.Scope> =>
    Effect.gen(function*() {
      yield* connect
      const target = yield* sending.resolveForSend(request.to)
      // P60: blocking asks are not queued; a target that is not live fails before sending.
      if (target === undefined) {
        return yield* new NotDelivered({ kind: "Message", to: request.to, reason: Reason.targetDisconnected })
      }
      const message = yield* newMessage(request.message, attachments, { expectsReply: true })
      // Watched from before the question goes out: the broker's notice that it expired (`awaitAnswer`), and
      // its verdict on the question read after the send timeout (`settleUnacknowledged`).
      const expiry = yield* generation.client.askExpiry(message.id)
      const verdict = yield* generation.client.lateVerdict({ to: target.id, message })
      // C-ASK-9: a departure of the target read from now on is one of the incarnation that gets the question.
      const sentMark = yield* generation.client.presenceMark
      // C-ORD-35: the generation closed while the target was resolved (its teardown already failed this
      // wait): nothing of it may act after its Scope closed, so the ask ends now and the question is not
      // sent. Checked in the same synchronous step as the `bind` below, so no close can come in between.
      const ended = slot.ended()
      if (ended !== undefined) return yield* ended
      // C-HLT-5, C-HLT-6: a default ask to a target that publishes it cannot take one is sent, not waited for.
      if (request.delivery === undefined && target.acceptsAsks === false) {
        return yield* sendWithoutWaiting(request.to, message, target, timeoutMs)
      }
      const bound = slot.bind(waiter, { questionId: message.id, targetId: target.id, targetName: target.name, sentMark })
      const cancelAsk = cancelWait(generation, bound, message.id)
      const sentAt = yield* Clock.currentTimeMillis
      let sentTo = target
      // C-ASK-9: a question resent after `E_TARGET_REBOUND` goes to the session the name now resolves to;
      // the wait is on that one, and on the departures read from just before the resend on.
      const onResend = (resend: Resend) =>
        Effect.sync(() => {
          sentTo = resend.target
          slot.bind(bound, {
            questionId: message.id,
            targetId: resend.target.id,
            targetName: resend.target.name,
            sentMark: resend.mark
          })
        })
      // Ends on the acknowledgement, on an answer that came first, or on the generation's close (`untilSent`).
      const delivery = yield* untilSent(
        generation,
        bound,
        message.id,
        sending.deliver("Message", request.to, message, target, {
          askTimeoutMs: timeoutMs,
          askSince: sentAt,
          delivery: choice,
          onResend,
          // Its acknowledgement not read within the send timeout: settled with the broker, not given up.
          unacknowledged: settleUnacknowledged(generation, bound, message.id, verdict)
        }).pipe(
          // Its first write delivered, by the broker's record, before the loss: the ask ends on that, as it
          // ended on the loss before, its text saying so and that it no longer waits (`askEndedOn`, task here).
          Effect.mapError(askEndedOn),
          // Its timeout ran out before a reconnect could write it again: timed out, unless the reply the
          // new connection gives back answers it (`settleUnwritten`).
          Effect.catch(settleUnwritten(generation, bound, message.id, () => new ReplyTimeout({ target: request.to, timeoutMs })))
        )
      )
      yield* sending.recordSent(request.to, message)
      if (delivery.delivery === "queued") {
        return {
          _tag: "Sent",
          to: request.to,
          targetId: sentTo.id,
          messageId: message.id,
          delivery: delivery.delivery,
          replyTo: undefined,
          text: sentText("Message", request.to, delivery.delivery)
        } satisfies Sent
      }
      // The timeout from the first send: a question written again after a reconnect carried what was left of it.
      const answer = yield* awaitAnswer(
        generation,
        bound,
        expiry,
        delivery.askTimeoutMs ?? timeoutMs,
        () => new ReplyTimeout({ target: request.to, timeoutMs })
      ).pipe(
        // Timeout, departed peer, takeover, generation close or interruption: the broker forgets the ask edge.
        Effect.onExit((exit) => Exit.isSuccess(exit) ? Effect.void : cancelAsk)
      )
      yield* Metric.update(askRoundTrip, (yield* Clock.currentTimeMillis) - sentAt)
      yield* generation.record({
        _tag: "intercom_received",
        from: request.to,
        message: { text: receivedText(answer), attachments: answer.message.content.attachments },
        messageId: answer.message.id,
        timestamp: answer.message.timestamp
      })
      // C-ASK-7: a correlated failure ends the ask as an error whose text is the destination's.
      if (answer.replyError !== undefined) {
        return yield* new ReplyFailed({
          target: request.to,
          fromId: answer.from.id,
          reply: answer.message,
          reason: answer.replyError
        })
      }
      return {
        _tag: "Replied",
        to: request.to,
        from: answer.from,
        questionId: message.id,
        reply: answer.message,
        text: renderReply(request.to, answer.message)
      } satisfies Replied
    })

  const askChecked: Asking["askChecked"] = (request, attachments) =>
    Effect.gen(function*() {
      // C-ASK-10 and C-DLV-4: checked before the waiter slot is taken; nothing is sent when refused.
      const choice = yield* checkDeliveryChoice(request, "ask")
      const timeoutMs = request.timeoutMs ?? generation.settings.askTimeoutMs
      // Checked here, not left to the broker, which refuses a timeout out of its range as "not delivered".
      if (!isAskTimeoutMs(timeoutMs)) return yield* new InvalidTimeout({ value: timeoutMs })
      // C-ASK-1: the reservation is one synchronous check-and-set, made uninterruptibly
      // together with the release that follows whatever happens to this call.
      return yield* Effect.acquireUseRelease(
        Effect.sync(() => slot.reserve()),
        (waiter) =>
          waiter === undefined
            ? Effect.fail(new AlreadyWaiting())
            : Effect.scoped(askHolding(waiter, request, attachments, timeoutMs, choice)),
        (waiter) => Effect.sync(() => waiter === undefined ? undefined : slot.release(waiter))
      )
    })

  return {
    ask: (request) => Effect.flatMap(checkOutgoing(request, true), (attachments) => askChecked(request, attachments)),
    askChecked
  }
}
