/**
 * Which intercom group a workflow stage or a delegated child gets
 * (C-GRP-8…11). Pure: the engine's options come in, a decision comes out;
 * `Runs` turns a `Generated` decision into one UUID per key.
 *
 * - `true`, and the trimmed, case-insensitive strings `"true"`/`"auto"`,
 *   ask for a generated group (C-GRP-8); they are never literal names.
 *   `false`, `undefined` and blank strings set nothing at their level.
 * - A generated group is shared by its key (C-GRP-9): when the run level
 *   decides, every stage of the run, in a parallel set or not, shares the
 *   run's one; when the item, task/stage or parallel-step level decides,
 *   every item of one parallel set shares the set's one and a stage outside
 *   any parallel set gets its own; a child's own `Auto` gives its parallel
 *   set's, or outside one its run's.
 * - A stage's levels are read most specific first: parallel item, then
 *   task/stage, then parallel step, then run. A child's: its own option,
 *   then the launching session's group, then env `ATOMIC_INTERCOM_GROUP`
 *   (legacy `PI_INTERCOM_GROUP`), then config, then `default` (C-GRP-10).
 * - Only a stage or child that can use intercom gets a group (C-GRP-11).
 *
 * @since 0.1.0
 */
import { homeGroup } from "../config/group.ts"
import type { BridgeEnvironment } from "../session/supervisorBridge.ts"

/**
 * A `group` option as an engine's workflow or subagent definition gives it.
 *
 * @category models
 * @since 0.1.0
 */
export type GroupOption = boolean | string | undefined

/**
 * What one level's option asks for: a generated group, a named one, or
 * nothing (the next level decides).
 *
 * @category models
 * @since 0.1.0
 */
export type GroupChoice = { readonly _tag: "Auto" } | { readonly _tag: "Named"; readonly group: string } | undefined

const AUTO_WORDS: ReadonlySet<string> = new Set(["true", "auto"])

/**
 * Reads one level's option (C-GRP-8): `true`, `"true"`, `"auto"` (trimmed,
 * any case) → `Auto`; another non-blank string → `Named` (trimmed);
 * anything else → `undefined`.
 *
 * @example
 * ```ts
 * import { groupChoice } from "effect-intercom/workflow"
 *
 * groupChoice(" AUTO ") // { _tag: "Auto" }
 * groupChoice(" review ") // { _tag: "Named", group: "review" }
 * groupChoice(false) // undefined
 * ```
 *
 * @category groups
 * @since 0.1.0
 */
export const groupChoice = (option: GroupOption): GroupChoice => {
  if (option === true) return { _tag: "Auto" }
  if (typeof option !== "string") return undefined
  const trimmed = option.trim()
  if (trimmed === "") return undefined
  return AUTO_WORDS.has(trimmed.toLowerCase()) ? { _tag: "Auto" } : { _tag: "Named", group: trimmed }
}

/**
 * The tools a stage or child runs with, as far as intercom is concerned.
 *
 * @category models
 * @since 0.1.0
 */
export interface ToolAccess {
  /** The agent runs with no tools at all. */
  readonly noTools?: boolean | undefined
  /** An allowlist; absent means every tool. */
  readonly tools?: ReadonlyArray<string> | undefined
  /** Tools taken away from the allowlist (or from all tools). */
  readonly excludeTools?: ReadonlyArray<string> | undefined
}

const INTERCOM_TOOLS = ["intercom", "contact_supervisor"] as const

/**
 * Whether an agent with these tools can use intercom: it has `intercom` or
 * `contact_supervisor` (C-GRP-11).
 *
 * @category groups
 * @since 0.1.0
 */
export const canUseIntercom = (access: ToolAccess): boolean => {
  if (access.noTools === true) return false
  const excluded = new Set(access.excludeTools ?? [])
  return INTERCOM_TOOLS.some((tool) =>
    !excluded.has(tool) && (access.tools === undefined || access.tools.includes(tool))
  )
}

/**
 * What a group decision is: no group (the agent cannot use intercom), the
 * session's own home group (nothing injected, C-GRP-2), a named group, or
 * the generated group of `key`.
 *
 * @category models
 * @since 0.1.0
 */
export type GroupDecision =
  | { readonly _tag: "NoGroup" }
  | { readonly _tag: "HomeGroup" }
  | { readonly _tag: "Named"; readonly group: string }
  | { readonly _tag: "Generated"; readonly key: string }

/**
 * A stage's group options, one per level (C-GRP-10).
 *
 * @category models
 * @since 0.1.0
 */
