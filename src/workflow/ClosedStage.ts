/**
 * What happens to an entry that reaches a stage after it closed
 * (C-ORD-6…9, C-ORD-34): the closed-stage router of one completed stage.
 *
 * - An ordinary notification (a message that is not an ask, an engine
 *   notice such as a late subagent completion) goes once to the parent/main
 *   chat, retried every `retryInterval` (100 ms) while the router's Scope
 *   (its stage's run) lives. It never reaches the stage: the router has no
 *   way to. A redelivery of one already delivered, or in flight, is not
 *   delivered again (the last 1000 are remembered).
 * - A blocking ask is claimed once in the shared `LateAskClaims` record
 *   (C-ORD-9). Its owner runs exactly one post-mortem turn in the stage's
 *   retained conversation (C-ORD-7), one at a time per stage; the model's
 *   normal `reply` stays correlated to the asker. When the turn cannot run
 *   (no retained conversation, or it fails) the asker gets the correlated
 *   `replyError` "Completed workflow stage could not process intercom ask:
 *   <reason>" at once (C-ORD-8), retried like a notification.
 *
 * Nothing waits beyond the router's Scope. When it closes (the run ended),
 * a retry still waiting makes exactly one more attempt, as C-DLV-12 does
 * for a retired generation, and a post-mortem turn still waiting or running
 * is interrupted: its asker gets the replyError with the reason "the stage's
 * run has ended" (one attempt). What that last attempt could not deliver is
 * given up with a warning and ends `Abandoned`. An entry routed after the
 * Scope closed is handled the same way at once: one attempt, never a retry.
 * Each attempt itself runs uninterruptibly, so an attempt that delivered is
 * never repeated. An attempt is bounded by `attemptTimeout` (5 s): one that
 * has not returned by then fails with `ClosedStageAttemptTimedOut` and is
 * interrupted where its port allows it. Until that attempt has ended no other
 * one starts for the entry: the next try waits for it (again at most
 * `attemptTimeout`), so an attempt that delivered late is counted and never
 * repeated, and a port that never returns holds the caller (the stage
 * session's hand-off queue) only until the run has ended and the last wait
 * has timed out; the entry is then given up (`Abandoned`, with a warning).
 *
 * Nothing here touches the stage's admission, DAG or terminal snapshot.
 *
 * @since 0.1.0
 */
import { Cause, Deferred, Duration, Effect, Exit, Fiber, Option, Schedule, type Scope, Semaphore } from "effect"
import type { InboundMessage } from "../client/events.ts"
import { ClosedStageAttemptTimedOut, completedStageAskError, describeFailure, PostMortemUnavailable } from "./errors.ts"
import { DEFAULT_CLAIM_MEMORY, type LateAskClaims } from "./LateAskClaims.ts"
import type { ReplyErrorPort } from "./StageAdmission.ts"
import { stageEntryKey, isAsk, type StageEntry } from "./StageEntry.ts"

/**
 * The default pause between two attempts to deliver to the parent chat
 * (the stable retry of C-DLV-12, used by C-ORD-6).
 *
 * @category defaults
 * @since 0.1.0
 */
export const DEFAULT_PARENT_RETRY_INTERVAL = Duration.millis(100)

/**
 * The default bound on one attempt at the parent chat or an asker's
 * `replyError` (see the module header).
 *
 * @category defaults
 * @since 0.1.0
 */
export const DEFAULT_ATTEMPT_TIMEOUT = Duration.seconds(5)

/**
 * The parent/main chat of a stage: where notifications go once the stage
 * has closed (C-ORD-6).
 *
 * @category ports
 * @since 0.1.0
 */
export interface ParentChat {
  /**
   * Delivers `entry` into the parent chat; a failure is retried while the
   * run lives. Runs uninterruptibly, so it should return (a wait inside may
   * be made `Effect.interruptible` where an interruption means it delivered
   * nothing). An attempt that has not returned after the router's
   * `attemptTimeout` counts as failed (`ClosedStageAttemptTimedOut`).
   */
  readonly deliver: (entry: StageEntry) => Effect.Effect<void, unknown>
}

