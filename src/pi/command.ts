/**
 * `/intercom [all]` and its shortcut: in the TUI, an overlay that lists the
 * sessions with their status and composes a send to the one picked; in the
 * other modes, the listing as a notification. Everything goes through the
 * session runtime's `intercom` tool actions, so the texts and rules are the
 * tool's.
 */
import type { ExtensionContext, ExtensionUIContext } from "@earendil-works/pi-coding-agent"
import type { IntercomToolParams, ToolResult } from "../session/IntercomSession.ts"

/** A session row of the overlay: its label and the exact target to send to. */
interface Row {
  readonly label: string
  readonly target: string
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
    const label = `${typeof name === "string" && name !== "" ? name : id.slice(0, 8)} — ${
      typeof status === "string" ? status : "?"
    } — ${typeof cwd === "string" ? cwd : ""}`
    rows.push({ label, target: id })
  }
  return rows
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
    ctx.ui.notify(listing.text, listing.isError ? "error" : "info")
    return
  }
  const rows = rowsOf(listing)
  if (rows.length === 0) {
    ctx.ui.notify(listing.text, "info")
    return
  }
  const picked = await ctx.ui.select("Intercom — send to", rows.map((row) => row.label))
  const row = rows.find((candidate) => candidate.label === picked)
  if (row === undefined) return
  const message = await ctx.ui.editor(`Message to ${row.label.split(" — ")[0] ?? row.target}`, "")
  if (message === undefined || message.trim() === "") return
  const sent = await run({ action: "send", to: row.target, message })
  ctx.ui.notify(sent.text, sent.isError ? "error" : "info")
}
