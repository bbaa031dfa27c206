/**
 * The names the extension registers with pi, shared by its light entry
 * module and its runtime (pi-intercom's names, so that it replaces that
 * extension in place).
 */

/** The model-facing tool (C-TOOL-1). */
export const TOOL_NAME = "intercom"
/** The small tool that makes `intercom` visible with `toolVisibility: "after-first-use"` (C-TOOL-15). */
export const LOADER_NAME = "load_intercom"
/** The slash command and its overlay. */
export const COMMAND_NAME = "intercom"
/** The key of the footer status line (`ctx.ui.setStatus`). */
export const STATUS_KEY = "intercom"
/** The tool of a delegated child with a supervisor grant (C-SUP-1). */
export const CONTACT_SUPERVISOR_NAME = "contact_supervisor"
