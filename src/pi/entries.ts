/**
 * The session entries and custom messages the extension writes, and plain
 * readers for them, for the extension's light entry module (the renderers,
 * the lifecycle handlers): no Schema, no effect, so loading the extension
 * costs pi's startup next to nothing. `journal.ts` decodes them strictly.
 */

/** The custom message type inbound intercom messages reach the model as. */
export const MESSAGE_TYPE = "intercom_message"
/** The custom entry type of received messages and ask replies (C-TOOL-8). */
export const RECEIVED_ENTRY = "intercom_received"
/** The custom entry type of sent messages (C-TOOL-8). */
export const SENT_ENTRY = "intercom_sent"
/** The custom entry type of topic state: subscriptions, own publications, received records (C-TOP-15). */
export const TOPIC_ENTRY = "intercom-topic"

const field = (value: unknown, key: string): unknown =>
  typeof value === "object" && value !== null ? Reflect.get(value, key) : undefined

const text = (value: unknown): string | undefined => typeof value === "string" ? value : undefined

/**
 * The message id and intent an `intercom_message`'s details name, if they do.
 *
 * @category readers
 * @since 0.1.0
 */
export const deliveredMessage = (details: unknown): { readonly messageId: string; readonly intent: string } | undefined => {
  const messageId = text(field(details, "messageId"))
  const intent = text(field(details, "intent"))
  return messageId === undefined || intent === undefined ? undefined : { messageId, intent }
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