/**
 * A completed stage's retained conversation (C-ORD-7).
 *
 * @category ports
 * @since 0.1.0
 */
export interface RetainedConversation {
  /**
   * Reopens the conversation and runs one turn with `ask`; the model's
   * `reply` goes to the asker as usual. Fails (e.g. `PostMortemUnavailable`)
   * when the stage was deleted, has no valid retained session, or cannot
   * be reopened; the failure's message becomes the asker's `replyError` reason.
   */
  readonly runTurn: (ask: InboundMessage) => Effect.Effect<void, unknown>
}

/**
 * How a closed-stage entry ended.
 *
 * @category models
 * @since 0.1.0
 */
export type ClosedOutcome =
  /** Delivered to the parent chat (C-ORD-6). */
  | { readonly _tag: "Notified" }
  /** A repeat of a notification already delivered or in flight: not delivered again. */
  | { readonly _tag: "AlreadyNotified" }
  /** The ask's one post-mortem turn ran (C-ORD-7). */
  | { readonly _tag: "PostMortem" }
  /** The post-mortem turn could not run; the asker got the correlated replyError (C-ORD-8). */
  | { readonly _tag: "Rejected"; readonly reason: string }
  /** The ask is claimed by another owner, or this router already handled it (C-ORD-9). */
  | { readonly _tag: "Claimed"; readonly owner: string }
  /**
   * The router's Scope (its run) ended before the parent chat, or the asker's
   * replyError, took the entry, and the one last attempt failed too: given
   * up, with a warning logged. `reason` says what was given up and why.
   */
  | { readonly _tag: "Abandoned"; readonly reason: string }

/**
 * What `makeClosedStage` needs.
 *
 * @category models
 * @since 0.1.0
 */
export interface ClosedStageOptions {
  /** The owner name this router claims late asks under (the stage id is a good one). */
  readonly owner: string
  readonly parent: ParentChat
  /** Absent when the stage kept no conversation: every late ask then gets the replyError. */
  readonly retained?: RetainedConversation | undefined
  readonly replyError: ReplyErrorPort
  /** The claim record shared by every listener that may take late asks. */
  readonly claims: LateAskClaims
  /** Default `DEFAULT_PARENT_RETRY_INTERVAL`. */
  readonly retryInterval?: Duration.Input | undefined
  /** How long one attempt at a port may take before it counts as failed. Default `DEFAULT_ATTEMPT_TIMEOUT`. */
  readonly attemptTimeout?: Duration.Input | undefined
}

/** The reason shown to the asker: a `PostMortemUnavailable`'s own reason, else the failure's text. */
const reasonOf = (failure: unknown): string =>
  failure instanceof PostMortemUnavailable ? failure.reason : describeFailure(failure)

/**
 * The router of one closed stage (see the module header).
 *
 * @category models
 * @since 0.1.0
 */
