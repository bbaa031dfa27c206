/**
 * The two config.json keys the extension needs before any session starts:
 * `toolVisibility` (which tools to register active) and `shortcut` (which key
 * opens the overlay). Read synchronously with the same strict rules as every
 * other reader (`resolveIntercomSettings`): a rejected file means defaults.
 * The generation reads the full settings again when its session starts.
 */
import type { KeyId } from "@earendil-works/pi-tui"
import * as fs from "node:fs"
import * as os from "node:os"
import type { ToolVisibility } from "../config/schema.ts"
import { ConfigFileRead, resolveIntercomSettings } from "../config/settings.ts"

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

const readFile = (path: string): ConfigFileRead => {
  try {
    return ConfigFileRead.text(fs.readFileSync(path, "utf8"))
  } catch (error) {
    const code = error instanceof Error && "code" in error ? error.code : undefined
    return code === "ENOENT" ? ConfigFileRead.missing : ConfigFileRead.unreadable(String(code ?? error))
  }
}

/**
 * Reads `toolVisibility` and `shortcut` for this process's agent dir.
 *
 * @category constructors
 * @since 0.1.0
 */
export const factoryConfig = (): FactoryConfig => {
  const { settings } = resolveIntercomSettings({ env: process.env, cwd: process.cwd(), homeDir: os.homedir(), readFile })
  const shortcut = settings.shortcut?.trim().toLowerCase()
  return { toolVisibility: settings.toolVisibility, shortcut: shortcut !== undefined && isKeyId(shortcut) ? shortcut : undefined }
}
