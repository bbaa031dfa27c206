/**
 * `RunNotifications`: what one workflow run tells its parent over intercom
 * (C-WFD-3, C-WFD-4, C-WFD-13, C-WFD-15, C-DQ-17, C-WKR-10). It resolves the
 * run's `intercom` option once (mode, target, `notifyOn`) and then decides,
 * for every control signal and for the result, whether and how it goes out.
 *
 * The bus is reached only through the `NotifyPort` an engine supplies (in a
 * session, `sessionNotifyPort` over `IntercomSession.send`); durable
 * questions through a `QuestionLookup` (`questionLookup` over the client's
 * `questions-v1` listing — the broker owns the database). It owns no state
 * beyond the resolved settings: results go through `ResultDelivery` with the
 * caller's ledger, so a replaced watcher continues where the last one stopped.
 */
import { Effect } from "effect"
import type { QuestionOperations } from "../client/ClientQuestions.ts"
import type { QuestionPageWire } from "../protocol/questions.ts"
import type { DeliveryMarksFailed } from "../store/DeliveryMarks.ts"
import type { UndeliveredStore, UndeliveredStoreFailed } from "../store/UndeliveredStore.ts"
import {
  type ControlEvent,
  DEFAULT_WORKFLOW_NOTIFY_ON,
  type IntercomDelivery,
  type IntercomOption,
  intercomCarries,
  resolveDelivery,
  resolveNotifyOn,
  resolveTarget,
  type RunShape,
  sendsControl,
  sendsResult
} from "./NotifyOptions.ts"
import {
  deliver,
  type DeliveryOutcome,
  type DeliveryRefused,
  type DeliverySettings,
  memoryPhaseLedger,
  type PhaseLedger
} from "./ResultDelivery.ts"

/** How the run reaches the bus: the port's parent session, and an acknowledged send. */
export interface NotifyPort {
  /** The parent session the intercom port knows (C-WFD-4's fallback). */
  readonly parentSession: string | undefined
  /** Sends `text` to `target`; succeeds only when the bus acknowledged it. `wake: false` starts no turn. */
  readonly send: (target: string, text: string, options: { readonly wake: boolean }) => Effect.Effect<void, DeliveryRefused>
}

/** The unresolved durable questions a child asked (ids, oldest first) (C-DQ-17). */
export interface QuestionLookup {
  readonly unresolvedFrom: (childId: string) => Effect.Effect<ReadonlyArray<string>>
}

/** A control signal about one child of the run. */
export interface ChildControl {
  readonly event: ControlEvent
  /** The child's intercom target (name or id), as the parent addresses it. */
  readonly child: string
  /** The child's session id, to find its durable questions. */
  readonly childId?: string | undefined
  /** What happened, in a few words (`no activity for 60 s`, `3 failed tool attempts`). */
  readonly detail?: string | undefined
}

/** What became of a control signal. */
export type ControlOutcome = "sent" | "mode-off" | "not-listed" | "no-target"

/** A run's result as the engine hands it over. */
export interface RunResult {
  readonly status: "completed" | "failed"
  readonly body: string
  /** The parent waits for it (a foreground call): it gets the result directly, no intercom notice (C-WFD-15). */
  readonly foreground: boolean
  /** The run's deterministic child target, reported as "Run intercom target" (C-WFD-13). */
  readonly runTarget?: string | undefined
  /** The previous run's target, reported as "Previous intercom target" (C-WFD-13). */
  readonly previousTarget?: string | undefined
}

/** What became of a result. */
export type ResultOutcome =
  | { readonly _tag: "Direct"; readonly text: string }
  | { readonly _tag: "NotSent"; readonly why: "mode" | "no-target" }
  | { readonly _tag: "Sent"; readonly delivery: DeliveryOutcome }

/** The intercom summary added to a run's details; none when the mode is `off` (C-WFD-3). */
export interface IntercomSummary {
  readonly delivery: Exclude<IntercomDelivery, "off">
  readonly target: string | undefined
}

/** Options of {@link makeRunNotifications}. */
export interface RunNotificationsOptions {
  readonly run: string
  readonly option?: IntercomOption | undefined
  readonly shape: RunShape
  readonly port: NotifyPort
  /** `notifyOn` levels below the option's own, most specific first. */
  readonly notifyOnLevels?: ReadonlyArray<ReadonlyArray<string> | undefined> | undefined
  readonly questions?: QuestionLookup | undefined
  /** Where confirmed phases are recorded; pass the same one to a replaced watcher (C-WFD-11). */
  readonly ledger?: PhaseLedger | undefined
  readonly retry?: Partial<DeliverySettings> | undefined
}

/** The notifications of one run. */
export interface RunNotifications {
  readonly delivery: IntercomDelivery
  readonly target: string | undefined
  readonly summary: IntercomSummary | undefined
  readonly control: (signal: ChildControl) => Effect.Effect<ControlOutcome, DeliveryRefused>
  readonly result: (
    result: RunResult
  ) => Effect.Effect<ResultOutcome, UndeliveredStoreFailed | DeliveryMarksFailed, UndeliveredStore>
}

/** The answer call a notice prints for a durable question (C-DQ-17). */
export const answerCall = (questionId: string): string =>
  `intercom({ action: "answer", questionId: "${questionId}", message: "<your answer>" })`

/**
 * The needs-attention text: "Waiting for supervisor input" with the question
 * id and the answer call when the child has an unresolved durable question
 * (C-DQ-17), else what needs attention.
 */
export const attentionText = (run: string, child: string, questionIds: ReadonlyArray<string>, detail?: string): string => {
  const first = questionIds[0]
  if (first === undefined) return `Run ${run}: ${child} needs attention${detail === undefined ? "" : ` (${detail})`}.`
  const more = questionIds.length > 1 ? ` (${questionIds.length - 1} more unresolved: ${questionIds.slice(1).join(", ")})` : ""
  return `Run ${run}: ${child} is Waiting for supervisor input on question ${first}${more}. Answer it with ${answerCall(first)}.`
}

