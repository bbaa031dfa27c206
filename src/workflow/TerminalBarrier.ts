/**
 * The terminal ordering barrier for background children (C-ORD-25…31).
 *
 * Before a child's `paused`/`completed`/`failed` notice reaches its parent,
 * the barrier claims — in one synchronous step, from the busy parent's idle
 * queue — the child's ordinary messages accepted before the terminal, and
 * hands them to the host **together with** the notice, as one ordered batch.
 * Asks, later messages and other senders' entries stay where they are. If
 * the host refuses part of the batch, the undelivered entries go back to
 * their original positions and the terminal stays retryable. The batch is
 * handed over at once: the barrier never waits for a model turn (C-ORD-31).
 *
 * Owner: one actor fiber per barrier, in the parent generation's Scope,
 * taking admissions from its typed queue one at a time — so terminals are
 * admitted in the order they arrive. The identity bookkeeping (in-flight
 * joins, remembered keys) is changed synchronously by `admit` and by that
 * fiber only.
 */
import { Deferred, Effect, Queue, type Scope } from "effect"
import { type DispatchError, TerminalAdmissionError } from "./orderingErrors.ts"
import type { IdleQueue } from "./IdleQueue.ts"
import type { InboundEntry } from "./InboundEntry.ts"

/**
 * The terminal states a child's notice can report.
 *
 * @category models
 * @since 0.1.0
 */
export type TerminalStatus = "paused" | "completed" | "failed"

/**
 * The child's exact targets: the broker ids and names its messages come from.
 *
 * @category models
 * @since 0.1.0
 */
export interface ChildTargets {
  readonly ids: ReadonlyArray<string>
  readonly names: ReadonlyArray<string>
}

/**
 * A child's terminal notice, as the engine hands it to the barrier.
 *
 * @category models
 * @since 0.1.0
 */
export interface TerminalNotice<T> {
  /** The parent that owns the run (its session id). */
  readonly owner: string
  readonly runId: string
  /** The delivery's request id, if any (`completion-<id>` and `<id>` are the same terminal, C-ORD-28). */
  readonly requestId?: string | undefined
  /** The child's source name, used in the identity when there is no request id. */
  readonly source: string
  /** When the child reached its terminal state; later entries are never claimed (C-ORD-26). */
  readonly terminalAt: number
  readonly status: TerminalStatus
  readonly child: ChildTargets
  /** The engine's notice value, handed to the host untouched. */
  readonly notice: T
}

/**
 * What the barrier hands to the host: the child's claimed messages, then its notice.
 *
 * @category models
 * @since 0.1.0
 */
export interface TerminalBatch<A, T> {
  readonly prelude: ReadonlyArray<InboundEntry<A>>
  readonly terminal: TerminalNotice<T>
}

/**
 * The host side of the barrier: delivers a batch in order, without waiting
 * for a model turn. A `DispatchError` says how many prelude entries it took
 * (`delivered`); the notice is the batch's last item.
 *
 * @category ports
 * @since 0.1.0
 */
export interface TerminalBarrierHost<A, T> {
  readonly dispatch: (batch: TerminalBatch<A, T>) => Effect.Effect<void, DispatchError>
}

/**
 * Outcome of `admit`: the batch was handed over (with how many claimed
 * messages), or this terminal was already admitted and nothing was claimed
 * or handed over again (C-ORD-28).
 *
 * @category models
 * @since 0.1.0
 */
export type TerminalOutcome =
  | { readonly _tag: "Admitted"; readonly prelude: number }
  | { readonly _tag: "AlreadyAdmitted" }

/**
 * Barrier settings.
 *
 * @category models
 * @since 0.1.0
 */
export interface TerminalBarrierSettings {
  /** How many admitted terminal keys are remembered (C-ORD-28: at least 1000). */
  readonly rememberedKeys: number
}

/**
 * The contract's barrier settings.
 *
 * @category constants
 * @since 0.1.0
 */
export const defaultTerminalBarrierSettings: TerminalBarrierSettings = { rememberedKeys: 1000 }

/**
 * A running terminal barrier.
 *
 * @category models
 * @since 0.1.0
 */
export interface TerminalBarrier<T> {
  /** Admits a terminal notice with its child's pre-terminal messages; joins an in-flight admission of the same terminal. */
  readonly admit: (terminal: TerminalNotice<T>) => Effect.Effect<TerminalOutcome, TerminalAdmissionError>
}

/**
 * C-ORD-28: the terminal id — the request id without a `completion-` prefix,
 * or `<source>:<terminalAt>` when there is none.
 *
 * @category identity
 * @since 0.1.0
 */
export const terminalIdOf = (terminal: Pick<TerminalNotice<unknown>, "requestId" | "source" | "terminalAt">): string =>
  terminal.requestId !== undefined
    ? terminal.requestId.replace(/^completion-/, "")
    : `${terminal.source}:${terminal.terminalAt}`

/**
 * C-ORD-28: the terminal identity (owner, runId, terminalId) as one key.
 *
 * @category identity
 * @since 0.1.0
 */
export const terminalKeyOf = (terminal: TerminalNotice<unknown>): string =>
  `${terminal.owner}\u0000${terminal.runId}\u0000${terminalIdOf(terminal)}`

