/**
 * The two config.json keys the extension needs before any session starts:
 * `toolVisibility` (which tools to register active) and `shortcut` (which key
 * opens the overlay). Read synchronously, because pi calls the factory
 * synchronously; the generation reads the settings again when its session
 * starts (and notifies problems).
 *
 * There are no rules of its own here: the file is found and validated by
 * `resolveIntercomSettings`, exactly as the runtime settings are — the same
 * candidates (the Atomic fallback `~/.atomic/agent/intercom/config.json`
 * included, C-CFG-1) and the same strict parse, so a rejected file means the
 * defaults for these two keys too (C-CFG-2).
 */
import type { KeyId } from "@earendil-works/pi-tui"
import * as os from "node:os"
import type { Environment } from "../config/agentDir.ts"
import { readConfigFileSync } from "../config/load.ts"
import type { ToolVisibility } from "../config/schema.ts"
import { resolveIntercomSettings } from "../config/settings.ts"

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

/**
 * Where `factoryConfig` resolves from, besides the environment; each defaults
 * to this process's own.
 *
 * @category models
 * @since 0.1.0
 */
export interface FactoryConfigOptions {
  /** Defaults to `os.homedir()`: the base of `~/.pi/agent` and the Atomic fallback. */
  readonly homeDir?: string | undefined
  /** Defaults to `process.cwd()`: the base of relative agent dirs. */
  readonly cwd?: string | undefined
}

const MODIFIER = "(?:ctrl|alt|shift|super|meta)"
const KEY_PATTERN = new RegExp(`^(?:${MODIFIER}\\+)*[a-z0-9\\p{P}\\p{S}]+$`, "u")

/** Whether a configured shortcut has the shape of pi's key ids (pi checks the key itself). */
const isKeyId = (value: string): value is KeyId => KEY_PATTERN.test(value)

/**
 * Reads `toolVisibility` and `shortcut` for this process's agent dir, as the
 * runtime settings (`readIntercomSettings`) read them: a missing, unreadable
 * or rejected file means the defaults. A `shortcut` that does not read as a
 * key id is left to pi's default.
 *
 * @category constructors
 * @since 0.1.0
 */
export const factoryConfig = (
  env: Environment = process.env,
  options: FactoryConfigOptions = {}
): FactoryConfig => {
  const { settings } = resolveIntercomSettings({
    env,
    cwd: options.cwd ?? process.cwd(),
    homeDir: options.homeDir ?? os.homedir(),
    readFile: readConfigFileSync
  })
  const key = settings.shortcut?.trim().toLowerCase() ?? ""
  return {
    toolVisibility: settings.toolVisibility,
    shortcut: isKeyId(key) ? key : undefined
  }
}
