/**
 * The `intercom` tool as pi sees it (C-TOOL): pi-intercom's name, parameters
 * and texts, TypeBox parameters with `StringEnum`s (pi validates them before
 * `execute`, so an unknown action or a malformed attachment is a tool error
 * and nothing is sent), the prompt snippet and guidelines, and the small
 * `load_intercom` tool for `toolVisibility: "after-first-use"` (C-TOOL-15).
 *
 * `execute` only hands the parameters to the generation's session runtime;
 * the abort signal is the cancellation of an `ask` (C-ASK-3).
 */
import { StringEnum } from "@earendil-works/pi-ai"
import type { AgentToolResult, ToolDefinition } from "@earendil-works/pi-coding-agent"
import { type Static, Type } from "typebox"
import { MAX_ASK_TIMEOUT_MS } from "../protocol/constants.ts"
import type { IntercomToolParams, ToolResult } from "../session/IntercomSession.ts"
import { LOADER_NAME, TOOL_NAME } from "./names.ts"

/**
 * The parameters of the `intercom` tool.
 *
 * @category schemas
 * @since 0.1.0
 */
export const IntercomParameters = Type.Object({
  action: StringEnum(
    [
      "list",
      "send",
      "ask",
      "reply",
      "pending",
      "status",
      "publish",
      "subscribe",
      "unsubscribe",
      "topics",
      "results",
      "result",
      "questions",
      "question",
      "answer",
      "stop",
      "peek",
      "steer"
    ] as const,
    {
      description:
        "Action: 'list', 'send', 'ask', 'reply', 'pending', 'status', a topic action: 'publish', 'subscribe', 'unsubscribe', 'topics', an archived-report action: 'results', 'result', a durable question action: 'questions', 'question', 'answer', 'stop', or a supervised-worker action: 'peek', 'steer', 'stop', 'result' (with run)"
    }
  ),
  to: Type.Optional(Type.String({
    description: "Target session name or ID (for 'send', 'ask', or disambiguating 'reply')"
  })),
  message: Type.Optional(Type.String({ description: "Message to send (for 'send', 'ask', or 'reply' action)" })),
  attachments: Type.Optional(Type.Array(Type.Object({
    type: StringEnum(["file", "snippet", "context"] as const),
    name: Type.String(),
    content: Type.String(),
    language: Type.Optional(Type.String())
  }))),
  replyTo: Type.Optional(Type.String({ description: "Message ID to reply to (for threading or responding to an 'ask')" })),
  replyError: Type.Optional(Type.String({
    description:
      "For 'reply' to an 'ask': answer with a failure instead; the asker's ask ends as an error with exactly this text ('message' may be left out)"
  })),
  timeoutMs: Type.Optional(Type.Number({
    description:
      `For 'ask': how long to wait for the reply, in whole milliseconds from 1 to ${MAX_ASK_TIMEOUT_MS} (30 days; default from config, 10 minutes)`
  })),
  delivery: Type.Optional(StringEnum(["steer", "queue", "passive"] as const, {
    description:
      "For 'send'/'reply' (and 'ask', never passive): 'steer' (default: reaches a busy session at its next tool boundary), 'queue' (waits until its current work is done) or 'passive' (shown, never wakes its model). On 'ask', an explicit delivery waits even if the peer is busy; without it, an ask to a peer publishing accepts_asks:false is sent but returns at once with reason peer_busy"
  })),
  queueMode: Type.Optional(StringEnum(["stack", "replace"] as const, {
    description:
      "With delivery 'queue': 'stack' (default, every message) or 'replace' (only the latest message per threadId is delivered; needs threadId)"
  })),
  threadId: Type.Optional(Type.String({ description: "With queueMode 'replace': the thread whose latest message replaces earlier ones" })),
  passive: Type.Optional(Type.Boolean({ description: "For 'send': legacy alias of delivery 'passive'" })),
  scope: Type.Optional(StringEnum(["project", "all"] as const, {
    description: "For 'list' and 'status': 'project' (default: this repository and its worktrees) or 'all'"
  })),
  group: Type.Optional(Type.String({
    description:
      "Read-only. For 'list': peek at another intercom group's sessions (no send rights there); for 'status': also count that group. 'send'/'ask'/'reply' stay in your own group: any other group is refused."
  })),
  topic: Type.Optional(Type.String({
    description: "For 'publish', 'subscribe', 'unsubscribe': the exact topic (no wildcards); for 'topics': an optional filter"
  })),
  event: Type.Optional(StringEnum(["update", "blocker", "decision", "release"] as const, {
    description: "For 'publish': 'update' (default; quiet, wakes nobody), 'blocker' or 'decision' (steer subscribers), 'release' (with ownership 'released')"
  })),
  resource: Type.Optional(Type.String({ description: "For 'publish': the resource this state is about" })),
  ownership: Type.Optional(StringEnum(["held", "released"] as const, {
    description: "For 'publish' with 'resource': advisory ownership, not a lock"
  })),
  awaitRelease: Type.Optional(Type.Boolean({
    description: "For 'subscribe': also be interrupted when the resource is released"
  })),
  ref: Type.Optional(Type.String({
    description: "For 'result': the archived report's address, result:<UUID> from 'results' (not a run handle or a session)"
  })),
  run: Type.Optional(Type.String({
    description: "For 'peek', 'steer', 'stop', 'result': a worker's run handle from the delegation receipt (e.g. run-3); not a bus handle from 'list' and not a result:<UUID>. The steer instruction is 'message'."
  })),
  questionId: Type.Optional(Type.String({
    description: "For 'question', 'answer', 'stop': the durable question's id (the answer itself is 'message')"
  })),
  offset: Type.Optional(Type.Number({
    description: "For 'result': the page's first UTF-16 code unit, zero-based (default 0; use the nextOffset given); for 'results': reports to skip; for 'questions': where the page starts (default 0)"
  })),
  limit: Type.Optional(Type.Number({
    description: "For 'result': UTF-16 code units per page, 2 to 100000 (default 20000); for 'results': reports per page, 1 to 50 (default 20); for 'questions': questions per page, 1–100 (default 20)"
  }))
})

