/**
 * How intercom traffic looks in pi's TUI: the inbound `intercom_message`
 * custom message (C-DLV-18: sender, cwd, reply hint, body — the text the
 * model gets), and the `intercom_sent` / `intercom_received` history entries
 * (C-TOOL-8). A checkpoint entry draws nothing: its message is drawn once,
 * as the custom message that delivered it.
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent"
import { Text } from "@earendil-works/pi-tui"
import { preview } from "../session/render.ts"
import { historyView, MESSAGE_TYPE, RECEIVED_ENTRY, SENT_ENTRY } from "./entries.ts"

/** One line for a history entry, or undefined for a checkpoint (drawn as its message). */
export const historyLine = (customType: string, data: unknown): string | undefined => {
  const entry = historyView(data)
  if (entry === undefined) return undefined
  return customType === SENT_ENTRY
    ? `intercom → ${entry.to ?? "?"}: ${preview(entry.text)}`
    : `intercom ← ${entry.from ?? "?"}: ${preview(entry.text)}`
}

/**
 * Registers the renderers with pi.
 *
 * @category constructors
 * @since 0.1.0
 */
export const registerRenderers = (pi: ExtensionAPI): void => {
  pi.registerMessageRenderer(MESSAGE_TYPE, (message, _options, theme) => {
    const text = typeof message.content === "string"
      ? message.content
      : message.content.map((part) => part.type === "text" ? part.text : "").join("")
    return new Text(`${theme.fg("accent", "📨")} ${text}`, 1, 0)
  })
  for (const customType of [SENT_ENTRY, RECEIVED_ENTRY]) {
    pi.registerEntryRenderer(customType, (entry, _options, theme) => {
      const line = historyLine(customType, entry.data)
      return line === undefined ? undefined : new Text(theme.fg("dim", line), 1, 0)
    })
  }
}
