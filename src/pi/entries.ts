/**
 * The session entries and custom messages the extension writes, and plain
 * readers for them, for the extension's light entry module (the renderers,
 * the lifecycle handlers): no Schema, no effect, so loading the extension
 * costs pi's startup next to nothing. `journal.ts` decodes them strictly.
 */
import { CONTACT_SUPERVISOR_NAME, LOADER_NAME, TOOL_NAME } from "./names.ts"

/** The custom message type inbound intercom messages reach the model as. */
export const MESSAGE_TYPE = "intercom_message"
/** The custom entry type of received messages and ask replies (C-TOOL-8). */
export const RECEIVED_ENTRY = "intercom_received"
/** The custom entry type saying a checkpointed received message was withdrawn by its sender (P73) before the agent had it. */
export const WITHDRAWN_ENTRY = "intercom_withdrawn"
/** The custom entry type of sent messages (C-TOOL-8). */
export const SENT_ENTRY = "intercom_sent"
/** The custom entry type of topic state: subscriptions, own publications, received records (C-TOP-15). */
export const TOPIC_ENTRY = "intercom-topic"

const field = (value: unknown, key: string): unknown =>
  typeof value === "object" && value !== null ? Reflect.get(value, key) : undefined

const text = (value: unknown): string | undefined => typeof value === "string" ? value : undefined

/** The tools whose results show a session used intercom (`usedIntercom`). */
const INTERCOM_TOOLS: ReadonlySet<string> = new Set([TOOL_NAME, LOADER_NAME, CONTACT_SUPERVISOR_NAME])

/**
 * Whether a session's entries show it on the bus before: an intercom history
 * or checkpoint entry, its topic state, an intercom message delivered to its
 * model, or a result of one of the intercom tools. Such a session joins the bus as soon as it starts again, even
 * with a lazily shown tool, which would otherwise keep it off the bus after
 * a /reload or a resume until its model happened to use the tool.
 *
 * @category readers
 * @since 0.1.0
 */
export const usedIntercom = (
  entries: ReadonlyArray<{ readonly type: string; readonly customType?: string | undefined; readonly message?: unknown }>
): boolean =>
  entries.some((entry) =>
    (entry.type === "custom" &&
      (entry.customType === RECEIVED_ENTRY || entry.customType === SENT_ENTRY || entry.customType === TOPIC_ENTRY)) ||
    (entry.type === "custom_message" && entry.customType === MESSAGE_TYPE) ||
    (entry.type === "message" && field(entry.message, "role") === "toolResult" &&
      INTERCOM_TOOLS.has(text(field(entry.message, "toolName")) ?? ""))
  )

/**
 * The message id, sender's session id and intent an `intercom_message`'s
 * details name, if they name all three (two senders may use one message id).
 *
 * @category readers
 * @since 0.1.0
 */
export const deliveredMessage = (
  details: unknown
): { readonly messageId: string; readonly from: string; readonly intent: string } | undefined => {
  const messageId = text(field(details, "messageId"))
  const from = text(field(field(details, "from"), "id"))
  const intent = text(field(details, "intent"))
  return messageId === undefined || from === undefined || intent === undefined ? undefined : { messageId, from, intent }
}

/**
 * What a history entry shows: who it went to or came from and its text, or
 * undefined for a checkpoint (its message is shown as the custom message that
 * delivered it) and for data it does not recognise.
 *
 * @category readers
 * @since 0.1.0
 */
export const historyView = (
  data: unknown
): { readonly to: string | undefined; readonly from: string | undefined; readonly text: string } | undefined => {
  if (field(data, "inbound") !== undefined) return undefined
  const body = text(field(field(data, "message"), "text"))
  return body === undefined ? undefined : { to: text(field(data, "to")), from: text(field(data, "from")), text: body }
}
