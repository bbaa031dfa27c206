/**
 * Lazy tool exposure (C-TOOL-15, config `toolVisibility`): with
 * `"after-first-use"` a fresh session shows the model only a small
 * `load_intercom` entry; the full `intercom` tool becomes visible when the
 * model loads it, on its first use, or before an actionable inbound message
 * (one that triggers or steers a turn) reaches the host. Presence alone and
 * passive messages do not expose it.
 *
 * It owns one flag, set once; the host makes the tool visible
 * (`Host.exposeTool`), at most once per generation.
 */
import { Effect } from "effect"
import type { ToolVisibility } from "../config/schema.ts"
import type { HostService } from "./Host.ts"
import type { ToolResult } from "./IntercomSession.ts"

/** The `toolVisibility` setting (config.json), re-exported with the exposure it drives. */
export type { ToolVisibility }

/**
 * The text `load_intercom` answers.
 *
 * @category rendering
 * @since 0.1.0
 */
export const TOOL_LOADED =
  `The intercom tool is enabled. Use intercom({ action: "list" }) to see the other sessions.`

/**
 * The exposure state of one generation.
 *
 * @category models
 * @since 0.1.0
 */
export interface ToolExposure {
  /** Whether the full tool is visible. */
  readonly exposed: () => boolean
  /** Makes it visible (once); a no-op when it already is. */
  readonly expose: Effect.Effect<void>
  /** `load_intercom({})`: exposes the tool and sends or checks nothing. */
  readonly load: Effect.Effect<ToolResult>
}

/**
 * The exposure of a generation whose host has `exposeTool` (hosts without it
 * always show their tool).
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeToolExposure = (visibility: ToolVisibility, host: HostService): ToolExposure => {
  let exposed = visibility === "always" || host.exposeTool === undefined
  const expose = Effect.suspend(() => {
    if (exposed || host.exposeTool === undefined) return Effect.void
    exposed = true
    return host.exposeTool()
  })
  return {
    exposed: () => exposed,
    expose,
    load: Effect.as(expose, { text: TOOL_LOADED, isError: false, details: { exposed: true } })
  }
}
