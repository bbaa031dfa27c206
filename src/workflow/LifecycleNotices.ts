/**
 * `LifecycleNotices`: the workflow lifecycle notices of one parent
 * (C-WFD-14). It owns the de-duplication marks: a notice is sent once per
 * occurrence (run, event, occurrence key), and its mark is committed only
 * after the send was acknowledged, so a notice that failed is sent again the
 * next time it is raised and one that was delivered never is.
 *
 * `awaiting_input` is tracked (`awaitingInput` lists the runs waiting) but
 * never wakes the main agent: when listed it goes out as a passive notice.
 * Notices are handled one at a time (a one-permit semaphore), so two raises
 * of the same occurrence cannot both send. The marks are `DeliveryMarks`:
 * in memory by default, or the store's, so they survive a restart.
 */
import { Effect, Semaphore } from "effect"
import { DeliveryMarks, type DeliveryMarksFailed, type DeliveryMarksService } from "../store/DeliveryMarks.ts"
import { type LifecycleEvent, resolveLifecycleNotifyOn } from "./NotifyOptions.ts"
import type { DeliveryRefused } from "./ResultDelivery.ts"

/** One occurrence of a lifecycle event. */
export interface LifecycleOccurrence {
  readonly run: string
  readonly event: LifecycleEvent
  /** What makes this occurrence distinct (a stage, an attempt, a question id). */
  readonly occurrence: string
  /** The notice's text. */
  readonly text: string
}

/** What became of a raised notice. */
export type NoticeOutcome = "sent" | "duplicate" | "not-listed"

/** How a notice is sent: `wake: false` shows it without starting a turn. Succeeds only when acknowledged. */
export type NoticeSend = (text: string, options: { readonly wake: boolean }) => Effect.Effect<void, DeliveryRefused>

/** The lifecycle notices of one parent. */
export interface LifecycleNotices {
  /** Raises a notice; fails (unmarked, so a later raise retries) when the send is not acknowledged. */
  readonly notify: (occurrence: LifecycleOccurrence) => Effect.Effect<NoticeOutcome, DeliveryRefused | DeliveryMarksFailed>
  /** The runs whose latest event is `awaiting_input`, oldest first. */
  readonly awaitingInput: Effect.Effect<ReadonlyArray<LifecycleOccurrence>>
}

const keyOf = (o: LifecycleOccurrence) => `notice\u0000${o.run}\u0000${o.event}\u0000${o.occurrence}`

/**
 * The notices over `send`; `notifyOn` levels most specific first (default
 * `completed`, `failed`, `blocked`, `awaiting_input`); `marks` where the
 * de-duplication marks are kept (default: a fresh memory set).
 */
export const makeLifecycleNotices = (
  send: NoticeSend,
  notifyOn: ReadonlyArray<ReadonlyArray<string> | undefined> = [],
  marks: DeliveryMarksService = DeliveryMarks.makeMemory()
): Effect.Effect<LifecycleNotices> =>
  Effect.gen(function*() {
    const listed = resolveLifecycleNotifyOn(notifyOn).values
    const permit = yield* Semaphore.make(1)
    // Touched only under the permit.
    const awaiting = new Map<string, LifecycleOccurrence>()
    return {
      notify: (occurrence) =>
        permit.withPermit(Effect.gen(function*() {
          if (occurrence.event === "awaiting_input") awaiting.set(occurrence.run, occurrence)
          else awaiting.delete(occurrence.run)
          if (!listed.has(occurrence.event)) return "not-listed" as const
          const key = keyOf(occurrence)
          if (yield* marks.has(key)) return "duplicate" as const
          // Send and mark as one step for an interruption: the send's wait may be cut (then
          // nothing is marked), but an acknowledged send is marked before an interruption lands.
          yield* Effect.uninterruptibleMask((restore) =>
            Effect.andThen(restore(send(occurrence.text, { wake: occurrence.event !== "awaiting_input" })), marks.add(key))
          )
          return "sent" as const
        })),
      awaitingInput: permit.withPermit(Effect.sync(() => [...awaiting.values()]))
    }
  })
