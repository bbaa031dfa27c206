/**
 * `/intercom [all]` and its shortcut: in the TUI, an overlay that lists the
 * sessions with their status and composes a send to the one picked (a send
 * that fails shows its error and opens the editor again with the message, so
 * nothing typed is lost); in the other modes, the listing as a notification. Everything goes through the
 * session runtime's `intercom` tool actions, so the texts and rules are the
 * tool's. What peers control (names, statuses, cwds) is shown safely: a
 * picker row through `terminalSafe` (one line), a notification through
 * `terminalText`, as the CLI shows them.
 */
import type { ExtensionContext, ExtensionUIContext } from "@earendil-works/pi-coding-agent"
import { terminalSafe, terminalText } from "../cli/terminalText.ts"
import type { IntercomToolParams, ToolResult } from "../session/IntercomSession.ts"

/** A session row of the overlay: its label and the exact target to send to. */
interface Row {
  readonly label: string
  readonly target: string
}

/**
 * The rows with labels the picker can tell apart: `select` answers with the
 * label, and names need not be unique (C-TGT-2), so a label several rows share
 * gets the end of each one's id (a UUIDv7's random part: its start is a
 * timestamp, shared by sessions started together), and a number if even that
 * is taken.
 */
const distinctLabels = (rows: ReadonlyArray<Row>): ReadonlyArray<Row> => {
  const shared = new Map<string, number>()
  for (const row of rows) shared.set(row.label, (shared.get(row.label) ?? 0) + 1)
  const taken = new Set(rows.filter((row) => shared.get(row.label) === 1).map((row) => row.label))
  return rows.map((row) => {
    if (shared.get(row.label) === 1) return row
    const tagged = `${row.label} — ${row.target.slice(-8)}`
    let label = tagged
    for (let n = 2; taken.has(label); n++) label = `${tagged} (${n})`
    taken.add(label)
    return { ...row, label }
  })
}

const rowsOf = (result: ToolResult): ReadonlyArray<Row> => {
  const sessions = result.details["sessions"]
  const self = result.details["sessionId"]
  if (!Array.isArray(sessions)) return []
  const rows: Array<Row> = []
  for (const session of sessions) {
    if (typeof session !== "object" || session === null) continue
    const id: unknown = Reflect.get(session, "id")
    if (typeof id !== "string" || id === self) continue
    const name: unknown = Reflect.get(session, "name")
    const status: unknown = Reflect.get(session, "status")
    const cwd: unknown = Reflect.get(session, "cwd")
    const label = terminalSafe(
      `${typeof name === "string" && name !== "" ? name : id.slice(0, 8)} — ${typeof status === "string" ? status : "?"} — ${
        typeof cwd === "string" ? cwd : ""
      }`
    )
    rows.push({ label, target: id })
  }
  return distinctLabels(rows)
}

/** What `/intercom` uses of pi's context: the mode, and three dialogs. */
export interface IntercomCommandContext {
  readonly mode: ExtensionContext["mode"]
  readonly ui: Pick<ExtensionUIContext, "select" | "editor" | "notify">
}

/**
 * Opens the intercom for `ctx`: `args` is `""` or `"all"` (the list scope).
 *
 * @category constructors
 * @since 0.1.0
 */
export const openIntercom = async (
  ctx: IntercomCommandContext,
  args: string,
  run: (params: IntercomToolParams) => Promise<ToolResult>
): Promise<void> => {
  const scope = args === "all" ? "all" : "project"
  const listing = await run({ action: "list", scope })
  if (listing.isError || ctx.mode !== "tui") {
    ctx.ui.notify(terminalText(listing.text), listing.isError ? "error" : "info")
    return
  }
  const rows = rowsOf(listing)
  if (rows.length === 0) {
    ctx.ui.notify(terminalText(listing.text), "info")
    return
  }
  const picked = await ctx.ui.select("Intercom — send to", rows.map((row) => row.label))
  const row = rows.find((candidate) => candidate.label === picked)
  if (row === undefined) return
  const name = row.label.split(" — ")[0] ?? row.target
  let title = `Message to ${name}`
  let draft = ""
  // A send that fails keeps what was typed: the editor opens again with it, to send again or close.
  while (true) {
    const message = await ctx.ui.editor(title, draft)
    if (message === undefined || message.trim() === "") return
    const sent = await run({ action: "send", to: row.target, message })
    ctx.ui.notify(terminalText(sent.text), sent.isError ? "error" : "info")
    if (!sent.isError) return
    // An outcome the broker never confirmed may have reached the peer: sending it again could deliver it twice.
    title = sent.details["error"] === "DeliveryUnknown"
      ? `Maybe delivered to ${name} (see the error above): check with ${name} before sending again, or close to discard`
      : `Not sent to ${name} (see the error above): edit and send again, or close to discard`
    draft = message
  }
}
