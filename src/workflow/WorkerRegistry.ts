/**
 * `WorkerRegistry`: a ready-made implementation of the session runtime's
 * `Workers` port for an engine (C-WKR-2…10). It owns the supervised workers
 * of one supervisor: their run handles (`run-1`, `run-2`, … in registration
 * order, never reused), state, queued steers and final results. All of it
 * lives in one `Ref`, changed only by atomic `Ref.modify` steps, so a steer
 * and a settle racing each other have one order: a steer either lands before
 * the worker settled or fails with `WorkerSettled`, never both.
 *
 * The engine registers a worker with how to stop it and what to do when it
 * settles (say, `RunNotifications.result`, which wakes the supervisor,
 * C-WKR-10), and gets the worker's side back: `report` progress, `takeSteers`
 * (the instructions queued since the last take), `settle`. `workers` is the
 * supervisor's side, to provide as the `Workers` service.
 */
import { Clock, Effect, Ref } from "effect"
import {
  type SteerReceipt,
  WorkerInboxFull,
  type WorkerResult,
  type WorkersService,
  WorkerSettled,
  WorkerUnknown,
  type WorkerView
} from "../session/Workers.ts"

/** How a worker ended. */
export type WorkerOutcome = "completed" | "failed" | "stopped"

/** What the engine tells the registry about a new worker. */
export interface WorkerRegistration {
  /** What it is doing, for `peek`. */
  readonly summary: string
  /** Its live bus handle, if it has one (C-WKR-6: it need not). */
  readonly busHandle?: string | undefined
  readonly model?: string | undefined
  readonly requestedThinking?: string | undefined
  /** Stops its work (interrupt its fiber, abort its process); run once, by `stop`. */
  readonly stop: Effect.Effect<void>
  /** Runs once when it settles, with its result: deliver it to the supervisor (C-WKR-10). */
  readonly onSettled?: ((result: WorkerResult) => Effect.Effect<void>) | undefined
}

/** One queued instruction, as the worker takes it. */
export interface QueuedSteer {
  readonly steerId: string
  readonly instruction: string
}

/** The worker's side of the registry. */
export interface WorkerHandle {
  /** The run handle (`run-3`). */
  readonly run: string
  /** Updates what `peek` shows; `output` replaces the live output `result` shows. */
  readonly report: (update: {
    readonly summary?: string | undefined
    readonly state?: "running" | "waiting" | undefined
    readonly observedThinking?: string | undefined
    readonly output?: string | undefined
    /** Questions it has asked and not had answered: they count toward a full inbox (C-WKR-9). */
    readonly pendingQuestions?: number | undefined
  }) => Effect.Effect<void>
  /** The instructions queued since the last take, oldest first. */
  readonly takeSteers: Effect.Effect<ReadonlyArray<QueuedSteer>>
  /** Settles it (the first call wins) and runs `onSettled`. */
  readonly settle: (outcome: WorkerOutcome, text: string, resultRef?: string) => Effect.Effect<void>
}

/** A registry: the engine's side (`register`) and the supervisor's (`workers`). */
export interface WorkerRegistry {
  readonly register: (registration: WorkerRegistration) => Effect.Effect<WorkerHandle>
  readonly workers: WorkersService
}

/** Options of {@link makeWorkerRegistry}. */
export interface WorkerRegistryOptions {
  /** Queued steers plus pending questions at which a steer is refused (C-WKR-9); default 8. */
  readonly inboxLimit?: number | undefined
}

interface Entry {
  readonly registration: WorkerRegistration
  readonly view: WorkerView
  readonly output: string
  readonly steers: ReadonlyArray<QueuedSteer>
  readonly steerCount: number
  readonly pendingQuestions: number
  readonly resultRef: string | undefined
}

interface State {
  readonly next: number
  readonly entries: ReadonlyMap<string, Entry>
}

const withEntry = (state: State, run: string, entry: Entry): State => ({
  ...state,
  entries: new Map(state.entries).set(run, entry)
})

const resultOf = (run: string, entry: Entry): WorkerResult => ({
  run,
  settled: entry.view.state === "settled",
  outcome: entry.view.outcome,
  text: entry.output,
  ...(entry.resultRef === undefined ? {} : { resultRef: entry.resultRef })
})

