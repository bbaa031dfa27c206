/**
 * The two config.json keys the extension needs before any session starts:
 * `toolVisibility` (which tools to register active) and `shortcut` (which key
 * opens the overlay). Read synchronously and without effect, so loading the
 * extension stays cheap for pi's startup; the generation reads the full,
 * strictly validated settings when its session starts (and notifies problems).
 * The agent dir follows the rule of `config/agentDir.ts`: `ATOMIC_CODING_AGENT_DIR`,
 * else `PI_CODING_AGENT_DIR`, else `~/.pi/agent`.
 */
import type { KeyId } from "@earendil-works/pi-tui"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { ToolVisibility } from "../config/schema.ts"

/**
 * What the factory reads from config.json.
 *
 * @category models
 * @since 0.1.0
 */
export interface FactoryConfig {
  readonly toolVisibility: ToolVisibility
  /** The configured key, when it reads as one (`alt+m`, `ctrl+shift+i`, …). */
  readonly shortcut: KeyId | undefined
}

const MODIFIER = "(?:ctrl|alt|shift|super|meta)"
const KEY_PATTERN = new RegExp(`^(?:${MODIFIER}\\+)*[a-z0-9\\p{P}\\p{S}]+$`, "u")

/** Whether a configured shortcut has the shape of pi's key ids (pi checks the key itself). */
const isKeyId = (value: string): value is KeyId => KEY_PATTERN.test(value)

const agentDir = (env: NodeJS.ProcessEnv): string => {
  for (const name of ["ATOMIC_CODING_AGENT_DIR", "PI_CODING_AGENT_DIR"]) {
    const value = env[name]?.trim()
    if (value !== undefined && value !== "") return path.resolve(value)
  }
  return path.join(os.homedir(), ".pi", "agent")
}

const readJson = (file: string): unknown => {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8").replace(/^\uFEFF/, ""))
  } catch {
    return undefined
  }
}

/**
 * Reads `toolVisibility` and `shortcut` for this process's agent dir; a
 * missing, unreadable or malformed file, or a wrong-typed key, means the default.
 *
 * @category constructors
 * @since 0.1.0
 */
export const factoryConfig = (env: NodeJS.ProcessEnv = process.env): FactoryConfig => {
  const file = readJson(path.join(agentDir(env), "intercom", "config.json"))
  const visibility: unknown = typeof file === "object" && file !== null ? Reflect.get(file, "toolVisibility") : undefined
  const shortcut: unknown = typeof file === "object" && file !== null ? Reflect.get(file, "shortcut") : undefined
  const key = typeof shortcut === "string" ? shortcut.trim().toLowerCase() : ""
  return {
    toolVisibility: visibility === "after-first-use" ? "after-first-use" : "always",
    shortcut: isKeyId(key) ? key : undefined
  }
}
