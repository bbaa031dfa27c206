/**
 * Size: one concept — the runtime's wording, about 470 lines of small
 * renderers and their JSDoc. Kept in one file so every text a model reads can
 * be checked against its neighbours (the same sender label, ages, hints);
 * the health tags and guidance are health.ts's and old-mail markers
 * oldMail.ts's already.
 *
 * Every text the session runtime shows to a model or a person, in one place
 * (C-TOOL-9, C-TOOL-10, C-TOOL-11, C-TOOL-13, C-ASK-8, C-RPL-7, C-RPL-9,
 * C-DLV-18, C-GRP-5). Pure functions; the wording follows pi-intercom / Atomic so an
 * agent prompted for one behaves the same with the other.
 */
import type { InboundMessage } from "../client/events.ts"
import { DEFAULT_GROUP } from "../config/group.ts"
import { replyErrorText } from "../protocol/replyError.ts"
import type { Attachment, Message, MessageControl, SessionInfo } from "../protocol/frames.ts"
import { queuedMarker } from "./oldMail.ts"
import { deliveryGuidance, healthTags, peerState, SELF_GUIDANCE } from "./health.ts"
import { type ParsedSupervisorMessage, parseSupervisorMessage } from "./supervisorMessages.ts"
import { displayTargets } from "./targets.ts"

// ---------------------------------------------------------------------------
// Identity and status
// ---------------------------------------------------------------------------

/**
 * The prefix of the runtime-only alias of an unnamed session (C-TOOL-13).
 *
 * @category identity
 * @since 0.1.0
 */
export const FALLBACK_ALIAS_PREFIX = "subagent-chat"

/**
 * `subagent-chat-<first 8 chars of the id, any "session-" prefix removed>` (C-TOOL-13).
 *
 * @category identity
 * @since 0.1.0
 */
export const fallbackAlias = (sessionId: string): string => {
  const bare = sessionId.startsWith("session-") ? sessionId.slice("session-".length) : sessionId
  return `${FALLBACK_ALIAS_PREFIX}-${bare.slice(0, 8)}`
}

/**
 * The name a session presents: its own, or the runtime-only alias.
 *
 * @category identity
 * @since 0.1.0
 */
export const presentedName = (
  name: string | undefined,
  sessionId: string
): { readonly name: string; readonly runtimeFallbackAlias: boolean } => {
  const trimmed = name?.trim()
  return trimmed === undefined || trimmed.length === 0
    ? { name: fallbackAlias(sessionId), runtimeFallbackAlias: true }
    : { name: trimmed, runtimeFallbackAlias: false }
}

/**
 * What a session is doing, derived from its lifecycle (C-TOOL-10).
 *
 * @category models
 * @since 0.1.0
 */
export type LifecycleStatus = "idle" | "thinking" | `tool:${string}`

/**
 * `<lifecycle> · <custom>`: the custom suffix never replaces the lifecycle status (C-TOOL-10).
 *
 * @category identity
 * @since 0.1.0
 */
export const presenceStatus = (lifecycle: LifecycleStatus, suffix: string | undefined): string => {
  const custom = suffix?.trim()
  return custom === undefined || custom.length === 0 ? lifecycle : `${lifecycle} · ${custom}`
}

// ---------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------

/**
 * Attachment content appended to a body (C-TOOL-5).
 *
 * @category rendering
 * @since 0.1.0
 */
export const formatAttachments = (attachments: ReadonlyArray<Attachment> | undefined): string => {
  let text = ""
  for (const attachment of attachments ?? []) {
    text += attachment.language === undefined || attachment.language.length === 0
      ? `\n\n---\n📎 ${attachment.name}\n${attachment.content}`
      : `\n\n---\n📎 ${attachment.name}\n~~~${attachment.language}\n${attachment.content}\n~~~`
  }
  return text
}

/**
 * The body an agent sees: text plus attachments.
 *
 * @category rendering
 * @since 0.1.0
 */
export const messageBody = (message: Message): string =>
  `${message.content.text}${formatAttachments(message.content.attachments)}`

/**
 * The tool call an agent makes to answer an ask.
 *
 * @category rendering
 * @since 0.1.0
 */
export const REPLY_COMMAND = `intercom({ action: "reply", message: "..." })`
/**
 * The line appended to an inbound ask when `replyHint` is on (C-RPL-9).
 *
 * @category rendering
 * @since 0.1.0
 */
export const REPLY_HINT = `To reply, use the intercom tool: ${REPLY_COMMAND}`