/**
 * The `intercom` tool's parameters as pi hands them to `execute`.
 *
 * @category models
 * @since 0.1.0
 */
export type IntercomParameters = Static<typeof IntercomParameters>

/** The tool description, pi-intercom's with the newer actions and options. */
const DESCRIPTION = `Send a message to another pi session running on this machine.
Use this to communicate findings, request help, or coordinate work with other sessions.

Usage:
  intercom({ action: "list" })                    → List active sessions (scope: "all" includes other projects)
  intercom({ action: "send", to: "session-name", message: "..." })  → Send message
  intercom({ action: "ask", to: "session-name", message: "..." })   → Ask and wait for reply
  intercom({ action: "reply", message: "..." })                      → Reply to the active/single pending ask
  intercom({ action: "reply", replyError: "..." })                   → Answer that ask with a failure (the asker gets an error)
  intercom({ action: "pending" })                                      → List unresolved inbound asks
  intercom({ action: "status" })                  → Show connection status, your group and its size

Sessions belong to an intercom group and can only message sessions of the same group.
  intercom({ action: "list", group: "name" })     → Read-only peek at another group's sessions

Topics: quiet, latest state shared with subscribers of an exact topic (message is the state's text).
  intercom({ action: "subscribe", topic: "repo/build", awaitRelease: true })
  intercom({ action: "publish", topic: "repo/build", message: "..." , event: "update" })
  intercom({ action: "topics" })                  → Current records and your subscriptions

Archived reports of delegated work (stored evidence, not live workers; durable or memory-only as each answer says):
  intercom({ action: "results" })                 → The reports you may read, newest first
  intercom({ action: "result", ref: "result:<UUID>", offset: 0 })  → One page; follow nextOffset for the next

Durable questions of your delegated children (they wait with no timeout and survive restarts):
  intercom({ action: "questions" })               → Your questions, unresolved first
  intercom({ action: "question", questionId: "..." })  → One question in full
  intercom({ action: "answer", questionId: "...", message: "..." })  → Save and deliver the answer
  intercom({ action: "stop", questionId: "..." }) → Cancel it (the child stops waiting)

Workers you delegated to, by the run handle from the delegation receipt (run-3; never a bus handle from list):
  intercom({ action: "peek", run: "run-3" })      → Its state and uncertainty; changes nothing
  intercom({ action: "steer", run: "run-3", message: "..." })  → Queue an instruction (the receipt proves acceptance only)
  intercom({ action: "stop", run: "run-3" })      → Stop its work
  intercom({ action: "result", run: "run-3" })    → Its live output, or its final result once settled
A worker's completion wakes you: end your turn instead of polling or sleeping.`

