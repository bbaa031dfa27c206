/**
 * The supervised-worker tool actions (C-WKR-2…10): `peek`, `steer`, and the
 * worker forms of `stop` and `result`, over the host's `Workers` port.
 *
 * `stop` and `result` already exist for durable questions and archived
 * reports; they are told apart by parameter, never by guessing (C-WKR-2):
 * `run` → the worker; `questionId` → the durable question (`stop`); `ref`
 * (`result:<UUID>`) → the archived report (`result`). It owns no state.
 */
import { Effect, Option } from "effect"
import type { ToolAction } from "./IntercomTool.ts"
import type { IntercomToolParams, ToolResult } from "./models.ts"
import {
  checkRunHandle,
  MissingInstruction,
  type SteerReceipt,
  type StopReceipt,
  WorkerAddressInvalid,
  type WorkerResult,
  Workers,
  type WorkersService,
  type WorkerView
} from "./Workers.ts"

const ok = (text: string, details: Record<string, unknown>): ToolResult => ({ text, isError: false, details })

/** What every receipt of a running worker adds (C-WKR-10). */
export const WAKE_NOTE = "Its completion wakes you automatically: end your turn instead of polling or sleeping."

/**
 * The `peek` text (C-WKR-1, C-WKR-3, C-WKR-6).
 *
 * @category rendering
 * @since 0.1.0
 */
export const renderPeek = (view: WorkerView): string =>
  [
    `Worker ${view.run}: ${view.state}${view.outcome === undefined ? "" : ` (${view.outcome})`} — ${view.summary}`,
    `Bus handle: ${view.busHandle ?? "none (steer, stop and result still work with the run handle)"}`,
    ...(view.model === undefined ? [] : [`Model: ${view.model}`]),
    `Thinking: requested ${view.requestedThinking ?? "not set"}; observed ${view.observedThinking ?? "not reported"}`,
    "Peeking changed nothing."
  ].join("\n")

/**
 * The `steer` receipt text: acceptance only (C-WKR-4, C-WKR-16).
 *
 * @category rendering
 * @since 0.1.0
 */
export const renderSteer = (receipt: SteerReceipt): string =>
  `Steer accepted for ${receipt.run} (${receipt.steerId}): it is queued for the worker. ` +
  `This proves acceptance only, not that the worker has read or acted on it. ${WAKE_NOTE}`

/**
 * The `stop` text (C-WKR-5).
 *
 * @category rendering
 * @since 0.1.0
 */
export const renderStop = (receipt: StopReceipt): string =>
  receipt.alreadySettled
    ? `Worker ${receipt.run} had already settled; nothing was stopped.`
    : `Worker ${receipt.run} stopped.`

/**
 * The live `result` text.
 *
 * @category rendering
 * @since 0.1.0
 */
export const renderResult = (result: WorkerResult): string => {
  const head = result.settled
    ? `Worker ${result.run} ${result.outcome ?? "settled"}. Its result:`
    : `Worker ${result.run} is still running; its output so far (not a final result):`
  const tail = result.settled
    ? result.resultRef === undefined ? [] : [`Archived as ${result.resultRef}.`]
    : [WAKE_NOTE]
  return [head, "", result.text, ...(tail.length === 0 ? [] : ["", ...tail])].join("\n")
}

const noWorkers = (action: string) =>
  new WorkerAddressInvalid({
    detail: `This session supervises no workers, so there is nothing to ${action}. ` +
      "Worker operations run in the session that delegated the work (its pi session, or the engine's)."
  })

const handle = (action: string, params: IntercomToolParams) => {
  const checked = checkRunHandle(action, params.run)
  return typeof checked === "string" ? Effect.succeed(checked) : Effect.fail(checked)
}

/**
 * The worker actions over `workers` (none: each says there are no workers),
 * and `stop`/`result` dispatching by parameter to `base`'s question and
 * archive actions.
 *
 * @category constructors
 * @since 0.1.0
 */
export const workerToolActions = (
  workers: Option.Option<WorkersService>,
  base: ReadonlyMap<string, ToolAction>
): ReadonlyMap<string, ToolAction> => {
  const withWorkers = (action: string, params: IntercomToolParams) =>
    Effect.flatMap(handle(action, params), (run) =>
      Option.match(workers, {
        onNone: () => Effect.fail(noWorkers(action)),
        onSome: (service) => Effect.succeed({ run, service })
      }))
  const peek: ToolAction = (params) =>
    Effect.flatMap(withWorkers("peek", params), ({ run, service }) =>
      Effect.map(service.peek(run), (view) => ok(renderPeek(view), { worker: view })))
  const steer: ToolAction = (params) =>
    Effect.gen(function*() {
      const { run, service } = yield* withWorkers("steer", params)
      const instruction = params.message?.trim() ?? ""
      if (instruction === "") return yield* new MissingInstruction()
      const receipt = yield* service.steer(run, instruction)
      return ok(renderSteer(receipt), { ...receipt, accepted: true, actedOn: false })
    })
  const stopWorker: ToolAction = (params) =>
    Effect.flatMap(withWorkers("stop", params), ({ run, service }) =>
      Effect.map(service.stop(run), (receipt) => ok(renderStop(receipt), { ...receipt })))
  const liveResult: ToolAction = (params) =>
    Effect.flatMap(withWorkers("result", params), ({ run, service }) =>
      Effect.map(service.result(run), (result) => ok(renderResult(result), { ...result })))
  /** The other form's parameters that a call with `run` must not carry (C-WKR-2: never mixed). */
  const otherForm = (name: string, params: IntercomToolParams): string | undefined => {
    if (name === "stop") return params.questionId === undefined ? undefined : "questionId"
    if (params.ref !== undefined) return "ref"
    if (params.offset !== undefined) return "offset"
    return params.limit === undefined ? undefined : "limit"
  }
  const byParam = (name: string, worker: ToolAction): ToolAction => (params) => {
    if (params.run !== undefined) {
      const mixed = otherForm(name, params)
      if (mixed !== undefined) {
        return Effect.fail(
          new WorkerAddressInvalid({
            detail: `${name} takes either run (a worker) or ${name === "stop" ? "questionId (a durable question)" : "ref (an archived report, paged with offset and limit)"}, not both: '${mixed}' was given with 'run'.`
          })
        )
      }
      return worker(params)
    }
    const fallback = base.get(name)
    return fallback === undefined ? worker(params) : fallback(params)
  }
  return new Map<string, ToolAction>([
    ["peek", peek],
    ["steer", steer],
    ["stop", byParam("stop", stopWorker)],
    ["result", byParam("result", liveResult)]
  ])
}

/**
 * The worker actions with the `Workers` port the host supplied, if any.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeWorkerToolActions = (
  base: ReadonlyMap<string, ToolAction>
): Effect.Effect<ReadonlyMap<string, ToolAction>> =>
  Effect.map(Effect.serviceOption(Workers), (workers) => workerToolActions(workers, base))
