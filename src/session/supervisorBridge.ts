/**
 * A delegated child's bridge metadata (C-SUP-1) and its deterministic intercom
 * target (C-SUP-6). The subagent runtime passes the metadata in environment
 * variables, `ATOMIC_SUBAGENT_*` first, legacy `PI_SUBAGENT_*` second;
 * `readChildBridge` gives all four required fields or nothing, so a child
 * with incomplete metadata keeps only the normal `intercom` tool.
 *
 * Pure: the environment comes in as an argument.
 */

/**
 * The bridge's environment variables, highest precedence first for each
 * field: the Atomic name, then the legacy pi name (C-SUP-1; seeds 000 and 004).
 * A blank value counts as unset and falls through. `sessionName` and the
 * supervisor grant are optional (Atomic's `intercom-utils.ts`, C-SUP-9). The
 * grant has no legacy name: a parent clears it for descendants without a fresh
 * grant (C-SUP-16), and a fallback must not bring an inherited one back.
 *
 * @category bridge
 * @since 0.1.0
 */
export const SUBAGENT_BRIDGE_ENV = {
  supervisorTarget: ["ATOMIC_SUBAGENT_ORCHESTRATOR_TARGET", "PI_SUBAGENT_ORCHESTRATOR_TARGET"],
  runId: ["ATOMIC_SUBAGENT_RUN_ID", "PI_SUBAGENT_RUN_ID"],
  agent: ["ATOMIC_SUBAGENT_CHILD_AGENT", "PI_SUBAGENT_CHILD_AGENT"],
  index: ["ATOMIC_SUBAGENT_CHILD_INDEX", "PI_SUBAGENT_CHILD_INDEX"],
  sessionName: ["ATOMIC_SUBAGENT_INTERCOM_SESSION_NAME", "PI_SUBAGENT_INTERCOM_SESSION_NAME"],
  capability: ["ATOMIC_SUBAGENT_SUPERVISOR_CAPABILITY"],
  supervisorSessionId: ["ATOMIC_SUBAGENT_SUPERVISOR_SESSION_ID"]
} as const

/**
 * A read-only view of the environment (`process.env` fits).
 *
 * @category models
 * @since 0.1.0
 */
export type BridgeEnvironment = Readonly<Record<string, string | undefined>>

/**
 * Which child of which run this session is: what the supervisor's message
 * shows (C-SUP-5) and what the deterministic target is built from (C-SUP-6).
 *
 * @category models
 * @since 0.1.0
 */
export interface ChildIdentity {
  readonly runId: string
  readonly agent: string
  /** 0-based position of the child within its run. */
  readonly index: number
}

/**
 * The broker capability a parent obtained for this child (C-SUP-8, C-SUP-9).
 *
 * @category models
 * @since 0.1.0
 */
export interface SupervisorGrant {
  readonly capability: string
  readonly supervisorSessionId: string
}

/**
 * Complete bridge metadata of a delegated child (C-SUP-1), every value trimmed.
 *
 * @category models
 * @since 0.1.0
 */
export interface ChildBridge extends ChildIdentity {
  /** The supervisor session's name or id, as the parent advertised it. */
  readonly supervisorTarget: string
  /** The child's own intercom name, shown as `Child intercom target:` (C-SUP-5). */
  readonly sessionName?: string | undefined
  /** Present only when both the capability and the supervisor session id are set. */
  readonly grant?: SupervisorGrant | undefined
}

const readVariable = (env: BridgeEnvironment, names: ReadonlyArray<string>): string | undefined => {
  for (const name of names) {
    const value = env[name]?.trim()
    if (value !== undefined && value !== "") return value
  }
  return undefined
}

/** A child index: decimal digits only, a safe integer. */
const parseIndex = (text: string | undefined): number | undefined => {
  if (text === undefined || !/^\d+$/.test(text)) return undefined
  const index = Number(text)
  return Number.isSafeInteger(index) ? index : undefined
}

/**
 * The child's bridge metadata, or `undefined` unless the supervisor target,
 * run id, child agent and child index are all set (C-SUP-1). Each field is
 * read from its `ATOMIC_SUBAGENT_*` variable, else its `PI_SUBAGENT_*` one;
 * an index that is not a non-negative decimal integer counts as missing.
 *
 * @example
 * ```ts
 * import { readChildBridge } from "effect-intercom/session"
 *
 * readChildBridge({
 *   ATOMIC_SUBAGENT_ORCHESTRATOR_TARGET: "planner",
 *   ATOMIC_SUBAGENT_RUN_ID: "78f659a3",
 *   PI_SUBAGENT_CHILD_AGENT: "worker",
 *   PI_SUBAGENT_CHILD_INDEX: "0"
 * })
 * // { supervisorTarget: "planner", runId: "78f659a3", agent: "worker", index: 0, sessionName: undefined, grant: undefined }
 * readChildBridge({ ATOMIC_SUBAGENT_RUN_ID: "78f659a3" }) // undefined
 * ```
 *
 * @category bridge
 * @since 0.1.0
 */