/**
 * What a pi tool result is made of: the session runtime's text, error flag and details.
 *
 * @category rendering
 * @since 0.1.0
 */
export const toAgentResult = (result: ToolResult): AgentToolResult<Readonly<Record<string, unknown>>> => ({
  content: [{ type: "text", text: result.text }],
  details: result.details,
  isError: result.isError
})

/** A string-enum field as pi validated it (TypeBox's `Static` cannot see through `StringEnum`). */
const enumValue = (value: unknown): string | undefined => typeof value === "string" ? value : undefined

/** The session runtime's parameters from pi's validated ones. */
const toParams = (params: IntercomParameters): IntercomToolParams => ({
  action: enumValue(params.action) ?? "",
  to: params.to,
  message: params.message,
  attachments: params.attachments,
  replyTo: params.replyTo,
  replyError: params.replyError,
  timeoutMs: params.timeoutMs,
  delivery: enumValue(params.delivery),
  queueMode: enumValue(params.queueMode),
  threadId: params.threadId,
  passive: params.passive,
  scope: enumValue(params.scope),
  group: params.group,
  topic: params.topic,
  event: enumValue(params.event),
  resource: params.resource,
  ownership: enumValue(params.ownership),
  awaitRelease: params.awaitRelease,
  ref: params.ref,
  questionId: params.questionId,
  run: params.run,
  offset: params.offset,
  limit: params.limit
})

/**
 * The `intercom` tool; `run` reaches the current generation.
 *
 * @category constructors
 * @since 0.1.0
 */
export const intercomTool = (
  run: (params: IntercomToolParams, signal: AbortSignal | undefined) => Promise<ToolResult>,
  defaultActive: boolean
): ToolDefinition<typeof IntercomParameters, Readonly<Record<string, unknown>>> => ({
  name: TOOL_NAME,
  label: "Intercom",
  description: DESCRIPTION,
  promptSnippet:
    "Use to coordinate with other local pi sessions: list peers, send updates, ask for help, or check intercom connectivity.",
  promptGuidelines: [
    "Use intercom send for updates that need no answer; use intercom ask only when this session must wait for the answer before it can continue.",
    "When an intercom message asks for a reply, answer it with intercom({ action: \"reply\", message: \"...\" }); use intercom pending to see unanswered asks."
  ],
  parameters: IntercomParameters,
  defaultActive,
  execute: async (_toolCallId, params, signal) => toAgentResult(await run(toParams(params), signal))
})

/**
 * `load_intercom({})`: makes the full `intercom` tool visible; sends and checks nothing.
 *
 * @category constructors
 * @since 0.1.0
 */
export const loaderTool = (
  run: () => Promise<ToolResult>
): ToolDefinition<ReturnType<typeof Type.Object>, Readonly<Record<string, unknown>>> => ({
  name: LOADER_NAME,
  label: "Load intercom",
  description:
    "Enable the intercom tool to message other local pi sessions (list peers, send, ask, reply). Sends and checks nothing.",
  promptSnippet: "Enable the intercom tool before coordinating with other local pi sessions.",
  parameters: Type.Object({}),
  execute: async () => toAgentResult(await run())
})
