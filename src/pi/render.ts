/**
 * How intercom traffic looks in pi's TUI: the inbound `intercom_message`
 * custom message (C-DLV-18: sender, cwd, reply hint, body — the text the
 * model gets), and the `intercom_sent` / `intercom_received` history entries
 * (C-TOOL-8). A checkpoint entry draws nothing: its message is drawn once,
 * as the custom message that delivered it. pi's `Text` passes escape
 * sequences through to the terminal, so what a peer controls (its name, its
 * cwd, the message text) is drawn through the CLI's `terminalText`: every
 * control character but LF and TAB shown as its escape (`\u001b`), whatever
 * the broker relayed. The model still gets the message as it was sent.
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent"
import { Text } from "@earendil-works/pi-tui"
import { terminalText } from "../cli/terminalText.ts"
import { preview } from "../session/render.ts"
import { historyView, MESSAGE_TYPE, RECEIVED_ENTRY, SENT_ENTRY } from "./entries.ts"

/** One line for a history entry, or undefined for a checkpoint (drawn as its message); safe on a terminal (`terminalText`). */
export const historyLine = (customType: string, data: unknown): string | undefined => {
  const entry = historyView(data)
  if (entry === undefined) return undefined
  return terminalText(
    customType === SENT_ENTRY
      ? `intercom → ${entry.to ?? "?"}: ${preview(entry.text)}`
      : `intercom ← ${entry.from ?? "?"}: ${preview(entry.text)}`
  )
}

/**
 * The text drawn for an inbound `intercom_message` (its content: the sender,
 * its cwd, the body), safe on a terminal (`terminalText`).
 */
export const inboundDisplay = (content: string | ReadonlyArray<{ readonly type: string; readonly text?: string }>): string =>
  terminalText(
    typeof content === "string" ? content : content.map((part) => part.type === "text" ? part.text ?? "" : "").join("")
  )

/**
 * Registers the renderers with pi.
 *
 * @category constructors
 * @since 0.1.0
 */
export const registerRenderers = (pi: ExtensionAPI): void => {
  pi.registerMessageRenderer(MESSAGE_TYPE, (message, _options, theme) =>
    new Text(`${theme.fg("accent", "📨")} ${inboundDisplay(message.content)}`, 1, 0))
  for (const customType of [SENT_ENTRY, RECEIVED_ENTRY]) {
    pi.registerEntryRenderer(customType, (entry, _options, theme) => {
      const line = historyLine(customType, entry.data)
      return line === undefined ? undefined : new Text(theme.fg("dim", line), 1, 0)
    })
  }
}
