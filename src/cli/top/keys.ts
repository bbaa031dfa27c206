/**
 * `intercom top`'s keyboard, as a pure step: a key and the view's settings
 * give the next settings, or `quit`. `s` cycles the sort column, `/` starts
 * typing a filter (Enter keeps it, Esc clears it, Backspace deletes), `q`
 * (or Ctrl+C) quits.
 */
import { SORT_COLUMNS, type ViewSettings } from "./view.ts"

/** One key press: the character typed (if any) and the key's name. */
export interface KeyPress {
  readonly input: string | undefined
  readonly name: string
  readonly ctrl: boolean
}

/** The settings after `key`, or `"quit"`. */
export const step = (settings: ViewSettings, key: KeyPress): ViewSettings | "quit" => {
  if (key.ctrl && (key.name === "c" || key.name === "d")) return "quit"
  if (settings.editing !== undefined) {
    if (key.name === "return" || key.name === "enter") return { ...settings, filter: settings.editing.trim(), editing: undefined }
    if (key.name === "escape") return { ...settings, filter: "", editing: undefined }
    if (key.name === "backspace") return { ...settings, editing: settings.editing.slice(0, -1) }
    const typed = key.input
    if (typed !== undefined && !key.ctrl && typed.length === 1 && typed >= " ") {
      return { ...settings, editing: settings.editing + typed }
    }
    return settings
  }
  switch (key.input) {
    case "q":
      return "quit"
    case "s":
      return { ...settings, sort: SORT_COLUMNS[(SORT_COLUMNS.indexOf(settings.sort) + 1) % SORT_COLUMNS.length]! }
    case "/":
      return { ...settings, editing: settings.filter }
    default:
      return key.name === "escape" ? { ...settings, filter: "" } : settings
  }
}
