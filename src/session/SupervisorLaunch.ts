/**
 * The supervisor side of the supervisor channel, for a launcher (C-SUP-7):
 * before starting a delegated child, ask the broker for a capability bound to
 * the child's intercom name and build the environment to start the child
 * with — its bridge metadata and its grant, and nothing a grandchild could
 * inherit from this process (C-SUP-16).
 *
 * The supervisor's `IntercomClient` must be made with `ownerToken`; it keeps
 * every grant and restores it after a reconnect (C-SUP-15).
 */
import { Effect } from "effect"
import type { ConnectionLost, IntercomNotConnected, RequestTimeout, SupervisorAuthorizationFailed } from "../client/errors.ts"
import { IntercomClient } from "../client/IntercomClient.ts"
import { type BridgeEnvironment, childEnvironment, type ChildLaunch, childSessionName, type SupervisorGrant } from "./supervisorBridge.ts"

/**
 * A child that may be started: the name it registers under, the grant the
 * broker issued for that name, and the environment to start it with.
 *
 * @category models
 * @since 0.1.0
 */
export interface AuthorizedChild {
  /** The intercom name the capability is bound to (`childSessionName`). */
  readonly sessionName: string
  readonly grant: SupervisorGrant
  /** `base` without inherited bridge or grant variables, plus this child's (`childEnvironment`). */
  readonly env: Record<string, string>
}

/**
 * What `authorizeChild` needs to know about the child: `ChildLaunch`, whose
 * `supervisorTarget` defaults to this supervisor's session id.
 *
 * @category models
 * @since 0.1.0
 */
export type ChildLaunchRequest = Omit<ChildLaunch, "supervisorTarget"> & {
  readonly supervisorTarget?: string | undefined
}

/**
 * Why a child could not be authorized: the broker refused (no `ownerToken`,
 * too many capabilities, …), or the client could not reach it. Do not start
 * the child then (C-SUP-7).
 *
 * @category errors
 * @since 0.1.0
 */
export type AuthorizeChildError = SupervisorAuthorizationFailed | IntercomNotConnected | RequestTimeout | ConnectionLost

/**
 * Authorizes a child with the broker (`IntercomClient.authorizeChild` for
 * `childSessionName(launch)`) and returns the environment to start it with
 * (`childEnvironment(base, …)`; `base` defaults to `process.env`). The child,
 * a pi session with this package's extension or any program that reads
 * `readChildBridge(process.env)`, registers under that name with the grant
 * and gets `contact_supervisor`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { spawn } from "node:child_process"
 * import { authorizeChild } from "effect-intercom/session"
 *
 * const launch = Effect.gen(function*() {
 *   const child = yield* authorizeChild({ runId: "78f659a3", agent: "worker", index: 0 })
 *   // child.sessionName === "subagent-worker-78f659a3-1"
 *   spawn("pi", ["--mode", "json", "Fix the flaky test"], { env: child.env, stdio: "inherit" })
 * })
 * // provide an IntercomClient made with an ownerToken
 * ```
 *
 * @category launcher
 * @since 0.1.0
 */
export const authorizeChild = (
  launch: ChildLaunchRequest,
  base: BridgeEnvironment = process.env
): Effect.Effect<AuthorizedChild, AuthorizeChildError, IntercomClient> =>
  Effect.gen(function*() {
    const client = yield* IntercomClient
    const sessionName = childSessionName({ ...launch, supervisorTarget: "" })
    const issued = yield* client.authorizeChild(sessionName)
    const grant: SupervisorGrant = { capability: issued.capability, supervisorSessionId: issued.supervisorSessionId }
    const full: ChildLaunch = { ...launch, supervisorTarget: launch.supervisorTarget ?? grant.supervisorSessionId, sessionName }
    return { sessionName, grant, env: childEnvironment(base, full, grant) }
  })
