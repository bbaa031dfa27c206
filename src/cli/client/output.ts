/**
 * What the client commands print. Text mode shows the session's tool-result
 * text (the contract texts: `Message sent to …`, `**Reply from …:**`, the
 * `list` sections, `No unresolved inbound asks.`); `--json` prints one JSON
 * object per result, or per event for `watch`. See docs/cli.md.
 */
import * as Console from "effect/Console"
import type * as Effect from "effect/Effect"
import type { PresenceEvent } from "../../client/events.ts"
import type { DeliveryMode } from "../../protocol/deliveryModes.ts"
import type { Message, SessionInfo } from "../../protocol/frames.ts"
import type { Inbound } from "../../session/Host.ts"
import type { IntercomToolParams, ToolResult } from "../../session/IntercomSession.ts"
import { queuedFor, queuedMarker } from "../../session/oldMail.ts"
import { messageBody } from "../../session/render.ts"
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from "../exit.ts"
import { type StdoutWriteFailed, writeStdout } from "../stdout.ts"
import { terminalJson, terminalText } from "../terminalText.ts"

// ---------------------------------------------------------------------------
// Exit codes
// ---------------------------------------------------------------------------

/** Tool errors that mean "the command was called wrongly", not "it did not work" (`NoSuchAgentDir`: a `--dir` that names no directory). */
const USAGE_ERRORS: ReadonlySet<string> = new Set([
  "MissingParameter",
  "InvalidInput",
  "InvalidTimeout",
  "UnknownAction",
  "NoSuchAgentDir"
])

/** 0 for a result, 2 for a usage error (empty message, control characters, bad timeout, no such `--dir`), else 1. */
export const exitCodeOf = (result: ToolResult): number => {
  if (!result.isError) return EXIT_OK
  const kind = result.details["error"]
  return typeof kind === "string" && USAGE_ERRORS.has(kind) ? EXIT_USAGE : EXIT_FAILURE
}

// ---------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------

/** The tool-style result of a failure that happened before any session existed; `kind` is the error's `_tag`. */
export const errorResult = (kind: string, text: string): ToolResult => ({
  text,
  isError: true,
  details: { error: kind }
})

/** For `ask`: the answer's text without the `**Reply from <to>:**` line. */
const replyBody = (params: IntercomToolParams, result: ToolResult): string | undefined => {
  if (params.action !== "ask" || result.isError || params.to === undefined) return undefined
  const prefix = `**Reply from ${params.to}:**\n`
  return result.text.startsWith(prefix) ? result.text.slice(prefix.length) : undefined
}

/** The `--json` object of one command result. */
export const resultJson = (
  params: IntercomToolParams,
  result: ToolResult,
  via: "session" | "watch"
): Record<string, unknown> => {
  const reply = replyBody(params, result)
  return {
    ok: !result.isError,
    action: params.action,
    via,
    text: result.text,
    ...(reply === undefined ? {} : { reply }),
    details: result.details
  }
}

/**
 * Text: the result on stdout, or the error on stderr, through `terminalText`
 * (it holds what peers wrote: names, replies, topic texts). JSON: the object
 * on stdout through `terminalJson` (every control character escaped, C1 and bidirectional formatting too).
 * Fails with `StdoutWriteFailed` when stdout did not take it (stdout.ts).
 */
export const printResult = (
  json: boolean,
  params: IntercomToolParams,
  result: ToolResult,
  via: "session" | "watch"
): Effect.Effect<void, StdoutWriteFailed> =>
  json
    ? writeStdout(terminalJson(resultJson(params, result, via)))
    : result.isError
    ? Console.error(terminalText(result.text))
    : writeStdout(terminalText(result.text))

/**
 * What stderr says when stdout did not take the result of `params`: for an
 * answered `ask`, that the answer is lost (it was consumed: the asked session
 * will not send it again).
 */
export const unprintedResultText = (params: IntercomToolParams, result: ToolResult, error: StdoutWriteFailed): string =>
  params.action === "ask" && !result.isError
    ? `${error.message} The answer from ${params.to ?? "the asked session"} was received but could not be kept: it is lost, and the asked session will not send it again; ask again if you need it.`
    : error.message

// ---------------------------------------------------------------------------
// Events (watch; inbound messages of short-lived commands)
// ---------------------------------------------------------------------------

const indent = (text: string): string =>
  text
    .split("\n")
    .map((line) => `  ${line}`)
    .join("\n")

const shortId = (id: string): string => id.slice(0, 8)

/** `name (1a2b3c4d)`, or `Unnamed session (1a2b3c4d)`. */
export const sessionLabel = (session: { readonly id: string; readonly name?: string | undefined }): string =>
  `${session.name?.trim() || "Unnamed session"} (${shortId(session.id)})`

const who = (session: SessionInfo) => ({ id: session.id, ...(session.name === undefined ? {} : { name: session.name }) })

/**
 * An inbound message: `[ask] <sender> · <message id>` or `[message] <sender>`,
 * `· queued 6h ago` when it waited in the broker's mailbox, then the body indented. A sender's `queue` or `passive` delivery
 * (`delivery-v1`) is named in the tag: `[message, queued]`, `[message, passive]`.
 */
