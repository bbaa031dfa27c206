/**
 * The text a supervisor receives from `contact_supervisor` (C-SUP-5): a
 * heading per reason, the child's run metadata, a blank line, then the body —
 * the child's message, or for an interview its rendering (C-INT-4). The
 * wording is Atomic's `formatChildOrchestratorMessage`.
 */
import { CONTACT_SUPERVISOR_REASONS, type ContactSupervisorReason, type ContactSupervisorRequest } from "./contactSupervisor.ts"
import { renderInterview } from "./interview.ts"
import type { ChildIdentity } from "./supervisorBridge.ts"

/**
 * The first line of the supervisor's message, per reason (C-SUP-5).
 *
 * @category supervisor
 * @since 0.1.0
 */
export const SUPERVISOR_MESSAGE_HEADINGS: { readonly [Reason in ContactSupervisorReason]: string } = {
  need_decision: "Subagent needs a supervisor decision.",
  interview_request: "Subagent requests a structured supervisor interview.",
  progress_update: "Subagent progress update."
}

/**
 * Who is writing: the child's identity and, when it has one, its own intercom name.
 *
 * @category models
 * @since 0.1.0
 */
export interface SupervisorMessageSender extends ChildIdentity {
  /** Shown as `Child intercom target: <name>` when set. */
  readonly sessionName?: string | undefined
}

/**
 * `<heading>`, `Run: <runId>`, `Agent: <agent>`, `Child index: <index>`
 * (0-based), optionally `Child intercom target: <name>`, a blank line, then
 * `body` as given (C-SUP-5).
 *
 * @example
 * ```ts
 * import { formatSupervisorMessage } from "effect-intercom/session"
 *
 * formatSupervisorMessage("need_decision", { runId: "78f659a3", agent: "worker", index: 0 }, "Which API should I use?")
 * // "Subagent needs a supervisor decision.\nRun: 78f659a3\nAgent: worker\nChild index: 0\n\nWhich API should I use?"
 * ```
 *
 * @category supervisor
 * @since 0.1.0
 */
export const formatSupervisorMessage = (
  reason: ContactSupervisorReason,
  sender: SupervisorMessageSender,
  body: string
): string =>
  [
    SUPERVISOR_MESSAGE_HEADINGS[reason],
    `Run: ${sender.runId}`,
    `Agent: ${sender.agent}`,
    `Child index: ${sender.index}`,
    ...(sender.sessionName === undefined ? [] : [`Child intercom target: ${sender.sessionName}`]),
    "",
    body
  ].join("\n")

/**
 * The supervisor's message for a validated call: the `message` as the body
 * of a decision or an update, or the rendered interview with the child's
 * note (C-SUP-5, C-INT-4).
 *
 * @category supervisor
 * @since 0.1.0
 */
export const supervisorMessage = (request: ContactSupervisorRequest, sender: SupervisorMessageSender): string =>
  formatSupervisorMessage(
    request.reason,
    sender,
    request.reason === "interview_request" ? renderInterview(request.interview, request.note) : request.message
  )

/**
 * What a supervisor reads out of a child's message (C-SUP-5, C-RPL-8): the
 * reason (from the heading), the run metadata, the child's own intercom name
 * when it gave one, and the body — the question, update or interview.
 *
 * @category models
 * @since 0.1.0
 */
export interface ParsedSupervisorMessage {
  readonly reason: ContactSupervisorReason
  readonly runId: string
  readonly agent: string
  /** 0-based, as the message shows it. */
  readonly index: number
  readonly sessionName: string | undefined
  readonly body: string
}

const headingReason = (line: string): ContactSupervisorReason | undefined =>
  CONTACT_SUPERVISOR_REASONS.find((reason) => SUPERVISOR_MESSAGE_HEADINGS[reason] === line)

const field = (line: string | undefined, name: string): string | undefined =>
  line?.startsWith(`${name}: `) === true ? line.slice(name.length + 2) : undefined

/**
 * Reads a message written by `formatSupervisorMessage`, or `undefined` when
 * the text does not have that shape. Only meaningful for a message the broker
 * marked `channel: "supervisor"`: the sender is then the bound child.
 *
 * @example
 * ```ts
 * import { parseSupervisorMessage } from "effect-intercom/session"
 *
 * parseSupervisorMessage("Subagent needs a supervisor decision.\nRun: 78f659a3\nAgent: worker\nChild index: 0\n\nWhich API?")
 * // { reason: "need_decision", runId: "78f659a3", agent: "worker", index: 0, sessionName: undefined, body: "Which API?" }
 * ```
 *
 * @category supervisor
 * @since 0.1.0
 */
export const parseSupervisorMessage = (text: string): ParsedSupervisorMessage | undefined => {
  const lines = text.split("\n")
  const reason = headingReason(lines[0] ?? "")
  const runId = field(lines[1], "Run")
  const agent = field(lines[2], "Agent")
  const indexText = field(lines[3], "Child index")
  if (reason === undefined || runId === undefined || agent === undefined || indexText === undefined) return undefined
  if (!/^\d+$/.test(indexText)) return undefined
  const sessionName = field(lines[4], "Child intercom target")
  const blank = sessionName === undefined ? 4 : 5
  if (lines[blank] !== "") return undefined
  return { reason, runId, agent, index: Number(indexText), sessionName, body: lines.slice(blank + 1).join("\n") }
}