/**
 * The call that answers the ask `messageId`, as `pending` shows it under each
 * ask (C-RPL-8): the tool call, for an agent. A host whose user answers some
 * other way gives its own (`IntercomSessionOptions.replyCall`; the CLI's is
 * its `intercom reply` command line).
 *
 * @category rendering
 * @since 0.1.0
 */
export const toolReplyCall = (messageId: string): string =>
  `intercom({ action: "reply", replyTo: "${messageId}", message: "..." })`

/**
 * How a sender is named in an inbound rendering.
 *
 * @category rendering
 * @since 0.1.0
 */
export const senderDisplay = (from: SessionInfo): string => from.name?.trim() || from.id.slice(0, 8)

/**
 * An inbound message as the recipient's agent sees it (C-DLV-18): sender,
 * cwd, how long ago it was queued when it waited in the broker's mailbox
 * (`queuedMarker`), the reply hint for asks when `replyHint` is on
 * (C-RPL-9) — or, for one its sender withdrew before the host took it
 * (`withdrawn`), that it needs no action (`withdrawnNote`) — then body and
 * attachments.
 *
 * @category rendering
 * @since 0.1.0
 */
export const renderInbound = (
  from: SessionInfo,
  message: Message,
  replyHint: boolean,
  withdrawn?: MessageControl["action"]
): string => {
  const hint = withdrawn !== undefined
    ? `\n\n${withdrawnNote(from, withdrawn)}`
    : replyHint && message.expectsReply === true
    ? `\n\n${REPLY_HINT}`
    : ""
  return `**From ${senderDisplay(from)}** (${from.cwd})${queuedMarker(message)}${hint}\n\n${messageBody(message)}`
}

/**
 * What an inbound message its sender withdrew before the host took it says
 * in place of the reply hint (P73: `cancel`, or `supersede` by a later message).
 *
 * @category rendering
 * @since 0.1.0
 */
export const withdrawnNote = (from: SessionInfo, action: MessageControl["action"]): string =>
  `Withdrawn: ${senderDisplay(from)} ${
    action === "cancel" ? "cancelled this message" : "replaced this message with a later one"
  } before it reached you; it needs no action and no reply.`

/**
 * The text an answer to an ask leaves in the history (C-TOOL-8): a failure
 * reply's (`replyError`, C-ASK-7) is marked as one, as a base asker sees it.
 *
 * @category rendering
 * @since 0.1.0
 */
export const receivedText = (answer: InboundMessage): string =>
  answer.replyError === undefined
    ? answer.message.content.text
    : replyErrorText(answer.replyError, answer.message.content.text)

/**
 * An answered ask as its tool result (C-ASK-8).
 *
 * @category rendering
 * @since 0.1.0
 */
export const renderReply = (to: string, reply: Message): string => `**Reply from ${to}:**\n${messageBody(reply)}`

// ---------------------------------------------------------------------------
// list / status / pending
// ---------------------------------------------------------------------------

/**
 * One `list` row (C-TOOL-9): name, display target, cwd, model, tags. The
 * tags are `self` or `same cwd`, the status, and `group: <g>` when the row's
 * group is not `default`. With `healthNow` (the broker granted `health-v1`;
 * the clock to age timestamps by) the health tags follow and a
 * delivery-guidance line goes under the row (C-HLT-1, C-HLT-7).
 *
 * @category rendering
 * @since 0.1.0
 */
export const renderSessionRow = (
  session: SessionInfo,
  all: ReadonlyArray<SessionInfo>,
  selfCwd: string,
  isSelf: boolean,
  targetOf: (session: SessionInfo) => string = displayTargets(all),
  group: string = DEFAULT_GROUP,
  healthNow?: number
): string => {
  const name = session.name?.trim() || "Unnamed session"
  const groupTag = group === DEFAULT_GROUP ? undefined : `group: ${group}`
  const tags = [
    isSelf ? "self" : session.cwd === selfCwd ? "same cwd" : undefined,
    session.status,
    groupTag,
    ...(healthNow === undefined ? [] : healthTags(session, healthNow))
  ].filter((tag): tag is string => tag !== undefined && tag.length > 0)
  const suffix = tags.length === 0 ? "" : ` [${tags.join(", ")}]`
  const row = `• ${name} (${targetOf(session)}) — ${session.cwd} (${session.model})${suffix}`
  if (healthNow === undefined) return row
  return `${row}\n  ${isSelf ? SELF_GUIDANCE : deliveryGuidance(peerState(session))}`
}

/**
 * The `list` result: the current session, then the others (C-TOOL-9), all
 * of this session's `group`; with `healthNow`, rows carry health tags and
 * guidance (`renderSessionRow`).
 *
 * @category rendering
 * @since 0.1.0
 */
