/**
 * Admission into one open stage generation (C-ORD-1…5, C-ORD-34): the
 * stage's own ordered queue of admitted entries and the decision, made by
 * one owner, of what is admitted and when the stage is closed.
 *
 * The owner is an actor: one fiber in the generation's Scope taking
 * commands (`Admit`, `HandoffDone`, `Close`) from a typed queue, one at a
 * time. That gives the ordering rules without timing:
 *
 * - close and admit are commands of the same queue, so one of them happens
 *   first (C-ORD-2): an entry admitted before close belongs to the stage,
 *   one after close is answered `Closed` (the caller routes it to the parent
 *   chat or the post-mortem router, `ClosedStage.ts`), also when the
 *   generation retires after a completed close before the actor answered it;
 * - an entry is reserved (appended to the stage's queue) in the same step
 *   that admits it, before a busy stage's foreground handoff starts
 *   (C-ORD-3); the handoff runs as a fiber of the generation and reports
 *   back with `HandoffDone`;
 * - entries go into the stage session (`StageSession.insert`) strictly in
 *   admission order; one still waiting on its handoff holds back later
 *   ones;
 * - close finishes only when every reserved entry is inserted or has
 *   failed (C-ORD-2): the terminal snapshot is published after that
 *   (`closeAndPublish`). Producers that are still running do not keep the
 *   stage open (C-ORD-34): only what was admitted is waited for.
 *
 * A failure follows C-ORD-4/5: `abandoned` (or the generation ending) is
 * `StageRetired`; a blocking ask that fails gets a correlated `replyError`
 * at once ("Running workflow stage could not admit intercom ask: …") and is
 * answered `Rejected`; anything else fails, so its caller releases it for
 * retry.
 *
 * @since 0.1.0
 */
import { Cause, Deferred, Effect, Fiber, Queue, type Scope } from "effect"
import type { InboundMessage } from "../client/events.ts"
import { describeFailure, runningStageAskError, type StageAdmissionError, StageInsertFailed, StageRetired } from "./errors.ts"
import { isAsk, type StageEntry } from "./StageEntry.ts"
import type { HandoffDisposition } from "./DetachRoute.ts"


/**
 * The foreground handoff port (probe → reserve → commit → ack, implemented
 * by the ordering side of the workflow layer). It only decides: the stage
 * inserts the entry itself on `delivered` and on `unclaimed`, and never on
 * `abandoned`. It should settle within its own per-phase timeouts; a
 * failure counts as `abandoned`.
 *
 * @category ports
 * @since 0.1.0
 */
export type ForegroundHandoff = (entry: StageEntry) => Effect.Effect<HandoffDisposition, unknown>

/**
 * The stage session as the engine exposes it.
 *
 * @category ports
 * @since 0.1.0
 */
export interface StageSession {
  /** Whether the stage is running (a turn or a foreground tool call): a busy stage hands an entry to the foreground handoff first (C-ORD-3). */
  readonly isBusy: Effect.Effect<boolean>
  /** Puts an entry in the stage session's model-visible steering/follow-up queue (C-ORD-1). */
  readonly insert: (entry: StageEntry) => Effect.Effect<void, unknown>
}

/**
 * Sends a blocking ask's asker a correlated reply (`replyTo` = the ask's id)
 * carrying `replyError` = `text` (`reply-error-v1`, C-ORD-5).
 *
 * @category ports
 * @since 0.1.0
 */
export type ReplyErrorPort = (ask: InboundMessage, text: string) => Effect.Effect<void, unknown>

/**
 * How an admission ended.
 *
 * - `Admitted`: the entry is in the stage session; `via` says whether a
 *   foreground owner took part (`delivered`/`unclaimed`) or the stage was
 *   not busy (`native`).
 * - `Closed`: the generation was closed before this entry (route it as a
 *   closed-stage entry).
 * - `Rejected`: a blocking ask that could not be admitted; its asker has
 *   its correlated `replyError`.
 *
 * @category models
 * @since 0.1.0
 */
export type Admission =
  | { readonly _tag: "Admitted"; readonly via: "native" | "delivered" | "unclaimed" }
  | { readonly _tag: "Closed" }
  | { readonly _tag: "Rejected"; readonly reason: string }

/**
 * Where a generation is: taking entries, draining after close, or done.
 *
 * @category models
 * @since 0.1.0
 */
export type StagePhase = "open" | "closing" | "closed"

