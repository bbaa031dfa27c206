/**
 * The child's durable wait for a blocking `contact_supervisor` question
 * (C-SUP-18, C-DQ-6…9, C-DQ-11, C-WKR-15/16), used when the broker keeps
 * questions (`questions-v1`); otherwise `SupervisorContact` keeps the
 * ordinary ask with its timeout (contracts.md open question 2).
 *
 * - The question is sent with `question_ask`: the broker saves it, then
 *   steers the supervisor. There is no ask timeout.
 * - The wait ends on the supervisor's live reply (routed through the
 *   session's reply-waiter slot), or on the broker's push of a saved answer
 *   (`questionEvents`), or on its cancellation (`QuestionStopped`), or when the
 *   generation ends. A disconnect of the supervisor or of the broker does not
 *   end it: the client asks again after every reconnect, and a Schedule on the
 *   Clock re-asks as a fallback (the broker answers with the saved state).
 * - A failed-turn reply (`replyError`) is recorded and is not an answer
 *   (C-DQ-8); timeout, cancellation and disconnection never read as one (C-WKR-15).
 * - An interrupted wait (the tool call aborted) cancels the question (C-DQ-11).
 * - A wait that ends without an answer (stopped, the generation ended, the
 *   first ask failed) is not asked again after reconnects (`questionDone`).
 *   A first ask whose outcome is unknown (`RequestTimeout`, `ConnectionLost`:
 *   the broker may have saved it) is also cancelled, bounded, as an aborted
 *   wait is: nobody waits for its answer.
 * - A wait whose generation closed before the question was asked (C-ORD-35)
 *   asks nothing and fails with `SessionEnded`; so does one whose first ask
 *   still waits in the client when it closes, and one whose live wait had
 *   just ended without an answer (the supervisor left) when it closed: no
 *   fresh waiter is bound, and nothing is asked again.
 */
import { Data, Deferred, Duration, Effect, Schedule, Stream } from "effect"
import type { InboundMessage, QuestionEvent } from "../client/events.ts"
import type { QuestionError } from "../client/ClientQuestions.ts"
import type { IntercomClientService } from "../client/IntercomClient.ts"
import type { Message } from "../protocol/frames.ts"
import { awaitOutcome } from "./Ask.ts"
import { SessionEnded } from "./errors.ts"
import type { Generation } from "./Generation.ts"
import type { Waiter } from "./ReplyWaiter.ts"

/**
 * How often a waiting child asks the broker again about its saved question,
 * besides after every reconnect: a fallback, never the main path (the broker
 * pushes answers).
 */
export const QUESTION_RECHECK = Duration.seconds(30)

/**
 * How long cancelling a question nobody waits for (an aborted wait, a first
 * ask of unknown outcome) may take before the wait ends anyway.
 */
const STOP_BOUND = Duration.seconds(2)

/** Cancels a question nobody will wait for, bounded; a failure to cancel is ignored. */
const stopBounded = (client: IntercomClientService, questionId: string): Effect.Effect<void> =>
  client.stopQuestion(questionId).pipe(Effect.timeout(STOP_BOUND), Effect.ignore)

/** Whether a failed ask may still have been saved by the broker: the request went out, its answer did not come. */
const mayBeSaved = (error: QuestionError): boolean => error._tag === "RequestTimeout" || error._tag === "ConnectionLost"

/**
 * `Cancelled`: the supervisor stopped the question (C-DQ-6, C-DQ-11). Not an
 * answer and not an approval (C-WKR-15).
 *
 * @category errors
 * @since 0.1.0
 */
export class QuestionStopped extends Data.TaggedError("QuestionStopped")<{ readonly questionId: string }> {
  override get message(): string {
    return `Cancelled: the supervisor stopped question ${this.questionId}. It was not answered; do not treat it as approval`
  }
}

/**
 * How a durable wait ended with an answer: the live reply (with its
 * message), or the answer the broker saved and pushed.
 *
 * @category models
 * @since 0.1.0
 */
export type DurableAnswer =
  | { readonly _tag: "Reply"; readonly reply: InboundMessage }
  | { readonly _tag: "Saved"; readonly answer: string; readonly answeredAt: number }

/**
 * What the durable wait needs from `SupervisorContact`: the question as sent
 * and how to bind a fresh reply waiter after the supervisor went away.
 *
 * @category models
 * @since 0.1.0
 */
export interface DurableQuestion {
  readonly questionId: string
  readonly reason: "need_decision" | "interview_request"
  /** The question's message (its id is the question id). */
  readonly message: Message
  /** The supervisor the broker bound this child to. */
  readonly targetId: string
}

/**
 * Why a durable wait failed: stopped, the generation ended, or the broker
 * refused or could not be reached when the question was first asked.
 *
 * @category errors
 * @since 0.1.0
 */
export type DurableWaitError = QuestionStopped | QuestionError | SessionEnded