export const readChildBridge = (env: BridgeEnvironment): ChildBridge | undefined => {
  const supervisorTarget = readVariable(env, SUBAGENT_BRIDGE_ENV.supervisorTarget)
  const runId = readVariable(env, SUBAGENT_BRIDGE_ENV.runId)
  const agent = readVariable(env, SUBAGENT_BRIDGE_ENV.agent)
  const index = parseIndex(readVariable(env, SUBAGENT_BRIDGE_ENV.index))
  if (supervisorTarget === undefined || runId === undefined || agent === undefined || index === undefined) {
    return undefined
  }
  const capability = readVariable(env, SUBAGENT_BRIDGE_ENV.capability)
  const supervisorSessionId = readVariable(env, SUBAGENT_BRIDGE_ENV.supervisorSessionId)
  return {
    supervisorTarget,
    runId,
    agent,
    index,
    sessionName: readVariable(env, SUBAGENT_BRIDGE_ENV.sessionName),
    grant: capability === undefined || supervisorSessionId === undefined ? undefined : { capability, supervisorSessionId }
  }
}

/**
 * One part of a child target (C-SUP-6): lower-cased, each run of characters
 * outside `[a-z0-9_-]` replaced by one `-`, leading and trailing `-` trimmed;
 * `agent` when nothing is left.
 *
 * @example
 * ```ts
 * import { childTargetPart } from "effect-intercom/session"
 *
 * childTargetPart("Code Reviewer!") // "code-reviewer"
 * childTargetPart("***") // "agent"
 * ```
 *
 * @category bridge
 * @since 0.1.0
 */
export const childTargetPart = (value: string): string =>
  value.toLowerCase().replace(/[^a-z0-9_-]+/g, "-").replace(/^-+|-+$/g, "") || "agent"

/**
 * The deterministic intercom target of a child, `subagent-<agent>-<runId>-<index+1>`
 * (C-SUP-6); `index` is the 0-based child index.
 *
 * @example
 * ```ts
 * import { childTarget } from "effect-intercom/session"
 *
 * childTarget({ agent: "worker", runId: "78f659a3", index: 0 }) // "subagent-worker-78f659a3-1"
 * ```
 *
 * @category bridge
 * @since 0.1.0
 */
export const childTarget = (child: ChildIdentity): string =>
  `subagent-${childTargetPart(child.agent)}-${childTargetPart(child.runId)}-${child.index + 1}`

/**
 * What a launcher knows about a child it is about to start (C-SUP-7): which
 * run and agent it is, and optionally its intercom name (default: its
 * deterministic target, `childTarget`) and group.
 *
 * @category launcher
 * @since 0.1.0
 */
export interface ChildLaunch extends ChildIdentity {
  /** The supervisor as the child's metadata names it (its session id is safest). */
  readonly supervisorTarget: string
  /** The child's intercom session name; the capability is bound to it. Default: `childTarget(child)`. */
  readonly sessionName?: string | undefined
  /** The child's home group (C-GRP-2: injected per session), set as `ATOMIC_INTERCOM_GROUP`. */
  readonly group?: string | undefined
}

/** The group variables a launcher sets for a child (the legacy one is cleared, so it cannot disagree). */
const GROUP_ENV = ["ATOMIC_INTERCOM_GROUP", "PI_INTERCOM_GROUP"] as const

/**
 * The environment to start a delegated child with: `base` (usually
 * `process.env`) without any bridge or grant variable it inherited — a
 * grandchild never inherits its parent's capability (C-SUP-16) — plus this
 * child's bridge metadata and, when one was obtained, its grant. Without a
 * grant the child still gets its metadata but no `contact_supervisor` (a
 * broken channel is never exposed); a launcher whose authorization failed
 * should not start the child at all (C-SUP-7). `authorizeChild` does both
 * steps.
 *
 * @example
 * ```ts
 * import { childEnvironment, childSessionName } from "effect-intercom/session"
 *
 * const launch = { runId: "78f659a3", agent: "worker", index: 0, supervisorTarget: "sup-1" }
 * childSessionName(launch) // "subagent-worker-78f659a3-1": authorize this name
 * const env = childEnvironment(process.env, launch, { capability: "…", supervisorSessionId: "sup-1" })
 * // spawn("pi", [...], { env })
 * ```
 *
 * @category launcher
 * @since 0.1.0
 */
export const childEnvironment = (
  base: BridgeEnvironment,
  launch: ChildLaunch,
  grant: SupervisorGrant | undefined
): Record<string, string> => {
  const cleared = new Set<string>([...Object.values(SUBAGENT_BRIDGE_ENV).flat(), ...(launch.group === undefined ? [] : GROUP_ENV)])
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(base)) {
    if (value !== undefined && !cleared.has(name)) env[name] = value
  }
  env[SUBAGENT_BRIDGE_ENV.supervisorTarget[0]] = launch.supervisorTarget
  env[SUBAGENT_BRIDGE_ENV.runId[0]] = launch.runId
  env[SUBAGENT_BRIDGE_ENV.agent[0]] = launch.agent
  env[SUBAGENT_BRIDGE_ENV.index[0]] = String(launch.index)
  env[SUBAGENT_BRIDGE_ENV.sessionName[0]] = childSessionName(launch)
  if (launch.group !== undefined) env[GROUP_ENV[0]] = launch.group
  if (grant !== undefined) {
    env[SUBAGENT_BRIDGE_ENV.capability[0]] = grant.capability
    env[SUBAGENT_BRIDGE_ENV.supervisorSessionId[0]] = grant.supervisorSessionId
  }
  return env
}

/**
 * The intercom name a child registers with: `sessionName`, trimmed, else its
 * deterministic target (C-SUP-6). A supervisor authorizes this name.
 *
 * @category launcher
 * @since 0.1.0
 */
export const childSessionName = (launch: ChildLaunch): string => {
  const name = launch.sessionName?.trim()
  return name === undefined || name === "" ? childTarget(launch) : name
}
