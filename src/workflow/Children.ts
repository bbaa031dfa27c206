/**
 * Delegated children, the engine-facing service that decides how a child
 * is launched: its group (C-GRP-10, C-GRP-11) and, for a child that can use
 * intercom, the supervisor capability and bridge environment (C-SUP-7,
 * C-SUP-16) built by the session runtime's launcher (`authorizeChild`,
 * `childEnvironment`).
 *
 * - An intercom-capable child with an authorizer: the broker is asked for a
 *   capability bound to the child's name; if that fails the launch fails
 *   and the child must not be started (C-SUP-7).
 * - An intercom-capable child without an authorizer (the host has no
 *   supervisor provider): it gets its group but no bridge metadata, so a
 *   broken supervisor channel is never exposed.
 * - A child that cannot use intercom: no group, no metadata.
 *
 * In every case inherited bridge and grant variables are removed: a
 * grandchild never inherits its parent's capability (C-SUP-16). Call
 * `launch` only for a child that is actually starting: one still queued
 * behind a concurrency limit requests no capability (C-SUP-7).
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"
import { IntercomClient } from "../client/IntercomClient.ts"
import { type AuthorizeChildError, authorizeChild, type AuthorizedChild, type ChildLaunchRequest } from "../session/SupervisorLaunch.ts"
import {
  type BridgeEnvironment,
  childSessionName,
  SUBAGENT_BRIDGE_ENV,
  type SupervisorGrant
} from "../session/supervisorBridge.ts"
import type { UnknownWorkflowItem } from "./errors.ts"
import { type GroupDecision, type GroupOption, resolveChildGroup, type ToolAccess } from "./groupResolution.ts"
import { Runs } from "./Runs.ts"

/**
 * What an engine says about a child it is starting.
 *
 * @category models
 * @since 0.1.0
 */
export interface ChildSpec {
  readonly runId: string
  readonly agent: string
  /** 0-based position of the child within its run. */
  readonly index: number
  /** The parallel set the child is an item of, if any (a generated group is shared by the set). */
  readonly parallelSetId?: string | undefined
  /** The child's intercom name; default its deterministic target (C-SUP-6). */
  readonly sessionName?: string | undefined
  /** The subagent's explicit `group` option (C-GRP-10). */
  readonly group?: GroupOption
  /** The launching session's own group, read from that session (C-GRP-10). */
  readonly launcherGroup?: string | undefined
  /** The supervisor target the child's metadata names; default the supervisor's session id. */
  readonly supervisorTarget?: string | undefined
  /** The child's tools; only an intercom-capable child gets a group or a grant (C-GRP-11). Default: every tool. */
  readonly tools?: ToolAccess | undefined
}

/**
 * How to start a child.
 *
 * @category models
 * @since 0.1.0
 */
export interface LaunchedChild {
  /** The intercom name the child registers under. */
  readonly sessionName: string
  /** Its home group (set as `ATOMIC_INTERCOM_GROUP` in `env`), or `undefined` for none. */
  readonly group: string | undefined
  readonly decision: GroupDecision
  /** The broker's grant, when the child was authorized. */
  readonly grant: SupervisorGrant | undefined
  /** The environment to start the child with. */
  readonly env: Record<string, string>
}

/**
 * Asks the broker for a child's capability and builds its environment
 * (`authorizeChild` over a supervisor's `IntercomClient`).
 *
 * @category ports
 * @since 0.1.0
 */
export type ChildAuthorizer = (
  launch: ChildLaunchRequest,
  base: BridgeEnvironment
) => Effect.Effect<AuthorizedChild, AuthorizeChildError>

/**
 * Options of `Children.make`.
 *
 * @category models
 * @since 0.1.0
 */
export interface ChildrenOptions {
  /** Absent when the host has no supervisor provider: children then get no bridge metadata. */
  readonly authorize?: ChildAuthorizer | undefined
  /** The environment children start from; default `process.env`. */
  readonly env?: BridgeEnvironment | undefined
  /** The config file's `group`, the last level before `default` (C-GRP-10). */
  readonly configGroup?: string | undefined
}

/**
 * The `Children` service (see the module header).
 *
 * @category models
 * @since 0.1.0
 */