/** Makes an empty registry (see the module header). */
export const makeWorkerRegistry = (options: WorkerRegistryOptions = {}): Effect.Effect<WorkerRegistry> =>
  Effect.gen(function*() {
    const inboxLimit = options.inboxLimit ?? 8
    const state = yield* Ref.make<State>({ next: 1, entries: new Map() })
    const find = (run: string) =>
      Effect.flatMap(Ref.get(state), (s) => {
        const entry = s.entries.get(run)
        return entry === undefined ? Effect.fail(new WorkerUnknown({ run })) : Effect.succeed(entry)
      })

    /** Settles `run` once; returns the result when this call settled it. */
    const settleOnce = (run: string, outcome: WorkerOutcome, text: string | undefined, resultRef?: string) =>
      Ref.modify(state, (s): readonly [{ entry: Entry; result: WorkerResult } | undefined, State] => {
        const entry = s.entries.get(run)
        if (entry === undefined || entry.view.state === "settled") return [undefined, s]
        const settled: Entry = {
          ...entry,
          view: { ...entry.view, state: "settled", outcome },
          output: text ?? entry.output,
          steers: [],
          resultRef
        }
        return [{ entry: settled, result: resultOf(run, settled) }, withEntry(s, run, settled)]
      })

    const afterSettle = (done: { entry: Entry; result: WorkerResult } | undefined) =>
      done === undefined || done.entry.registration.onSettled === undefined
        ? Effect.void
        : done.entry.registration.onSettled(done.result)

    const register = (registration: WorkerRegistration): Effect.Effect<WorkerHandle> =>
      Effect.gen(function*() {
        const run = yield* Ref.modify(state, (s): readonly [string, State] => {
          const id = `run-${s.next}`
          const entry: Entry = {
            registration,
            view: {
              run: id,
              state: "running",
              summary: registration.summary,
              busHandle: registration.busHandle,
              model: registration.model,
              requestedThinking: registration.requestedThinking
            },
            output: "",
            steers: [],
            steerCount: 0,
            pendingQuestions: 0,
            resultRef: undefined
          }
          return [id, withEntry({ ...s, next: s.next + 1 }, id, entry)]
        })
        return {
          run,
          report: (update) =>
            Ref.update(state, (s) => {
              const entry = s.entries.get(run)
              if (entry === undefined || entry.view.state === "settled") return s
              return withEntry(s, run, {
                ...entry,
                view: {
                  ...entry.view,
                  ...(update.summary === undefined ? {} : { summary: update.summary }),
                  ...(update.state === undefined ? {} : { state: update.state }),
                  ...(update.observedThinking === undefined ? {} : { observedThinking: update.observedThinking })
                },
                output: update.output ?? entry.output,
                pendingQuestions: update.pendingQuestions ?? entry.pendingQuestions
              })
            }),
          takeSteers: Ref.modify(state, (s): readonly [ReadonlyArray<QueuedSteer>, State] => {
            const entry = s.entries.get(run)
            if (entry === undefined || entry.steers.length === 0) return [[], s]
            return [entry.steers, withEntry(s, run, { ...entry, steers: [] })]
          }),
          settle: (outcome, text, resultRef) => Effect.flatMap(settleOnce(run, outcome, text, resultRef), afterSettle)
        }
      })

    const workers: WorkersService = {
      // C-WKR-3: a read of the state, nothing else.
      peek: (run) => Effect.map(find(run), (entry) => entry.view),
      steer: (run, instruction) =>
        Effect.gen(function*() {
          const acceptedAt = yield* Clock.currentTimeMillis
          const outcome = yield* Ref.modify(
            state,
            (s): readonly [SteerReceipt | WorkerUnknown | WorkerSettled | WorkerInboxFull, State] => {
              const entry = s.entries.get(run)
              if (entry === undefined) return [new WorkerUnknown({ run }), s]
              if (entry.view.state === "settled") {
                return [new WorkerSettled({ run, outcome: entry.view.outcome ?? "completed" }), s]
              }
              const pending = entry.steers.length + entry.pendingQuestions
              if (pending >= inboxLimit) {
                return [new WorkerInboxFull({ run, pending, queuedSteers: entry.steers.length }), s]
              }
              const steerId = `${run}-steer-${entry.steerCount + 1}`
              const next: Entry = {
                ...entry,
                steers: [...entry.steers, { steerId, instruction }],
                steerCount: entry.steerCount + 1
              }
              return [{ run, steerId, acceptedAt }, withEntry(s, run, next)]
            }
          )
          return "steerId" in outcome ? outcome : yield* Effect.fail(outcome)
        }),
      stop: (run) =>
        Effect.gen(function*() {
          const entry = yield* find(run)
          const done = yield* settleOnce(run, "stopped", undefined)
          if (done === undefined) return { run, alreadySettled: true }
          yield* entry.registration.stop
          yield* afterSettle(done)
          return { run, alreadySettled: false }
        }),
      result: (run) => Effect.map(find(run), (entry) => resultOf(run, entry))
    }
    return { register, workers }
  })
