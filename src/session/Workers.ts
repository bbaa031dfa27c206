/**
 * `Workers`: the port through which a supervisor's session reaches the
 * workers it delegated to (C-WKR-2…10). The engine that runs the workers
 * implements it — a workflow engine, a pi host that launches subagents —
 * and the session runtime turns it into the tool actions `peek`, `steer`,
 * `stop` and live `result` (`WorkerActions.ts`), so the pi tool and the CLI
 * get them. Without the port those actions say that this session supervises
 * no workers.
 *
 * Addresses are never swapped (C-WKR-2): these operations take the **run
 * handle** from the delegation receipt (`run-3`); `send` takes a live **bus
 * handle** from `list` (`operator#3`); an archived report is `result:<UUID>`.
 * `checkRunHandle` refuses the other two kinds here, before the port is asked.
 *
 * This module owns the contract, not the workers: the port's errors carry
 * the texts the tool shows (which failure it was, and what to do instead).
 */
import { Context, Data, type Effect } from "effect"
import { RESULT_REF_PREFIX } from "../protocol/results.ts"

/**
 * One worker as `peek` sees it (C-WKR-1, C-WKR-3, C-WKR-6).
 *
 * @category models
 * @since 0.1.0
 */
export interface WorkerView {
  /** The run handle (`run-3`). */
  readonly run: string
  /** `running`, `waiting` (on a question or input) or `settled`. */
  readonly state: "running" | "waiting" | "settled"
  /** What it is doing or unsure about, in the engine's words. */
  readonly summary: string
  /** Its live bus handle, when it has one: a worker can be steered without one (C-WKR-6). */
  readonly busHandle?: string | undefined
  /** The model, as chosen (an explicit provider choice kept) (C-WKR-1). */
  readonly model?: string | undefined
  /** The thinking level that was asked for (C-WKR-1). */
  readonly requestedThinking?: string | undefined
  /** The thinking level the provider reported, when it did; never inferred from a label (C-WKR-1). */
  readonly observedThinking?: string | undefined
  /** How it settled, for a settled worker. */
  readonly outcome?: "completed" | "failed" | "stopped" | undefined
}

/**
 * The receipt of `steer`: the instruction was accepted into the worker's
 * queue — not that the worker read it or acted on it (C-WKR-4, C-WKR-16).
 *
 * @category models
 * @since 0.1.0
 */
export interface SteerReceipt {
  readonly run: string
  /** The engine's id for the queued instruction. */
  readonly steerId: string
  /** When it was accepted (ms). */
  readonly acceptedAt: number
}

/**
 * The receipt of `stop` (C-WKR-5).
 *
 * @category models
 * @since 0.1.0
 */
export interface StopReceipt {
  readonly run: string
  /** True when the worker had already settled: nothing was stopped. */
  readonly alreadySettled: boolean
}

/**
 * A worker's live result: its output so far, or its final report once
 * settled (C-WKR-2). The archived copy, if any, is `resultRef`.
 *
 * @category models
 * @since 0.1.0
 */
export interface WorkerResult {
  readonly run: string
  readonly settled: boolean
  readonly outcome?: "completed" | "failed" | "stopped" | undefined
  readonly text: string
  /** `result:<UUID>` of the archived report, once there is one. */
  readonly resultRef?: string | undefined
}

/**
 * No worker has this run handle (C-WKR-9: an unknown handle).
 *
 * @category errors
 * @since 0.1.0
 */
export class WorkerUnknown extends Data.TaggedError("WorkerUnknown")<{ readonly run: string }> {
  override get message(): string {
    return `Unknown worker run handle "${this.run}": nothing was sent. Use the run handle from the delegation receipt (e.g. run-3).`
  }
}

/**
 * The worker has settled and cannot be steered (C-WKR-7).
 *
 * @category errors
 * @since 0.1.0
 */
export class WorkerSettled extends Data.TaggedError("WorkerSettled")<{
  readonly run: string
  readonly outcome: "completed" | "failed" | "stopped"
}> {
  override get message(): string {
    return `Worker ${this.run} has settled (${this.outcome}) and cannot be steered; nothing was sent. ` +
      `Read its result (result with run ${this.run}) and delegate a new task.`
  }
}