export const renderSessionList = (
  self: SessionInfo,
  all: ReadonlyArray<SessionInfo>,
  shown: ReadonlyArray<SessionInfo> = all,
  group: string = DEFAULT_GROUP,
  healthNow?: number
): string => {
  const others = shown.filter((session) => session.id !== self.id)
  const hidden = all.length - shown.length
  // Display targets for every row at once (O(n log n), not O(n) per row).
  const targetOf = displayTargets(all)
  const current = `**Current session:**\n${renderSessionRow(self, all, self.cwd, true, targetOf, group, healthNow)}`
  const rest = others.length === 0
    ? "**Other sessions:**\nNo other sessions connected."
    : `**Other sessions:**\n${
      others.map((session) => renderSessionRow(session, all, self.cwd, false, targetOf, group, healthNow)).join("\n")
    }`
  return hidden === 0 ? `${current}\n\n${rest}` : `${current}\n\n${rest}\n\n${hiddenNote(hidden)}`
}

/**
 * The note under a project-scoped `list` that hides sessions of other projects (C-TOOL-16).
 *
 * @category rendering
 * @since 0.1.0
 */
export const hiddenNote = (hidden: number): string =>
  `${hidden} session${hidden === 1 ? "" : "s"} in other projects not shown; use scope: "all" to include them.`

/**
 * The `list` error when the broker's list lacks this session (C-TOOL-9).
 *
 * @category rendering
 * @since 0.1.0
 */
export const MISSING_SELF = "Current session is missing from intercom session list."

/**
 * The `status` result (C-TOOL-11): the session's group and how many sessions
 * are active in it, this one included; with `peek`, also the read-only count
 * of another group (C-GRP-5).
 *
 * @category rendering
 * @since 0.1.0
 */
export const renderStatus = (
  sessionId: string,
  activeSessions: number,
  group: string = DEFAULT_GROUP,
  peek?: { readonly group: string; readonly activeSessions: number }
): string => {
  const base = `**Intercom Status:**\nConnected: Yes\nSession ID: ${sessionId}\nGroup: ${group}\n` +
    `Active sessions: ${activeSessions}`
  return peek === undefined ? base : `${base}\n${renderPeekCount(peek.group, peek.activeSessions)}`
}

/**
 * The line `status` with `group: <other>` adds (C-TOOL-11): that group's
 * live sessions, counted read-only.
 *
 * @category rendering
 * @since 0.1.0
 */
export const renderPeekCount = (group: string, activeSessions: number): string =>
  `Group ${JSON.stringify(group)} (read-only view, no send rights): ` +
  `${activeSessions} active session${activeSessions === 1 ? "" : "s"}`

/**
 * The `list` result for `group: <other>` (C-GRP-5): the live sessions of
 * another group, rendered like `list` rows, under a heading that says it is
 * a read-only view of that group with no send rights there.
 *
 * @category rendering
 * @since 0.1.0
 */
export const renderGroupPeek = (
  group: string,
  ownGroup: string,
  sessions: ReadonlyArray<SessionInfo>,
  selfCwd: string
): string => {
  const heading = `**Group ${JSON.stringify(group)} (read-only view):**\n` +
    `You cannot send to or ask these sessions: send and ask stay in your own group ${JSON.stringify(ownGroup)}.`
  if (sessions.length === 0) return `${heading}\n\nNo sessions connected in this group.`
  const targetOf = displayTargets(sessions)
  return `${heading}\n\n${
    sessions.map((session) => renderSessionRow(session, sessions, selfCwd, false, targetOf, group)).join("\n")
  }`
}

/**
 * The `pending` result when no ask is owed an answer (C-RPL-7).
 *
 * @category rendering
 * @since 0.1.0
 */
export const NO_PENDING_ASKS = "No unresolved inbound asks."
/**
 * How many characters of a pending ask's body `pending` shows (C-RPL-7).
 *
 * @category rendering
 * @since 0.1.0
 */
export const PREVIEW_LENGTH = 80

/**
 * At most 80 characters, whitespace collapsed (C-RPL-7).
 *
 * @category rendering
 * @since 0.1.0
 */
export const preview = (text: string): string => text.replace(/\s+/g, " ").trim().slice(0, PREVIEW_LENGTH)

/**
 * One row of `pending`: an unanswered inbound ask (`PendingAsk` fits).
 *
 * @category models
 * @since 0.1.0
 */
export interface PendingRow {
  readonly from: SessionInfo
  readonly message: Message
  /** When its asker asked it, on this session's clock (`askTiming`): the age shown counts from it. */
  readonly askedAt: number
  /** The first millisecond it is no longer pending (`askExpiresAt`): the time left shown counts to it. */
  readonly expiresAt: number
  /** `supervisor`: a delegated child's question; its row shows the run metadata and the question (C-RPL-8). */
  readonly channel?: "supervisor" | undefined
}

