/**
 * The supervisor-side provider for launcher extensions (C-SUP-7), on pi's
 * shared `EventBus` (`pi.events`): a launcher that is about to start a
 * delegated child emits `AUTHORIZE_CHILD_EVENT` with the child's launch and a
 * `respond` callback; this package's extension asks the broker for a
 * capability bound to the child's name, through the pi session's own
 * intercom client (registered with a private owner token), and responds with
 * the environment to start the child with, or an error.
 *
 * pi's bus has no replies: `emit` calls every handler synchronously and
 * returns nothing. So the request carries `claim`, which a provider calls
 * synchronously in its handler (before any `await`), and `respond`, which it
 * calls exactly once, later or at once. `requestChildAuthorization` wraps
 * both into one promise: `undefined` when no provider claimed the request.
 *
 * Types and a pure helper only; nothing here loads the session runtime.
 */
import type { ChildLaunchRequest } from "../session/SupervisorLaunch.ts"

/**
 * The `pi.events` channel a launcher emits an `AuthorizeChildRequest` on.
 *
 * @example
 * ```ts
 * import type { ExtensionAPI } from "@earendil-works/pi-coding-agent"
 * import { AUTHORIZE_CHILD_EVENT, type AuthorizeChildResult } from "effect-intercom/pi"
 *
 * export default function launcher(pi: ExtensionAPI): void {
 *   const authorize = (runId: string) =>
 *     new Promise<AuthorizeChildResult | undefined>((resolve) => {
 *       let claimed = false
 *       pi.events.emit(AUTHORIZE_CHILD_EVENT, {
 *         launch: { runId, agent: "worker", index: 0 },
 *         claim: () => void (claimed = true),
 *         respond: resolve
 *       })
 *       if (!claimed) resolve(undefined) // no provider: launch without supervisor metadata
 *     })
 * }
 * ```
 *
 * @category supervisor
 * @since 0.1.0
 */
export const AUTHORIZE_CHILD_EVENT = "intercom:authorize-child"

/**
 * The answer to an `AuthorizeChildRequest`. `ok`: start the child with `env`
 * (the base environment without inherited bridge or grant variables, plus this
 * child's metadata and grant); it registers as `sessionName`. Not `ok`: the
 * broker refused or could not be reached — do not start the child (C-SUP-7).
 *
 * @category supervisor
 * @since 0.1.0
 */
export type AuthorizeChildResult =
  | { readonly ok: true; readonly sessionName: string; readonly env: Record<string, string> }
  | { readonly ok: false; readonly error: string }

/**
 * The payload of `AUTHORIZE_CHILD_EVENT`.
 *
 * @category supervisor
 * @since 0.1.0
 */
export interface AuthorizeChildRequest {
  /** The child: run id, agent, 0-based index, optional name, group and supervisor target (default: this session's id). */
  readonly launch: ChildLaunchRequest
  /** The environment to derive the child's from; default the pi process's `process.env`. */
  readonly base?: Readonly<Record<string, string | undefined>> | undefined
  /** Called synchronously by the provider that takes the request. */
  readonly claim?: (() => void) | undefined
  /** Called exactly once with the answer. */
  readonly respond: (result: AuthorizeChildResult) => void
}

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null

const optionalString = (value: unknown): value is string | undefined => value === undefined || typeof value === "string"

const isLaunch = (value: unknown): value is ChildLaunchRequest =>
  isRecord(value) && typeof value["runId"] === "string" && typeof value["agent"] === "string" &&
  typeof value["index"] === "number" && Number.isSafeInteger(value["index"]) && value["index"] >= 0 &&
  optionalString(value["sessionName"]) && optionalString(value["group"]) && optionalString(value["supervisorTarget"])

const isEnvironment = (value: unknown): value is Readonly<Record<string, string | undefined>> =>
  isRecord(value) && Object.values(value).every(optionalString)

const isCallback = (value: unknown): value is (result: AuthorizeChildResult) => void => typeof value === "function"

/**
 * Reads an `AUTHORIZE_CHILD_EVENT` payload (pi's bus types it `unknown`):
 * the request, or why it is malformed (with its `respond`, when it has one, to
 * answer the error to).
 *
 * @category supervisor
 * @since 0.1.0
 */
export const readAuthorizeChildRequest = (
  data: unknown
):
  | { readonly _tag: "Request"; readonly request: AuthorizeChildRequest }
  | { readonly _tag: "Malformed"; readonly error: string; readonly respond: ((result: AuthorizeChildResult) => void) | undefined } =>
{
  if (!isRecord(data)) return { _tag: "Malformed", error: "not an object", respond: undefined }
  const respond = data["respond"]
  const claim = data["claim"]
  if (!isCallback(respond)) return { _tag: "Malformed", error: "respond is not a function", respond: undefined }
  const launch = data["launch"]
  if (!isLaunch(launch)) {
    return { _tag: "Malformed", error: "launch needs runId, agent (strings) and index (a non-negative integer)", respond }
  }
  const base = data["base"]
  if (base !== undefined && !isEnvironment(base)) {
    return { _tag: "Malformed", error: "base must map names to strings", respond }
  }
  return {
    _tag: "Request",
    request: {
      launch,
      base,
      claim: typeof claim === "function" ? () => void claim() : undefined,
      respond
    }
  }
}

/**
 * Emits an `AUTHORIZE_CHILD_EVENT` on `events` (an extension's `pi.events`)
 * and resolves with the provider's answer, or `undefined` when no provider
 * took it (the host has no intercom extension: start the child without
 * supervisor metadata, C-SUP-7).
 *
 * @example
 * ```ts
 * import type { ExtensionAPI } from "@earendil-works/pi-coding-agent"
 * import { spawn } from "node:child_process"
 * import { requestChildAuthorization } from "effect-intercom/pi"
 *
 * export default function launcher(pi: ExtensionAPI): void {
 *   const launch = async (task: string) => {
 *     const result = await requestChildAuthorization(pi.events, { runId: "78f659a3", agent: "worker", index: 0 })
 *     if (result !== undefined && !result.ok) throw new Error(`not launched: ${result.error}`)
 *     spawn("pi", ["--mode", "json", task], { env: result?.env ?? process.env, stdio: "ignore" })
 *   }
 * }
 * ```
 *
 * @category supervisor
 * @since 0.1.0
 */
export const requestChildAuthorization = (
  events: { readonly emit: (channel: string, data: unknown) => void },
  launch: ChildLaunchRequest,
  base?: Readonly<Record<string, string | undefined>>
): Promise<AuthorizeChildResult | undefined> =>
  new Promise((resolve) => {
    let claimed = false
    const request: AuthorizeChildRequest = {
      launch,
      base,
      claim: () => void (claimed = true),
      respond: resolve
    }
    events.emit(AUTHORIZE_CHILD_EVENT, request)
    if (!claimed) resolve(undefined)
  })