/** The text of a delivered result, with the child targets (C-WFD-13) and the wake-up note (C-WKR-10). */
export const resultText = (run: string, result: RunResult): string =>
  [
    `Run ${run} ${result.status}.`,
    ...(result.runTarget === undefined ? [] : [`Run intercom target: ${result.runTarget} (may be inactive after completion)`]),
    ...(result.previousTarget === undefined ? [] : [`Previous intercom target: ${result.previousTarget}`]),
    "",
    result.body
  ].join("\n")

/**
 * The receipt text of a background call (C-WFD-6, C-WFD-15, C-WKR-10): the
 * run was accepted, its completion arrives later as a separate wake-up.
 */
export const acceptedText = (run: string): string =>
  `Run ${run} accepted; it runs in the background. Its completion will wake you as a separate message: ` +
  `end your turn instead of polling or sleeping. Use peek, steer, stop or result with ${run}.`

/**
 * What a direct run's call returns at once (C-WFD-6): `accepted` with the
 * run id for an async run — its completion or failure is delivered later in
 * the resolved mode — or `failed` when it was refused before launch (a model
 * validation failure), which is only returned, never sent over intercom.
 * Both carry the run's intercom summary (none when the mode is `off`).
 */
export type LaunchReceipt =
  | { readonly status: "accepted"; readonly run: string; readonly text: string; readonly intercom: IntercomSummary | undefined }
  | { readonly status: "failed"; readonly run: string; readonly text: string; readonly intercom: IntercomSummary | undefined }

/** The `accepted` receipt of an async run (C-WFD-6); nothing is sent. */
export const acceptedReceipt = (notifications: RunNotifications, run: string): LaunchReceipt => ({
  status: "accepted",
  run,
  text: acceptedText(run),
  intercom: notifications.summary
})

/** The `failed` receipt of a run refused before launch (C-WFD-6); returned to the caller, never sent. */
export const refusedBeforeLaunch = (notifications: RunNotifications, run: string, reason: string): LaunchReceipt => ({
  status: "failed",
  run,
  text: `Run ${run} did not start: ${reason}`,
  intercom: notifications.summary
})

/** Builds the notifications of one run (see the module header). */
export const makeRunNotifications = (options: RunNotificationsOptions): RunNotifications => {
  const { run, port } = options
  const delivery = resolveDelivery(options.option, options.shape)
  const target = resolveTarget(options.option, port.parentSession)
  const notifyOn = resolveNotifyOn([options.option?.notifyOn, ...(options.notifyOnLevels ?? [])], DEFAULT_WORKFLOW_NOTIFY_ON)
  const ledger = options.ledger ?? memoryPhaseLedger()
  const lookup = (childId: string | undefined) =>
    childId === undefined || options.questions === undefined
      ? Effect.succeed<ReadonlyArray<string>>([])
      : options.questions.unresolvedFrom(childId)
  return {
    delivery,
    target,
    summary: delivery === "off" ? undefined : { delivery, target },
    control: (signal) =>
      Effect.gen(function*() {
        if (!sendsControl(delivery)) return "mode-off" as const
        if (!intercomCarries(signal.event, notifyOn)) return "not-listed" as const
        if (target === undefined) return "no-target" as const
        const text = signal.event === "needs_attention"
          ? attentionText(run, signal.child, yield* lookup(signal.childId), signal.detail)
          : `Run ${run}: ${signal.child} ${signal.event.replaceAll("_", " ")}${signal.detail === undefined ? "" : ` (${signal.detail})`}.`
        yield* port.send(target, text, { wake: signal.event !== "active_long_running" })
        return "sent" as const
      }),
    result: (result) =>
      Effect.gen(function*() {
        const text = resultText(run, result)
        if (result.foreground) return { _tag: "Direct", text } satisfies ResultOutcome
        if (!sendsResult(delivery)) return { _tag: "NotSent", why: "mode" } satisfies ResultOutcome
        if (target === undefined) return { _tag: "NotSent", why: "no-target" } satisfies ResultOutcome
        const outcome = yield* deliver(
          {
            key: `${run}:result`,
            run,
            target,
            kind: "result",
            body: text,
            phases: [{ name: "message", run: port.send(target, text, { wake: true }) }]
          },
          ledger,
          options.retry
        )
        return { _tag: "Sent", delivery: outcome } satisfies ResultOutcome
      })
  }
}

const UNRESOLVED = new Set(["awaiting_input", "answer_pending"])

/**
 * A `QuestionLookup` over the client's `questions-v1` listing (the broker
 * owns the question store): pages through the owner's questions, which come
 * unresolved first, and keeps those of the child. A failed lookup is logged
 * and reads as none, so the notice still goes out.
 */
export const questionLookup = (
  questions: Pick<QuestionOperations, "listQuestions">,
  owner?: string
): QuestionLookup => ({
  unresolvedFrom: (childId) =>
    Effect.gen(function*() {
      const found: Array<string> = []
      let offset: number | undefined = 0
      while (offset !== undefined) {
        const page: QuestionPageWire = yield* questions.listQuestions({ offset, limit: 100, ...(owner === undefined ? {} : { owner }) })
        for (const q of page.questions) {
          if (!UNRESOLVED.has(q.state)) return found
          if (q.childId === childId) found.push(q.id)
        }
        offset = page.nextOffset
      }
      return found
    }).pipe(
      Effect.catch((error) =>
        Effect.as(Effect.logWarning(`Could not look up durable questions of ${childId}: ${error.message}`), [])
      )
    )
})