export interface ClosedStage {
  /** Routes an entry that reached the stage after close. */
  readonly route: (entry: StageEntry) => Effect.Effect<ClosedOutcome>
  /**
   * Runs `effect` (the stage's close and terminal snapshot) with no
   * post-mortem turn running: a late ask that comes meanwhile has its turn
   * once `effect` has ended, so the turn never changes the snapshot (C-ORD-7).
   */
  readonly publishing: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

/** The reason a late ask's asker gets when the stage kept no retained conversation (C-ORD-8). */
export const NO_CONVERSATION_REASON = "the stage kept no conversation"

/** The reason a late ask's asker gets once the router's Scope (the stage's run) has ended. */
export const RUN_ENDED_REASON = "the stage's run has ended"

/**
 * A closed-stage router whose retries and post-mortem turns live as long as
 * the current Scope (the stage's run); see the module header for what
 * happens when it closes.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeClosedStage = (options: ClosedStageOptions): Effect.Effect<ClosedStage, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { claims, owner, parent, replyError, retained } = options
    const spaced = Schedule.spaced(options.retryInterval ?? DEFAULT_PARENT_RETRY_INTERVAL)
    // Completed when the router's Scope closes: every wait below ends then.
    const ended = yield* Deferred.make<void>()
    yield* Effect.addFinalizer(() => Deferred.succeed(ended, undefined))
    const turns = yield* Semaphore.make(1)
    // Notifications delivered or in flight, by entry key, oldest first (C-ORD-6: once).
    const notified = new Set<string>()

    /**
     * `effect` while the Scope lives: its value, or `None` once the Scope has
     * closed (checked first, then raced; the loser is interrupted, also when
     * the caller runs uninterruptibly, as a host's `deliver` does).
     */
    const whileOpen = <A>(effect: Effect.Effect<A>): Effect.Effect<Option.Option<A>> =>
      Effect.suspend(() =>
        Deferred.isDoneUnsafe(ended)
          ? Effect.succeedNone
          : Effect.raceFirst(Effect.asSome(effect), Effect.as(Deferred.await(ended), Option.none<A>()))
      )

    const attemptTimeout = Duration.fromInputUnsafe(options.attemptTimeout ?? DEFAULT_ATTEMPT_TIMEOUT)

    /**
     * Delivers with `attempt` (each attempt uninterruptible, in a fiber of its
     * own, waited for at most `attemptTimeout`; a defect of the port counts as
     * a failure): retried every interval while the Scope lives, then one last
     * attempt once it has closed. An attempt that outlived its wait is the
     * one the next try waits for: a second one never starts beside it. False,
     * with a warning naming `what`, when the last one failed too.
     */
    const deliverWhileOpen = (attempt: Effect.Effect<void, unknown>, what: string, port: string): Effect.Effect<boolean> => {
      // The attempt not yet seen to end, if any: owned by this delivery, changed only between two yields.
      let inFlight: { readonly fiber: Fiber.Fiber<boolean>; readonly outcome: Deferred.Deferred<void, unknown> } | undefined
      // Sets `inFlight` in the same step as the fork: an interruption cannot fall between them.
      const start = Effect.gen(function*() {
        // The outcome is recorded inside the uninterruptible step: an interruption that arrives
        // meanwhile must not turn a delivery into an interrupted fiber (and so into a second one).
        const outcome = yield* Deferred.make<void, unknown>()
        // Detached: a port that never returns must not hold the router's Scope when the run ends.
        const fiber = yield* Effect.forkDetach(
          Effect.uninterruptible(Effect.flatMap(Effect.exit(attempt), (exit) => Deferred.done(outcome, exit))),
          { startImmediately: true }
        )
        inFlight = { fiber, outcome }
        return inFlight
      })
      const once: Effect.Effect<void, unknown> = Effect.gen(function*() {
        while (true) {
          const earlier = inFlight !== undefined
          const current = inFlight ?? (yield* start)
          const exit = yield* Effect.timeoutOption(Effect.exit(Deferred.await(current.outcome)), attemptTimeout)
          if (Option.isNone(exit)) {
            // Cut where the port allows it (an interruption there means it delivered nothing).
            yield* Effect.forkDetach(Fiber.interrupt(current.fiber))
            return yield* new ClosedStageAttemptTimedOut({ port, timeoutMs: Duration.toMillis(attemptTimeout) })
          }
          inFlight = undefined
          if (Exit.isSuccess(exit.value)) return
          // An earlier try's attempt that ended failing (say, cut after its timeout): this try makes its own.
          if (earlier) continue
          // A failure, a defect or an interruption of the port: a failed attempt.
          return yield* Effect.fail(Cause.squash(exit.value.cause))
        }
      })
      return whileOpen(Effect.ignore(Effect.retry(once, spaced))).pipe(
        Effect.flatMap((delivered) =>
          Option.isSome(delivered) ? Effect.succeed(true) : once.pipe(
            Effect.as(true),
            Effect.catch((failure) =>
              Effect.as(
                Effect.logWarning(`${what} was given up: ${RUN_ENDED_REASON} and the last attempt failed (${describeFailure(failure)})`),
                false
              )
            )
          )
        )
      )
    }