/**
 * One open stage generation's admission (see the module header).
 *
 * @category models
 * @since 0.1.0
 */
export interface StageAdmission {
  /**
   * Admits an entry. Succeeds with `Admitted` once it is in the stage
   * session, `Closed` if the generation closed first, `Rejected` for an ask
   * that failed (its asker was told); fails with `StageAdmissionError` for a
   * non-ask that failed — release it for retry.
   */
  readonly admit: (entry: StageEntry) => Effect.Effect<Admission, StageAdmissionError>
  /**
   * Closes the generation: nothing is admitted after this, and it completes
   * when every entry admitted before it is in the stage session or has
   * failed. `StageRetired` if the generation ended first.
   */
  readonly close: Effect.Effect<void, StageRetired>
  /** The phase, as the owner last set it. */
  readonly phase: () => StagePhase
  /** How many admitted entries are not yet in the stage session. */
  readonly pending: () => number
}

type Settled =
  | { readonly _tag: "Admitted"; readonly via: "native" | "delivered" | "unclaimed" }
  | { readonly _tag: "Closed" }
  | { readonly _tag: "Failed"; readonly error: StageAdmissionError }

interface Ticket {
  readonly entry: StageEntry
  readonly reply: Deferred.Deferred<Settled>
  status: "handoff" | "ready" | "failed"
  via: "native" | "delivered" | "unclaimed"
}

type Command =
  | { readonly _tag: "Admit"; readonly entry: StageEntry; readonly reply: Deferred.Deferred<Settled> }
  | { readonly _tag: "HandoffDone"; readonly ticket: Ticket; readonly disposition: HandoffDisposition }
  | { readonly _tag: "Close"; readonly reply: Deferred.Deferred<void> }

/**
 * What `makeStageAdmission` needs: the stage session, the foreground
 * handoff, and how to answer a failed ask.
 *
 * @category models
 * @since 0.1.0
 */
export interface StageAdmissionOptions {
  readonly session: StageSession
  readonly handoff: ForegroundHandoff
  readonly replyError: ReplyErrorPort
}