export interface ChildrenService {
  /** Decides how to start a child; fails (start nothing) when its authorization fails. */
  readonly launch: (spec: ChildSpec) => Effect.Effect<LaunchedChild, AuthorizeChildError | UnknownWorkflowItem>
}

const GROUP_ENV = ["ATOMIC_INTERCOM_GROUP", "PI_INTERCOM_GROUP"] as const

/** `base` without any bridge or grant variable (C-SUP-16), with `group` as the child's group when given. */
const plainEnvironment = (base: BridgeEnvironment, group: string | undefined): Record<string, string> => {
  const cleared = new Set<string>([...Object.values(SUBAGENT_BRIDGE_ENV).flat(), ...(group === undefined ? [] : GROUP_ENV)])
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(base)) {
    if (value !== undefined && !cleared.has(name)) env[name] = value
  }
  if (group !== undefined) env[GROUP_ENV[0]] = group
  return env
}

const make = (options: ChildrenOptions = {}): Effect.Effect<ChildrenService, never, Runs> =>
  Effect.gen(function*() {
    const runs = yield* Runs
    const base = options.env ?? process.env
    return {
      launch: (spec) =>
        Effect.gen(function*() {
          const run = yield* runs.get(spec.runId)
          const identity = { runId: run.runId, agent: spec.agent, index: spec.index, sessionName: spec.sessionName }
          const sessionName = childSessionName({ ...identity, supervisorTarget: "" })
          const decision = resolveChildGroup(
            { child: spec.group, launcher: spec.launcherGroup, env: base, config: options.configGroup },
            { runId: run.runId, id: sessionName, parallelSetId: spec.parallelSetId },
            spec.tools ?? {}
          )
          const group = yield* runs.groupFor(run.runId, decision)
          if (decision._tag === "NoGroup" || options.authorize === undefined) {
            return { sessionName, group, decision, grant: undefined, env: plainEnvironment(base, group) }
          }
          const authorized = yield* options.authorize(
            { ...identity, group, supervisorTarget: spec.supervisorTarget },
            base
          )
          return { sessionName: authorized.sessionName, group, decision, grant: authorized.grant, env: authorized.env }
        })
    }
  })

/**
 * The authorizer of a supervisor's `IntercomClient` (made with
 * `ownerToken`): `authorizeChild` with that client.
 *
 * @category constructors
 * @since 0.1.0
 */
export const clientAuthorizer: Effect.Effect<ChildAuthorizer, never, IntercomClient> = Effect.gen(function*() {
  const client = yield* IntercomClient
  return (launch, base) => authorizeChild(launch, base).pipe(Effect.provideService(IntercomClient, client))
})

/**
 * Delegated children (see the module header). Needs `Runs`;
 * `Children.layerWithClient` also authorizes children through the
 * `IntercomClient` in context.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { spawn } from "node:child_process"
 * import { Children, Runs } from "effect-intercom/workflow"
 *
 * const start = Effect.gen(function*() {
 *   const children = yield* Children
 *   const child = yield* children.launch({ runId: "run-1", agent: "worker", index: 0, group: "auto" })
 *   spawn("pi", ["--mode", "json", "Fix the flaky test"], { env: child.env, stdio: "inherit" })
 * })
 * ```
 *
 * @category services
 * @since 0.1.0
 */
export class Children extends Context.Service<Children, ChildrenService>()("effect-intercom/workflow/Children") {
  /** Builds the service over the `Runs` in context. */
  static readonly make: (options?: ChildrenOptions) => Effect.Effect<ChildrenService, never, Runs> = make
  /** A Layer holding one `Children`; needs `Runs`. */
  static readonly layer = (options?: ChildrenOptions): Layer.Layer<Children, never, Runs> =>
    Layer.effect(Children, make(options))
  /** Like `layer`, authorizing children through the supervisor's `IntercomClient` (C-SUP-7). */
  static readonly layerWithClient = (
    options?: Omit<ChildrenOptions, "authorize">
  ): Layer.Layer<Children, never, Runs | IntercomClient> =>
    Layer.effect(Children, Effect.flatMap(clientAuthorizer, (authorize) => make({ ...options, authorize })))
}