    const entryName = (entry: StageEntry): string =>
      entry._tag === "Message"
        ? `Message ${entry.inbound.message.id} from ${entry.inbound.from.id} to completed stage ${owner}`
        : `Notice ${entry.id} of completed stage ${owner}`

    const notify = (entry: StageEntry): Effect.Effect<ClosedOutcome> =>
      Effect.suspend(() => {
        const key = stageEntryKey(entry)
        if (notified.has(key)) return Effect.succeed<ClosedOutcome>({ _tag: "AlreadyNotified" })
        notified.add(key)
        // Remember at least the last DEFAULT_CLAIM_MEMORY notifications, oldest forgotten first.
        if (notified.size > DEFAULT_CLAIM_MEMORY) {
          const oldest = notified.values().next()
          if (oldest.done !== true) notified.delete(oldest.value)
        }
        const what = `${entryName(entry)}, for the parent chat,`
        return deliverWhileOpen(parent.deliver(entry), what, "parent chat").pipe(
          // Interrupted (the caller gave up) before delivery: a redelivery may try again.
          Effect.onInterrupt(() => Effect.sync(() => notified.delete(key))),
          Effect.flatMap((delivered): Effect.Effect<ClosedOutcome> => {
            if (delivered) return Effect.succeed({ _tag: "Notified" })
            // Given up: not delivered, so a redelivery may try (once) again.
            notified.delete(key)
            return Effect.succeed({ _tag: "Abandoned", reason: `${what} was not delivered: ${RUN_ENDED_REASON}` })
          })
        )
      })

    const reject = (ask: InboundMessage, reason: string): Effect.Effect<ClosedOutcome> => {
      const what = `The replyError for ask ${ask.message.id} from ${ask.from.id} to completed stage ${owner} (${reason})`
      return Effect.map(
        deliverWhileOpen(replyError(ask, completedStageAskError(reason)), what, "replyError"),
        (delivered): ClosedOutcome =>
          delivered ? { _tag: "Rejected", reason } : { _tag: "Abandoned", reason: `${what} was not sent: ${RUN_ENDED_REASON}` }
      )
    }

    const postMortem = (ask: InboundMessage): Effect.Effect<ClosedOutcome> => {
      if (retained === undefined) return reject(ask, NO_CONVERSATION_REASON)
      return whileOpen(turns.withPermit(Effect.exit(retained.runTurn(ask)))).pipe(
        Effect.flatMap((turn) => {
          // The Scope closed before the turn ran, or while it waited or ran: C-ORD-8, never left waiting.
          if (Option.isNone(turn)) return reject(ask, RUN_ENDED_REASON)
          const exit = turn.value
          return exit._tag === "Success"
            ? Effect.succeed<ClosedOutcome>({ _tag: "PostMortem" })
            : reject(ask, reasonOf(Cause.squash(exit.cause)))
        })
      )
    }

    return {
      publishing: (effect) => turns.withPermit(effect),
      route: (entry) =>
        Effect.suspend(() => {
          if (!isAsk(entry)) return notify(entry)
          const claim = claims.claim(stageEntryKey(entry), owner)
          if (claim !== "claimed") {
            return Effect.succeed<ClosedOutcome>({ _tag: "Claimed", owner: claims.owner(stageEntryKey(entry)) ?? owner })
          }
          return postMortem(entry.inbound)
        })
    }
  })