/**
 * C-ORD-26: which queued entries belong to a terminal's prelude. Not an ask,
 * not after `terminalAt`, from the child's exact targets; an entry with a
 * source run id must carry the barrier's run id; a legacy entry (no source)
 * matched only by name counts only if that name maps to exactly one sender
 * id in the queue.
 *
 * @category identity
 * @since 0.1.0
 */
export const preludeSelector = <A>(terminal: TerminalNotice<unknown>) =>
(queued: ReadonlyArray<InboundEntry<A>>): (entry: InboundEntry<A>) => boolean => {
  const idsByName = new Map<string, Set<string>>()
  for (const entry of queued) {
    if (entry.senderName === undefined) continue
    const ids = idsByName.get(entry.senderName) ?? new Set<string>()
    ids.add(entry.senderId)
    idsByName.set(entry.senderName, ids)
  }
  return (entry) => {
    if (entry.expectsReply || entry.timestamp > terminal.terminalAt) return false
    const byId = terminal.child.ids.includes(entry.senderId)
    const byName = entry.senderName !== undefined && terminal.child.names.includes(entry.senderName)
    if (!byId && !byName) return false
    if (entry.source !== undefined) return entry.source.subagentRunId === terminal.runId
    return byId || (entry.senderName !== undefined && idsByName.get(entry.senderName)?.size === 1)
  }
}

/** A set of keys that keeps only the newest `capacity` of them. */
class RememberedKeys {
  private readonly keys = new Set<string>()
  private readonly capacity: number
  constructor(capacity: number) {
    this.capacity = capacity
  }
  has(key: string): boolean {
    return this.keys.has(key)
  }
  add(key: string): void {
    this.keys.delete(key)
    this.keys.add(key)
    if (this.keys.size <= this.capacity) return
    for (const oldest of this.keys) {
      this.keys.delete(oldest)
      return
    }
  }
}

interface Admission<T> {
  readonly key: string
  readonly terminal: TerminalNotice<T>
  readonly done: Deferred.Deferred<TerminalOutcome, TerminalAdmissionError>
}

/**
 * Starts a terminal barrier over a parent's idle queue, in the current Scope
 * (the parent generation's). Closing the Scope stops it; admissions still
 * waiting are interrupted.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeTerminalBarrier = <A, T>(
  idleQueue: IdleQueue<A>,
  host: TerminalBarrierHost<A, T>,
  settings: TerminalBarrierSettings = defaultTerminalBarrierSettings
): Effect.Effect<TerminalBarrier<T>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const remembered = new RememberedKeys(Math.max(1000, settings.rememberedKeys))
    const inFlight = new Map<string, Deferred.Deferred<TerminalOutcome, TerminalAdmissionError>>()
    const admissions = yield* Queue.unbounded<Admission<T>>()
    const closed = (terminalKey: string) =>
      new TerminalAdmissionError({ terminalKey, reason: "the parent's session generation ended" })
    // Admissions still waiting when the generation ends fail instead of hanging; their entries were never claimed.
    yield* Effect.addFinalizer(() =>
      Effect.andThen(
        Queue.shutdown(admissions),
        Effect.forEach([...inFlight], ([key, done]) => Deferred.fail(done, closed(key)), { discard: true })
      )
    )

    const run = ({ done, key, terminal }: Admission<T>): Effect.Effect<void> =>
      idleQueue.claimAndDispatch(
        preludeSelector<A>(terminal),
        (prelude) =>
          Effect.andThen(
            host.dispatch({ prelude, terminal }),
            // Recorded inside the dispatch's own uninterruptible step: a generation that closes as the dispatch
            // ends cannot report a terminal that was handed over as not admitted (a retry would deliver it twice).
            Effect.suspend(() => {
              remembered.add(key)
              inFlight.delete(key)
              return Deferred.succeed(done, { _tag: "Admitted", prelude: prelude.length })
            })
          )
      ).pipe(
        Effect.matchCauseEffect({
          onSuccess: () => Effect.void,
          onFailure: (cause) =>
            Effect.suspend(() => {
              // C-ORD-29: the claim is already rolled back; the terminal stays retryable.
              inFlight.delete(key)
              const failure = cause.reasons.find((reason) => reason._tag === "Fail")
              const reason = failure?._tag === "Fail" ? failure.error.reason : "the host's dispatch failed"
              return Deferred.fail(done, new TerminalAdmissionError({ terminalKey: key, reason }))
            })
        })
      )

    yield* Queue.take(admissions).pipe(Effect.flatMap(run), Effect.forever, Effect.forkScoped)

    return {
      admit: (terminal) =>
        Effect.suspend(() => {
          const key = terminalKeyOf(terminal)
          if (remembered.has(key)) return Effect.succeed<TerminalOutcome>({ _tag: "AlreadyAdmitted" })
          const joined = inFlight.get(key)
          if (joined !== undefined) return Deferred.await(joined)
          const done = Deferred.makeUnsafe<TerminalOutcome, TerminalAdmissionError>()
          if (!Queue.offerUnsafe(admissions, { key, terminal, done })) return Effect.fail(closed(key))
          inFlight.set(key, done)
          return Deferred.await(done)
        })
    }
  })