/**
 * Asks and waits; see the module header. `waiter` holds the session's
 * reply-waiter slot for the whole wait (a fresh one after the supervisor went
 * away: the caller releases whichever is current); `asked` runs once the
 * broker saved the question.
 *
 * @category constructors
 * @since 0.1.0
 */
export const waitDurably = (
  generation: Generation,
  waiter: { current: Waiter },
  question: DurableQuestion,
  asked: Effect.Effect<void>
): Effect.Effect<DurableAnswer, DurableWaitError> =>
  Effect.scoped(Effect.gen(function*() {
    const { client, slot } = generation
    const { questionId } = question
    const correlation = { questionId, targetId: question.targetId, targetName: undefined }
    const bind = () => {
      waiter.current = slot.bind(waiter.current, correlation)
      return waiter.current
    }
    /**
     * A fresh waiter in the slot, bound to the question (the last one ended without an answer). Not once the
     * generation closed (C-ORD-35): its teardown failed the waiter that was current then, and a fresh one
     * would wait on, re-asking, for a generation that has ended. Checked in the same synchronous step as the
     * `bind`, so no close can come in between.
     */
    const rebind = Effect.suspend(() => {
      if (slot.ended() !== undefined) return Effect.fail(new SessionEnded())
      slot.release(waiter.current)
      const next = slot.reserve()
      if (next !== undefined) waiter.current = next
      return Effect.succeed(bind())
    })

    // Listen before asking: a saved answer may be pushed right after the save.
    const pushed = yield* Deferred.make<QuestionEvent>()
    yield* Effect.forkScoped(
      Stream.runForEach(
        Stream.filter(client.questionEvents, (event) => event.questionId === questionId),
        (event) => Deferred.succeed(pushed, event)
      ),
      { startImmediately: true }
    )
    // C-ORD-35: the generation closed while the question was prepared (a `connect` through a reconnect,
    // say): nothing of it may act after its Scope closed, so the wait ends and the question is not asked.
    // Checked in the same synchronous step as the `bind`, so no close can come in between.
    if (slot.ended() !== undefined) return yield* new SessionEnded()
    let bound = bind()
    const ask = client.askQuestion({ questionId, reason: question.reason, text: question.message.content.text })
    yield* ask.pipe(
      Effect.tapError((error) => mayBeSaved(error) ? stopBounded(client, questionId) : Effect.void),
      // C-ORD-35: the generation's close ends an ask still waiting in the client (for a connection, say), so
      // it does not go out for a generation that has ended. Not stopped: a question its broker saved stays,
      // as any question outlives the generation that asked it (C-DQ-10).
      (asking) => Effect.raceFirst(asking, Effect.mapError(slot.whenEnded, () => new SessionEnded()))
    )
    yield* asked
    // C-DQ-6: re-ask on a Schedule as a fallback (reconnects re-ask by themselves).
    yield* Effect.forkScoped(Effect.repeat(Effect.ignore(ask), Schedule.spaced(QUESTION_RECHECK)))

    const settle = (answer: DurableAnswer) =>
      Effect.as(Effect.ignore(client.questionReceived(questionId)), answer)

    while (true) {
      const next = yield* Effect.raceFirst(
        Effect.map(Deferred.await(pushed), (event) => ({ _tag: "Pushed" as const, event })),
        Effect.map(Effect.result(awaitOutcome(generation, bound)), (outcome) => ({ _tag: "Live" as const, outcome }))
      )
      if (next._tag === "Pushed") {
        if (next.event._tag === "Cancelled") return yield* new QuestionStopped({ questionId })
        return yield* settle({ _tag: "Saved", answer: next.event.answer, answeredAt: next.event.answeredAt })
      }
      const outcome = next.outcome
      if (outcome._tag === "Success") {
        const reply = outcome.success
        if (reply.replyError === undefined) return yield* settle({ _tag: "Reply", reply })
        // C-DQ-8: a failed turn is logged as a notification error, and the question keeps waiting.
        yield* Effect.logWarning(`Supervisor notification for question ${questionId} failed: ${reply.replyError}`)
        bound = yield* rebind
        continue
      }
      // Ended, or taken over by another process (which gets the answer now): no more waiting here.
      if (outcome.failure._tag === "SessionEnded" || outcome.failure._tag === "IntercomNotConnected") {
        return yield* outcome.failure
      }
      // The supervisor went away (C-DQ-6): not an answer; wait on.
      bound = yield* rebind
    }
  })).pipe(
    // C-DQ-11: an aborted wait cancels its question, bounded; timeout or abort is never an answer.
    Effect.onInterrupt(() => stopBounded(generation.client, question.questionId)),
    // Ended without an answer (an answer's `questionReceived` already did this): no more re-asks.
    Effect.onError(() => generation.client.questionDone(question.questionId))
  )