/**
 * The worker's inbox is full (C-WKR-9): `pending` items, of them
 * `queuedSteers` instructions it has not taken yet (0 when not told) and the
 * rest questions it has not had answered. The message names what fills it.
 *
 * @category errors
 * @since 0.1.0
 */
export class WorkerInboxFull extends Data.TaggedError("WorkerInboxFull")<{
  readonly run: string
  readonly pending: number
  readonly queuedSteers?: number | undefined
}> {
  override get message(): string {
    const steers = this.queuedSteers ?? 0
    if (steers === 0) {
      return `Worker ${this.run}'s inbox is full of pending questions (${this.pending}); nothing was delivered. ` +
        "Answer or wait for them first."
    }
    const questions = this.pending - steers
    return `Worker ${this.run}'s inbox is full (${steers} queued instruction(s) it has not taken yet` +
      `${questions > 0 ? `, ${questions} pending question(s)` : ""}); nothing was delivered. ` +
      `Wait for the worker to take its queued instructions${questions > 0 ? " or answer its questions" : ""} first.`
  }
}

/**
 * The engine could not do the operation for another reason (its own words).
 *
 * @category errors
 * @since 0.1.0
 */
export class WorkerOperationFailed extends Data.TaggedError("WorkerOperationFailed")<{
  readonly run: string
  readonly detail: string
}> {
  override get message(): string {
    return `Worker ${this.run}: ${this.detail}`
  }
}

/**
 * The address is not a run handle, or this session supervises no workers.
 *
 * @category errors
 * @since 0.1.0
 */
export class WorkerAddressInvalid extends Data.TaggedError("WorkerAddressInvalid")<{ readonly detail: string }> {
  override get message(): string {
    return this.detail
  }
}

/**
 * `steer` without an instruction (`message`); nothing was sent.
 *
 * @category errors
 * @since 0.1.0
 */
export class MissingInstruction extends Data.TaggedError("MissingInstruction")<{}> {
  override get message(): string {
    return "Missing 'message' parameter for action 'steer'."
  }
}

/**
 * How a worker operation fails.
 *
 * @category errors
 * @since 0.1.0
 */
export type WorkerFailure =
  | WorkerUnknown
  | WorkerSettled
  | WorkerInboxFull
  | WorkerOperationFailed
  | WorkerAddressInvalid
  | MissingInstruction

/**
 * What an engine implements (see the module header). `peek` must not change
 * the worker (C-WKR-3).
 *
 * @category models
 * @since 0.1.0
 */
export interface WorkersService {
  readonly peek: (run: string) => Effect.Effect<WorkerView, WorkerUnknown | WorkerOperationFailed>
  /** Queues `instruction`; a settled worker fails with `WorkerSettled` (C-WKR-7). */
  readonly steer: (run: string, instruction: string) => Effect.Effect<SteerReceipt, WorkerFailure>
  readonly stop: (run: string) => Effect.Effect<StopReceipt, WorkerUnknown | WorkerOperationFailed>
  readonly result: (run: string) => Effect.Effect<WorkerResult, WorkerUnknown | WorkerOperationFailed>
}

/**
 * The workers port of a supervising session.
 *
 * @category services
 * @since 0.1.0
 */
export class Workers extends Context.Service<Workers, WorkersService>()("effect-intercom/session/Workers") {}

/**
 * Checks that `value` can be a run handle (C-WKR-2): not blank, not a bus
 * handle (`name#n`, for `send`), not an archived `result:<UUID>`. Returns
 * the trimmed handle, or the error saying which address kind it was.
 *
 * @category validation
 * @since 0.1.0
 */
export const checkRunHandle = (action: string, value: string | undefined): string | WorkerAddressInvalid => {
  const run = value?.trim() ?? ""
  if (run === "") {
    return new WorkerAddressInvalid({
      detail: `Missing 'run' parameter for action '${action}': the run handle from the delegation receipt (e.g. run-3).`
    })
  }
  if (run.startsWith(RESULT_REF_PREFIX)) {
    return new WorkerAddressInvalid({
      detail: `${run} names stored evidence, not a live worker: read it with result and ref "${run}".`
    })
  }
  if (run.includes("#")) {
    return new WorkerAddressInvalid({
      detail: `${run} is a bus handle (from list); ${action} takes the worker's run handle from the delegation receipt (e.g. run-3). ` +
        "Use send to message a bus handle."
    })
  }
  return run
}