export interface StageGroupLevels {
  /** The stage's own entry in a parallel set. */
  readonly item?: GroupOption
  /** The task/stage definition. */
  readonly stage?: GroupOption
  /** The parallel step the stage is an item of. */
  readonly parallelStep?: GroupOption
  /** The run. */
  readonly run?: GroupOption
}

/**
 * Where a stage or child sits in its run: the key of its parallel set, if it
 * is an item of one.
 *
 * @category models
 * @since 0.1.0
 */
export interface Placement {
  readonly runId: string
  /** The stage id, or the child's name. */
  readonly id: string
  readonly parallelSetId?: string | undefined
}

/**
 * Which level's `Auto` won, as far as the generated key is concerned:
 * a stage's item, task/stage or parallel-step level (`"stage"`), a child's
 * own option (`"child"`), or the run's (`"run"`).
 */
type AutoScope = "stage" | "child" | "run"

/** The key a generated group is shared by (see the module header). */
const generatedKey = (placement: Placement, scope: AutoScope): string =>
  scope === "run"
    ? `run\u0000${placement.runId}`
    : placement.parallelSetId !== undefined
    ? `parallel\u0000${placement.runId}\u0000${placement.parallelSetId}`
    : scope === "child"
    ? `run\u0000${placement.runId}`
    : `stage\u0000${placement.runId}\u0000${placement.id}`

/**
 * A stage's group (C-GRP-8…11): `NoGroup` unless it can use intercom; else
 * the first level that sets something, most specific first; `HomeGroup`
 * when none does.
 *
 * @example
 * ```ts
 * import { resolveStageGroup } from "effect-intercom/workflow"
 *
 * resolveStageGroup({ parallelStep: true, run: "team" }, { runId: "r1", id: "review", parallelSetId: "p1" }, {})
 * // { _tag: "Generated", key: "parallel\u0000r1\u0000p1" }: shared by every item of p1
 * resolveStageGroup({ run: true }, { runId: "r1", id: "review", parallelSetId: "p1" }, {})
 * // { _tag: "Generated", key: "run\u0000r1" }: the run's one group, in a parallel set or not
 * resolveStageGroup({ run: "team" }, { runId: "r1", id: "plan" }, { tools: ["read"] })
 * // { _tag: "NoGroup" }: no intercom tool
 * ```
 *
 * @category groups
 * @since 0.1.0
 */
export const resolveStageGroup = (levels: StageGroupLevels, placement: Placement, access: ToolAccess): GroupDecision => {
  if (!canUseIntercom(access)) return { _tag: "NoGroup" }
  const ordered = [
    [levels.item, "stage"],
    [levels.stage, "stage"],
    [levels.parallelStep, "stage"],
    [levels.run, "run"]
  ] as const
  for (const [option, level] of ordered) {
    const choice = groupChoice(option)
    if (choice === undefined) continue
    return choice._tag === "Named" ? choice : { _tag: "Generated", key: generatedKey(placement, level) }
  }
  return { _tag: "HomeGroup" }
}

/**
 * A child's group options (C-GRP-10).
 *
 * @category models
 * @since 0.1.0
 */
export interface ChildGroupLevels {
  /** The subagent's explicit `group` option. */
  readonly child?: GroupOption
  /** The launching session's own group, read from that session (not from this process's env). */
  readonly launcher?: string | undefined
  /** The environment (`ATOMIC_INTERCOM_GROUP`, legacy `PI_INTERCOM_GROUP`). */
  readonly env?: BridgeEnvironment | undefined
  /** The config file's `group`. */
  readonly config?: string | undefined
}

/**
 * A child's group (C-GRP-10, C-GRP-11): `NoGroup` unless it can use
 * intercom; its own option first (`Auto` → the parallel set's, else the
 * run's generated group); else the launcher's group, env, config,
 * `default`.
 *
 * @example
 * ```ts
 * import { resolveChildGroup } from "effect-intercom/workflow"
 *
 * resolveChildGroup({ launcher: "team", env: { ATOMIC_INTERCOM_GROUP: "ops" } }, { runId: "r1", id: "w1" }, {})
 * // { _tag: "Named", group: "team" }
 * ```
 *
 * @category groups
 * @since 0.1.0
 */
export const resolveChildGroup = (levels: ChildGroupLevels, placement: Placement, access: ToolAccess): GroupDecision => {
  if (!canUseIntercom(access)) return { _tag: "NoGroup" }
  const own = groupChoice(levels.child)
  if (own !== undefined) return own._tag === "Named" ? own : { _tag: "Generated", key: generatedKey(placement, "child") }
  const env = levels.env ?? {}
  return {
    _tag: "Named",
    group: homeGroup(levels.launcher, env["ATOMIC_INTERCOM_GROUP"], env["PI_INTERCOM_GROUP"], levels.config)
  }
}
