/**
 * From the bus to the workflow layer: turns an inbound message, as
 * `IntercomClient.messages` yields it (`InboundMessage`) or as the session
 * runtime hands it to its host (`Inbound`), into the `InboundEntry` the
 * ordering rules read.
 *
 * C-ORD-24 asks that a bridged child's messages carry their source
 * (`subagentRunId`, `subagentAgent`, `subagentIndex`). No new wire field is
 * needed for that: a child's `contact_supervisor` message arrives with
 * `channel: "supervisor"`, which only the broker sets and only for the child
 * its capability is bound to (`supervisor-v1`), and its text starts with the
 * run metadata (`Run:`, `Agent:`, `Child index:`, C-SUP-5). The adapter reads
 * the source from there. For a child's ordinary sends (no channel) the
 * engine, which launched the child, can name the source itself
 * (`resolveSource`, e.g. from the session names `Children.launch` gave out).
 * Base clients and plain sends are unaffected: nothing is added to any frame.
 *
 * Pure functions; nothing here owns state.
 */
import type { InboundMessage } from "../client/events.ts"
import type { SessionInfo } from "../protocol/frames.ts"
import type { Inbound } from "../session/Host.ts"
import { parseSupervisorMessage } from "../session/supervisorMessages.ts"
import type { EntrySource, InboundEntry } from "./InboundEntry.ts"

/**
 * How the adapter learns a sender's source when the message does not carry
 * it (a bridged child's plain send): the engine's own table of the children
 * it launched. `undefined`: not a bridged child (or unknown).
 *
 * @category ports
 * @since 0.1.0
 */
export type SourceResolver = (from: SessionInfo) => EntrySource | undefined

/**
 * Options of `inboundEntry`.
 *
 * @category models
 * @since 0.1.0
 */
export interface InboundEntryOptions {
  /** Names the source of a sender whose message does not carry one. */
  readonly resolveSource?: SourceResolver | undefined
}

/**
 * The generated thread a bridged child's progress updates share: one per
 * (run, agent, index). `IdleQueue.dropFinishedProgress(senderId, thread)`
 * with this thread drops a finished child's queued progress (C-DLV-17).
 *
 * @category keys
 * @since 0.1.0
 */
export const progressThreadOf = (source: EntrySource): string =>
  `progress:${source.subagentRunId}:${source.subagentAgent ?? ""}:${source.subagentIndex ?? ""}`

/**
 * What the supervisor channel says about a message: its source (C-ORD-24)
 * and whether it is a progress update; `undefined` for any other message.
 *
 * @category constructors
 * @since 0.1.0
 */
export const supervisorSourceOf = (
  inbound: Pick<InboundMessage, "channel" | "message">
): { readonly source: EntrySource; readonly progress: boolean } | undefined => {
  if (inbound.channel !== "supervisor") return undefined
  const parsed = parseSupervisorMessage(inbound.message.content.text)
  if (parsed === undefined) return undefined
  return {
    source: { subagentRunId: parsed.runId, subagentAgent: parsed.agent, subagentIndex: parsed.index },
    progress: parsed.reason === "progress_update"
  }
}

/**
 * An inbound message as an ordering entry; the message itself is the
 * payload. Sender id and name, the sender's timestamp, `expectsReply` and
 * `replyTo` come from the message (C-ORD-24); the source from the
 * supervisor channel or `resolveSource`; a progress update's thread is the
 * sender's `delivery-v1` thread, else the generated one (`progressThreadOf`).
 *
 * @example
 * ```ts
 * import { Stream } from "effect"
 * import { IntercomClient } from "effect-intercom/client"
 * import { inboundEntry } from "effect-intercom/workflow"
 *
 * // The session's inbound messages as ordering entries (a bridged child's carry their source).
 * const entries = IntercomClient.useSync((client) => Stream.map(client.messages, (inbound) => inboundEntry(inbound)))
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const inboundEntry = (
  inbound: InboundMessage,
  options: InboundEntryOptions = {}
): InboundEntry<InboundMessage> => {
  const { from, message } = inbound
  const supervisor = supervisorSourceOf(inbound)
  const source = supervisor?.source ?? options.resolveSource?.(from)
  const progress = supervisor?.progress === true
  const threadId = inbound.delivery?.threadId ?? (progress && source !== undefined ? progressThreadOf(source) : undefined)
  return {
    messageId: message.id,
    senderId: from.id,
    senderName: from.name,
    timestamp: message.timestamp,
    expectsReply: message.expectsReply === true,
    replyTo: message.replyTo,
    source,
    threadId,
    progress: progress || undefined,
    payload: inbound
  }
}

/**
 * The session runtime's `Inbound` (what `Host.deliver` gets) as the client's
 * `InboundMessage`: sender, message, supervisor channel and delivery mode.
 * The rendering (`text`) and intent are the session's and are not carried.
 *
 * @category constructors
 * @since 0.1.0
 */
export const inboundMessageOf = (inbound: Inbound): InboundMessage => ({
  from: inbound.from,
  message: inbound.message,
  ...(inbound.channel === undefined ? {} : { channel: inbound.channel }),
  ...(inbound.delivery === "steer" ? {} : { delivery: { delivery: inbound.delivery } })
})
