/**
 * The `group` parameter of the `intercom` tool (C-GRP-5, C-GRP-6, C-TOOL-11).
 *
 * A session lives in one home group, the one its `IntercomClient` registers
 * in (`client.group`); the broker keeps groups apart (C-GRP-3). The
 * parameter is read-only:
 *
 * - `list` with another group peeks at that group's live sessions
 *   (`IntercomClient.peek`) and says that nothing may be sent there;
 * - `status` with another group adds that group's count;
 * - `send`, `ask` and `reply`, and the topic actions (`publish`,
 *   `subscribe`, `unsubscribe`, `topics`: a group's topics are its own,
 *   C-GRP-3), accept only the own group; any other value is `GroupReadOnly`,
 *   checked before anything else, so nothing is sent.
 *
 * Blank or absent means the own group. The module wraps the tool's action
 * table, so the base actions stay as they are.
 */
import { Effect } from "effect"
import { MAX_ID_LENGTH } from "../protocol/limits.ts"
import type { SessionInfo } from "../protocol/frames.ts"
import { type ClientFailure, GroupReadOnly, InvalidGroup } from "./errors.ts"
import type { Generation } from "./Generation.ts"
import type { ToolAction } from "./IntercomTool.ts"
import type { IntercomToolParams, ToolResult } from "./models.ts"
import { renderGroupPeek, renderPeekCount } from "./render.ts"
import { isSafeLabel } from "./validation.ts"

/**
 * A read-only look at another group of the scope (C-GRP-5).
 *
 * @category models
 * @since 0.1.0
 */
export interface GroupPeek {
  /** The group looked at. */
  readonly group: string
  /** Its live sessions, as the broker listed them. */
  readonly sessions: ReadonlyArray<SessionInfo>
  /** The rows under a heading that says the view is read-only. */
  readonly text: string
}

/** Actions whose `group` must be the own group (C-GRP-6); topics live in a group and are its own. */
const LOCKED = new Set(["send", "ask", "reply", "publish", "subscribe", "unsubscribe", "topics"])

/**
 * The `group` parameter, trimmed; `undefined` when absent or blank. Over
 * 256 characters or with a control character it is `InvalidGroup` (the
 * broker would drop the connection over such a `list`).
 *
 * @category validation
 * @since 0.1.0
 */
export const groupParam = (params: IntercomToolParams): Effect.Effect<string | undefined, InvalidGroup> =>
  Effect.suspend(() => {
    const group = params.group?.trim() ?? ""
    if (group === "") return Effect.succeed(undefined)
    if (group.length > MAX_ID_LENGTH) {
      return Effect.fail(new InvalidGroup({ reason: `it is ${group.length} characters long; the limit is ${MAX_ID_LENGTH}` }))
    }
    if (!isSafeLabel(group)) return Effect.fail(new InvalidGroup({ reason: "it contains a control character" }))
    return Effect.succeed(group)
  })

/**
 * `peek(group)` of a generation: connects, lists that group's live sessions
 * through the client (read-only, nothing is sent to them) and renders them.
 *
 * @category constructors
 * @since 0.1.0
 */
export const peekGroup = (generation: Generation) => (group: string): Effect.Effect<GroupPeek, ClientFailure> =>
  Effect.gen(function*() {
    yield* generation.connect
    const sessions = yield* generation.client.peek(group)
    const text = renderGroupPeek(group, generation.client.group, sessions, generation.host.identity.cwd)
    return { group, sessions, text }
  })

/**
 * The status text with the peek count as the last line of its header, before
 * the session rows that follow a blank line when the broker gave health
 * (`health-v1`).
 */
const withPeekLine = (text: string, line: string): string => {
  const rows = text.indexOf("\n\n")
  return rows === -1 ? `${text}\n${line}` : `${text.slice(0, rows)}\n${line}${text.slice(rows)}`
}

const withDetails = (result: ToolResult, details: Record<string, unknown>): ToolResult =>
  result.isError ? result : { ...result, details: { ...result.details, ...details } }

/**
 * The tool's action table with the `group` parameter honoured (see the module
 * header). Actions other than list, status and the locked ones pass through, and so
 * does every call whose `group` is absent, blank or the own group (apart from
 * the `group` detail added to list and status).
 *
 * @category constructors
 * @since 0.1.0
 */
export const withGroups = (
  table: ReadonlyMap<string, ToolAction>,
  generation: Generation
): ReadonlyMap<string, ToolAction> => {
  const ownGroup = () => generation.client.group
  const peek = peekGroup(generation)
  const wrapped = new Map(table)
  for (const [name, action] of table) {
    if (LOCKED.has(name)) {
      wrapped.set(name, (params) =>
        Effect.flatMap(groupParam(params), (group) => {
          const own = ownGroup()
          return group === undefined || group === own
            ? action(params)
            : Effect.fail(new GroupReadOnly({ action: name, requested: group, own }))
        }))
    } else if (name === "list") {
      wrapped.set(name, (params) =>
        Effect.flatMap(groupParam(params), (group) => {
          const own = ownGroup()
          return group === undefined || group === own
            ? Effect.map(action(params), (result) => withDetails(result, { group: own }))
            : Effect.map(peek(group), (view): ToolResult => ({
              text: view.text,
              isError: false,
              details: { group: view.group, readOnly: true, sessions: view.sessions }
            }))
        }))
    } else if (name === "status") {
      wrapped.set(name, (params) =>
        Effect.flatMap(groupParam(params), (group) =>
          Effect.flatMap(action(params), (result) => {
            const own = ownGroup()
            if (result.isError || group === undefined || group === own) {
              return Effect.succeed(withDetails(result, { group: own }))
            }
            return Effect.map(generation.client.peek(group), (sessions): ToolResult => ({
              text: withPeekLine(result.text, renderPeekCount(group, sessions.length)),
              isError: false,
              details: { ...result.details, group: own, peek: { group, activeSessions: sessions.length, readOnly: true } }
            }))
          })))
    }
  }
  return wrapped
}
