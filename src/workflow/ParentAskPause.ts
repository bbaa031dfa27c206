/**
 * C-ASK-11, behind an option (open question 23): a foreground child asking
 * its own launching parent pauses instead of holding a reply waiter.
 *
 * With the option on, an ask whose target resolves to the child's launching
 * parent is not sent: the child pauses, the parent's `subagent` call
 * returns the question (the engine's `pause` port), and the child continues
 * only when the parent resumes it with an answer. Asks to anyone else —
 * and every ask with the option off, the seeds' waiter model — go through
 * the ordinary reply waiter (`ask` port).
 *
 * Owner: the child's pause slot — at most one paused question at a time,
 * held in a `Deferred` that `resume` completes.
 */
import { Data, Deferred, Effect } from "effect"

/**
 * A child asked while already paused on a question to its parent.
 *
 * @category errors
 * @since 0.1.0
 */
export class AlreadyPaused extends Data.TaggedError("AlreadyPaused")<{ readonly questionId: string }> {
  override get message(): string {
    return `Already paused on question ${this.questionId} to the launching parent; wait for the parent to resume this run`
  }
}

/**
 * A question a paused child hands to its parent's `subagent` call.
 *
 * @category models
 * @since 0.1.0
 */
export interface PausedQuestion {
  readonly questionId: string
  readonly text: string
}

/**
 * The ports and switch of a foreground child's asks.
 *
 * @category ports
 * @since 0.1.0
 */
export interface ParentAskOptions<E> {
  /** The pause model (C-ASK-11); off by default: the waiter model the seeds describe. */
  readonly pauseOnParentAsk: boolean
  /** The names and ids the launching parent resolves to (matched trimmed and in any case, as the broker resolves a target). */
  readonly parentTargets: ReadonlyArray<string>
  /** The ordinary ask (reply waiter). */
  readonly ask: (target: string, question: PausedQuestion) => Effect.Effect<string, E>
  /** Ends the parent's `subagent` call with the question (the child is paused). */
  readonly pause: (question: PausedQuestion) => Effect.Effect<void>
}

/**
 * A foreground child's ask, with the optional pause model.
 *
 * @category models
 * @since 0.1.0
 */
export interface ParentAsk<E> {
  /** Asks `target`; pauses instead when the option is on and `target` is the launching parent. */
  readonly ask: (target: string, question: PausedQuestion) => Effect.Effect<string, E | AlreadyPaused>
  /** The parent resumes the paused child with its answer; false when no question is paused (or the id differs). */
  readonly resume: (questionId: string, answer: string) => Effect.Effect<boolean>
  /** The question the child is paused on, if any. */
  readonly paused: Effect.Effect<PausedQuestion | undefined>
}

/**
 * Makes a foreground child's ask.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeParentAsk = <E>(options: ParentAskOptions<E>): ParentAsk<E> => {
  let slot: { readonly question: PausedQuestion; readonly answer: Deferred.Deferred<string> } | undefined
  // As the broker resolves a target (C-TGT-1, C-ASK-4): trimmed, names in any case.
  const parents = new Set(options.parentTargets.map((name) => name.trim().toLowerCase()))
  const isParent = (target: string): boolean => parents.has(target.trim().toLowerCase())
  return {
    ask: (target, question) =>
      Effect.suspend((): Effect.Effect<string, E | AlreadyPaused> => {
        if (!options.pauseOnParentAsk || !isParent(target)) return options.ask(target, question)
        if (slot !== undefined) return Effect.fail(new AlreadyPaused({ questionId: slot.question.questionId }))
        const paused = { question, answer: Deferred.makeUnsafe<string>() }
        slot = paused
        return Effect.andThen(options.pause(question), Deferred.await(paused.answer)).pipe(
          Effect.ensuring(Effect.sync(() => {
            if (slot === paused) slot = undefined
          }))
        )
      }),
    resume: (questionId, answer) =>
      Effect.suspend(() => {
        if (slot === undefined || slot.question.questionId !== questionId) return Effect.succeed(false)
        return Deferred.succeed(slot.answer, answer)
      }),
    paused: Effect.sync(() => slot?.question)
  }
}