export const inboundText = (
  from: SessionInfo,
  message: Message,
  expectsReply: boolean,
  delivery: DeliveryMode = "steer"
): string =>
  `${expectsReply ? "[ask" : "[message"}${
    delivery === "queue" ? ", queued" : delivery === "passive" ? ", passive" : ""
  }] ${sessionLabel(from)} · ${message.id}${
    message.replyTo === undefined ? "" : ` (in reply to ${message.replyTo})`
  }${queuedMarker(message)}\n${indent(messageBody(message))}`

/** `queuedForMs` of a message that waited in the broker's mailbox (`queuedFor`). */
const queuedJson = (message: Message): { readonly queuedForMs?: number } => {
  const waited = queuedFor(message)
  return waited === undefined ? {} : { queuedForMs: waited }
}

/**
 * An inbound message as a `--json` event: `{ event: "message", from,
 * messageId, expectsReply, delivery?, replyTo?, queuedForMs?, text, attachments?, timestamp }`
 * (`delivery` only for a sender's `queue` or `passive`).
 */
export const inboundJson = (
  inbound: Pick<Inbound, "from" | "message" | "expectsReply"> & { readonly delivery?: DeliveryMode }
): Record<string, unknown> => ({
  event: "message",
  from: who(inbound.from),
  messageId: inbound.message.id,
  expectsReply: inbound.expectsReply,
  ...(inbound.delivery === undefined || inbound.delivery === "steer" ? {} : { delivery: inbound.delivery }),
  ...(inbound.message.replyTo === undefined ? {} : { replyTo: inbound.message.replyTo }),
  ...queuedJson(inbound.message),
  text: inbound.message.content.text,
  ...(inbound.message.content.attachments === undefined ? {} : { attachments: inbound.message.content.attachments }),
  timestamp: inbound.message.timestamp
})

/**
 * A membership event as a line (text) or object (JSON), given what was known
 * about the session before; `undefined` when there is nothing to show (an
 * update that changed neither name nor status). A join of a session already
 * known (no leave seen since) is `[rejoined]`, not a second `[joined]`. One
 * the client made up after a reconnect (`resync`: the change happened while
 * the watch was not connected, IntercomClient's MembershipView) ends with
 * `(while disconnected)`, and its JSON object has `"resync": true`.
 */
export const presenceOutput = (
  event: PresenceEvent,
  before: SessionInfo | undefined
): { readonly text: string; readonly json: Record<string, unknown> } | undefined => {
  const shown = liveOutput(event, before)
  return shown === undefined || event.resync !== true
    ? shown
    : { text: `${shown.text} (while disconnected)`, json: { ...shown.json, resync: true } }
}

const liveOutput = (
  event: PresenceEvent,
  before: SessionInfo | undefined
): { readonly text: string; readonly json: Record<string, unknown> } | undefined => {
  switch (event._tag) {
    case "Joined":
      // A session the watch knows, with no `session_left` since, registered again: its connection or the
      // broker went away and came back (a broker restarted by a client is told its sessions one by one as
      // they reconnect). Not a second `[joined]`: nobody left.
      return before !== undefined
        ? {
          text: `[rejoined] ${sessionLabel(event.session)} · ${event.session.cwd}`,
          json: { event: "rejoined", session: event.session }
        }
        : {
          text: `[joined] ${sessionLabel(event.session)} · ${event.session.cwd}`,
          json: { event: "joined", session: event.session }
        }
    case "Left":
      return {
        text: `[left] ${sessionLabel({ id: event.sessionId, name: before?.name })}`,
        json: { event: "left", sessionId: event.sessionId, ...(before?.name === undefined ? {} : { name: before.name }) }
      }
    case "Updated": {
      const session = event.session
      if (before !== undefined && before.name !== session.name) {
        return {
          text: `[renamed] ${sessionLabel(before)} → ${session.name?.trim() || "Unnamed session"}`,
          json: { event: "renamed", session, previousName: before.name ?? null }
        }
      }
      if (before?.status === session.status) return undefined
      return {
        text: `[status] ${sessionLabel(session)}: ${before?.status ?? "?"} → ${session.status ?? "?"}`,
        json: { event: "status", session, previousStatus: before?.status ?? null }
      }
    }
  }
}

/** A result of an action taken by the watch (a typed reply, or a command run through it). */
export const actionText = (params: IntercomToolParams, result: ToolResult, source: "stdin" | "command"): string => {
  const label = result.isError ? "[error]" : "[done]"
  const from = source === "command" ? ` (intercom ${params.action})` : ""
  const [first = "", ...rest] = result.text.split("\n")
  return rest.length === 0 ? `${label}${from} ${first}` : `${label}${from} ${first}\n${indent(rest.join("\n"))}`
}

/** A result of an action taken by the watch, as a `--json` event: `{ event: "action", source, ok, action, … }`. */
export const actionJson = (
  params: IntercomToolParams,
  result: ToolResult,
  source: "stdin" | "command"
): Record<string, unknown> => ({ event: "action", source, ...resultJson(params, result, "watch") })