/**
 * Starts the admission actor of one stage generation in the current Scope
 * (the generation's): closing that Scope interrupts the actor and every
 * handoff in flight, and fails waiting admissions with `StageRetired`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeStageAdmission = (
  options: StageAdmissionOptions
): Effect.Effect<StageAdmission, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { handoff, replyError, session } = options
    const scope = yield* Effect.scope
    const mailbox = yield* Queue.unbounded<Command>()
    yield* Effect.addFinalizer(() => Queue.shutdown(mailbox))

    // Owned by the actor fiber: only `handle` changes these.
    let phase: StagePhase = "open"
    const tickets: Array<Ticket> = []
    const closeWaiters: Array<Deferred.Deferred<void>> = []

    const startHandoff = (ticket: Ticket) =>
      Effect.forkIn(
        handoff(ticket.entry).pipe(
          Effect.exit,
          Effect.flatMap((exit) =>
            Queue.offer(mailbox, {
              _tag: "HandoffDone",
              ticket,
              disposition: exit._tag === "Success" ? exit.value : "abandoned"
            })
          )
        ),
        scope,
        { startImmediately: true }
      )

    /** Inserts ready entries from the head, in order; finishes a pending close when nothing is left. */
    const pump = Effect.gen(function*() {
      for (let ticket = tickets[0]; ticket !== undefined && ticket.status !== "handoff"; ticket = tickets[0]) {
        tickets.shift()
        if (ticket.status === "failed") {
          yield* Deferred.succeed(ticket.reply, { _tag: "Failed", error: new StageRetired() })
          continue
        }
        const inserted = yield* Effect.exit(session.insert(ticket.entry))
        yield* Deferred.succeed(
          ticket.reply,
          inserted._tag === "Success"
            ? { _tag: "Admitted", via: ticket.via }
            : { _tag: "Failed", error: new StageInsertFailed({ reason: describeFailure(Cause.squash(inserted.cause)) }) }
        )
      }
      if (phase === "closing" && tickets.length === 0) {
        phase = "closed"
        for (const waiter of closeWaiters.splice(0)) yield* Deferred.succeed(waiter, undefined)
      }
    })

    const handle = (command: Command): Effect.Effect<void> => {
      switch (command._tag) {
        case "Admit":
          return Effect.gen(function*() {
            if (phase !== "open") {
              yield* Deferred.succeed(command.reply, { _tag: "Closed" })
              return
            }
            // C-ORD-3: reserved in the stage before anything asynchronous about it starts.
            const ticket: Ticket = { entry: command.entry, reply: command.reply, status: "ready", via: "native" }
            tickets.push(ticket)
            const busy = yield* session.isBusy.pipe(Effect.catchCause(() => Effect.succeed(true)))
            if (busy) {
              ticket.status = "handoff"
              yield* startHandoff(ticket)
            }
            yield* pump
          })
        case "HandoffDone":
          return Effect.suspend(() => {
            const { disposition, ticket } = command
            if (ticket.status !== "handoff") return Effect.void
            if (disposition === "abandoned") {
              ticket.status = "failed"
            } else {
              ticket.status = "ready"
              ticket.via = disposition
            }
            return pump
          })
        case "Close":
          return Effect.suspend(() => {
            if (phase === "closed") return Deferred.succeed(command.reply, undefined)
            closeWaiters.push(command.reply)
            if (phase === "open") phase = "closing"
            return pump
          })
      }
    }

    const actor = yield* Effect.forkIn(
      Queue.take(mailbox).pipe(Effect.flatMap(handle), Effect.forever),
      scope,
      { startImmediately: true }
    )
    const ended = Fiber.await(actor)

    const request = <A>(make: (reply: Deferred.Deferred<A>) => Command, onEnded: A): Effect.Effect<A> =>
      Effect.gen(function*() {
        const reply = yield* Deferred.make<A>()
        if (!Queue.offerUnsafe(mailbox, make(reply))) return onEnded
        return yield* Effect.raceFirst(Deferred.await(reply), Effect.as(ended, onEnded))
      })

    const retired: Settled = { _tag: "Failed", error: new StageRetired() }

    const admit = (entry: StageEntry): Effect.Effect<Admission, StageAdmissionError> =>
      Effect.flatMap(
        request<Settled>((reply) => ({ _tag: "Admit", entry, reply }), retired),
        (settled): Effect.Effect<Admission, StageAdmissionError> => {
          // The generation ended with this entry unanswered. After a completed close nothing is
          // reserved any more, so it was not admitted before close (C-ORD-2): it is a closed-stage
          // entry, not one the running stage failed to admit.
          if (settled === retired && phase === "closed") return Effect.succeed({ _tag: "Closed" })
          return settled._tag === "Failed" ? admissionFailed(entry, settled.error, replyError) : Effect.succeed(settled)
        }
      )

    return {
      admit,
      close: Effect.gen(function*() {
        const reply = yield* Deferred.make<void>()
        const done = Queue.offerUnsafe(mailbox, { _tag: "Close", reply }) &&
          (yield* Effect.raceFirst(Effect.as(Deferred.await(reply), true), Effect.as(ended, false)))
        if (!done) return yield* new StageRetired()
      }),
      phase: () => phase,
      pending: () => tickets.length
    }
  })

/**
 * The failure rule of a running stage (C-ORD-4/5): a blocking ask gets the
 * correlated `replyError` "Running workflow stage could not admit intercom
 * ask: <reason>" at once and is `Rejected`; anything else fails with
 * `error`, so its caller releases it for retry (as does an ask whose
 * replyError could not be sent).
 *
 * @category combinators
 * @since 0.1.0
 */
export const admissionFailed = (
  entry: StageEntry,
  error: StageAdmissionError,
  replyError: ReplyErrorPort
): Effect.Effect<Extract<Admission, { readonly _tag: "Rejected" }>, StageAdmissionError> => {
  if (!isAsk(entry)) return Effect.fail(error)
  // C-ORD-5: the asker fails now instead of waiting out its timeout.
  return replyError(entry.inbound, runningStageAskError(error.message)).pipe(
    Effect.as({ _tag: "Rejected", reason: error.message } as const),
    Effect.catchCause(() => Effect.fail(error))
  )
}

/**
 * Runs `close`, then `publish` (the engine's terminal snapshot): the
 * snapshot always follows everything the stage admitted (C-ORD-2).
 *
 * @category combinators
 * @since 0.1.0
 */
export const closeAndPublish = <A, E, R>(
  admission: StageAdmission,
  publish: Effect.Effect<A, E, R>
): Effect.Effect<A, E | StageRetired, R> => Effect.andThen(admission.close, publish)