/**
 * How many characters of a supervisor question `pending` shows (whitespace
 * collapsed); the full text is in the delivered message.
 *
 * @category rendering
 * @since 0.1.0
 */
export const SUPERVISOR_QUESTION_PREVIEW_LENGTH = 500

/** The lines a supervisor question adds to its `pending` row. */
const supervisorLines = (row: PendingRow, parsed: ParsedSupervisorMessage): ReadonlyArray<string> => {
  const child = row.from.name?.trim() || parsed.sessionName || row.from.id
  const question = parsed.body.replace(/\s+/g, " ").trim()
  return [
    `  supervisor question (${parsed.reason}): run ${parsed.runId} · agent ${parsed.agent} · child ${child} (index ${parsed.index})`,
    `  question: ${question.slice(0, SUPERVISOR_QUESTION_PREVIEW_LENGTH)}${question.length > SUPERVISOR_QUESTION_PREVIEW_LENGTH ? "…" : ""}`
  ]
}

/**
 * The `pending` result, oldest first (C-RPL-7), each with how long ago it
 * was asked and how long is left before it expires (both on this session's
 * clock, as `askTiming` has them), and a ready reply call
 * (C-RPL-8; `replyCall`, the tool call unless the host writes its own). A delegated child's question (`channel: "supervisor"`) previews
 * its question and adds a line with its run id, agent, child target and
 * index, and a line with the question (up to 500 characters).
 *
 * @category rendering
 * @since 0.1.0
 */
export const renderPending = (
  rows: ReadonlyArray<PendingRow>,
  now: number,
  replyCall: (messageId: string) => string = toolReplyCall
): string => {
  if (rows.length === 0) return NO_PENDING_ASKS
  const lines = rows.map((row) => {
    const { askedAt, expiresAt, from, message } = row
    // Both on the clock of the ask's expiry (`askTiming`), whole seconds rounded down.
    const asked = `asked ${formatSpan(now - askedAt)} ago · expires in ${formatSpan(expiresAt - now)}`
    // Only the broker marks a child's message (C-SUP-13); its preview is the question, not the heading.
    const supervisor = row.channel === "supervisor" ? parseSupervisorMessage(message.content.text) : undefined
    return [
      `- ${from.name?.trim() || from.id} · ${message.id} · ${asked} · ${preview(supervisor?.body ?? message.content.text)}`,
      ...(supervisor === undefined ? [] : supervisorLines(row, supervisor)),
      `  reply: ${replyCall(message.id)}`
    ].join("\n")
  })
  return `**Pending asks:**\n${lines.join("\n")}`
}

/**
 * A span of time as a person reads it, whole seconds rounded down: `7s`,
 * `9m 53s`, `2h 5m`, `3d 4h`.
 *
 * @category rendering
 * @since 0.1.0
 */
export const formatSpan = (ms: number): string => {
  const seconds = Math.max(0, Math.floor(ms / 1000))
  if (seconds < 60) return `${seconds}s`
  const minutes = Math.floor(seconds / 60)
  if (minutes < 60) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m ${seconds % 60}s`
  const hours = Math.floor(minutes / 60)
  if (hours < 24) return minutes % 60 === 0 ? `${hours}h` : `${hours}h ${minutes % 60}m`
  const days = Math.floor(hours / 24)
  return hours % 24 === 0 ? `${days}d` : `${days}d ${hours % 24}h`
}

/**
 * `N minutes` for whole minutes (the 10-minute default reads as in C-ASK-5), else
 * seconds, with the milliseconds as decimals (`1.5 seconds`, `0.25 seconds`).
 *
 * @category rendering
 * @since 0.1.0
 */
export const formatWait = (timeoutMs: number): string => {
  if (timeoutMs >= 60_000 && timeoutMs % 60_000 === 0) {
    const minutes = timeoutMs / 60_000
    return `${minutes} minute${minutes === 1 ? "" : "s"}`
  }
  // Exact to the millisecond: a 1500 ms wait reads "1.5 seconds", not "2 seconds".
  const seconds = Math.round(timeoutMs) / 1000
  return `${seconds} second${seconds === 1 ? "" : "s"}`
}

/**
 * What a busy session without UI answers to an ask it cannot take (open question 11).
 *
 * @category rendering
 * @since 0.1.0
 */
export const NON_INTERACTIVE_BUSY_REPLY =
  "This agent is running in non-interactive mode and cannot respond to intercom messages while it is working. It will continue its current task and exit when done."
