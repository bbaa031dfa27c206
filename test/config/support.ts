/** In-memory inputs for `resolveIntercomSettings`: no real disk, no real environment. */
import {
  ConfigFileRead,
  type Environment,
  type IntercomSettingsResolution,
  resolveIntercomSettings
} from "../../src/config/index.ts"

export const HOME = "/home/ada"
export const CWD = "/work/project"
export const PI_CONFIG = "/home/ada/.pi/agent/intercom/config.json"
export const ATOMIC_CONFIG = "/home/ada/.atomic/agent/intercom/config.json"

/** A reader over a fixed set of files; anything else is missing. */
export const filesReader = (files: Readonly<Record<string, string | ConfigFileRead>>) => (path: string): ConfigFileRead => {
  if (!Object.hasOwn(files, path)) return ConfigFileRead.missing
  const content = files[path]
  return content === undefined ? ConfigFileRead.missing : typeof content === "string" ? ConfigFileRead.text(content) : content
}

export interface Scenario {
  readonly env?: Environment
  readonly files?: Readonly<Record<string, string | ConfigFileRead>>
  readonly dir?: string
}

export const resolve = (scenario: Scenario = {}): IntercomSettingsResolution =>
  resolveIntercomSettings({
    env: scenario.env ?? {},
    cwd: CWD,
    homeDir: HOME,
    dir: scenario.dir,
    readFile: filesReader(scenario.files ?? {})
  })

/** Resolution with one `~/.pi/agent/intercom/config.json` holding `config` (serialised as JSON). */
export const withConfig = (config: unknown, env: Environment = {}): IntercomSettingsResolution =>
  resolve({ env, files: { [PI_CONFIG]: JSON.stringify(config) } })
