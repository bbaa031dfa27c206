/**
 * The effective intercom settings of one session or client: defaults, then
 * `config.json`, then the environment (C-CFG, protocol doc §10).
 *
 * `resolveIntercomSettings` is pure — environment, cwd, home dir and a file
 * reader come in as arguments — so every rule is testable without the real
 * disk or environment. `load.ts` wraps it for the real process.
 */
import {
  type AgentDirInput,
  type AgentDirResolution,
  type AgentDirSource,
  configFileCandidates,
  type Environment,
  type IntercomPaths,
  intercomPaths,
  nonBlank,
  resolveAgentDir,
  resolveIntercomPaths
} from "./agentDir.ts"
import { type IntercomConfigError, IntercomEnvError } from "./errors.ts"
import { isAskTimeoutMs } from "../protocol/constants.ts"
import { isAcceptedGroup } from "../protocol/limits.ts"
import { CONFIG_KEY_EXPECTATIONS, GROUP_EXPECTATION, type InboundTrigger, type IntercomConfigFile, type ToolVisibility } from "./schema.ts"
import { ConfigFileRead, parseConfigFile, rejected } from "./configFile.ts"
import { SocketPathError, type SocketPlacement } from "./socketPath.ts"

// ---------------------------------------------------------------------------
// Defaults and environment variable names
// ---------------------------------------------------------------------------

/** `brokerCommand`/`brokerArgs` default pair: a sentinel, never run as written (C-CFG-3). */
export const DEFAULT_BROKER_COMMAND = "npx"
/** The sentinel `brokerArgs` that go with `DEFAULT_BROKER_COMMAND` (C-CFG-3). */
export const DEFAULT_BROKER_ARGS: ReadonlyArray<string> = ["--no-install", "tsx"]

/** The value of each setting when neither `config.json` nor the environment sets it. */
export const INTERCOM_DEFAULTS = {
  confirmSend: false,
  enabled: true,
  replyHint: true,
  inboundTrigger: "always",
  toolVisibility: "always",
  group: "default",
  /** 10 minutes (000 and pi-intercom; design decision over 004's 2 minutes). */
  askTimeoutMs: 600_000,
  sendTimeoutMs: 10_000,
  listTimeoutMs: 5_000,
  livenessIntervalMs: 30_000,
  livenessTimeoutMs: 5_000,
  /**
   * How many received messages a pi session that pi has not saved yet leaves
   * unconfirmed, for the broker to keep, before it confirms them anyway.
   */
  unsavedMessageLimit: 100,
  /** The broker keeps its state in `<intercomDir>/intercom.db` (docs/store.md). */
  durability: "sqlite"
} as const

/**
 * Environment variables, highest precedence first: the Atomic name, then the
 * legacy pi name. A blank value counts as unset and falls through.
 */
export const INTERCOM_ENV = {
  askTimeoutMs: ["ATOMIC_INTERCOM_ASK_TIMEOUT_MS", "PI_INTERCOM_ASK_TIMEOUT_MS"],
  stableId: ["ATOMIC_INTERCOM_STABLE_ID", "PI_INTERCOM_STABLE_ID"],
  scopeId: ["ATOMIC_INTERCOM_SCOPE_ID", "PI_INTERCOM_SCOPE_ID"],
  group: ["ATOMIC_INTERCOM_GROUP", "PI_INTERCOM_GROUP"],
  livenessIntervalMs: ["ATOMIC_INTERCOM_LIVENESS_INTERVAL_MS", "PI_INTERCOM_LIVENESS_INTERVAL_MS"],
  livenessTimeoutMs: ["ATOMIC_INTERCOM_LIVENESS_TIMEOUT_MS", "PI_INTERCOM_LIVENESS_TIMEOUT_MS"]
} as const

// ---------------------------------------------------------------------------
// Settings
// ---------------------------------------------------------------------------

/**
 * How to start the broker. `Default` is what the `"npx" --no-install tsx`
 * sentinel means: run our own compiled broker with the current Node runtime,
 * no PATH lookup. `Command` runs `<command> ...args <broker script>` (C-CFG-4).
 */
export type BrokerLaunch =
  | { readonly _tag: "Default" }
  | {
    readonly _tag: "Command"
    readonly command: string
    readonly args: ReadonlyArray<string>
    /** The `config.json` that set them, named when the broker cannot be started. */
    readonly configFile?: string | undefined
  }

/** How a client checks that its broker still answers (P96). */
export interface LivenessSettings {
  /** How often a registered client probes the broker with a `list` (P96). */
  readonly intervalMs: number
  /** How long the probe may take before the socket is dropped; never more than `intervalMs`. */
  readonly timeoutMs: number
}

/**
 * The effective settings of one session or client: defaults ← `config.json`
 * ← environment. `loadIntercomSettings` gives them for this process; pass them
 * on as `IntercomClient` and `IntercomSession` options.
 */
export interface IntercomSettings {
  /** Agent dir, intercom dir, config file, socket, pid file, spawn lock. */
  readonly paths: IntercomPaths
  /** Which rule chose the agent dir: `--dir`, an environment variable, or the default. */
  readonly agentDirSource: AgentDirSource
  /**
   * The `config.json` that was found and read — `paths.configFile`, or the
   * Atomic fallback — even if it was rejected; `undefined` when none exists.
   */
  readonly configSource: string | undefined
  /** Master switch: `false` means never connect and never appear in `list` (C-CFG-6). */
  readonly enabled: boolean
  readonly confirmSend: boolean
  readonly replyHint: boolean
  readonly inboundTrigger: InboundTrigger
  readonly toolVisibility: ToolVisibility
  /** Suffix appended to the lifecycle status. */
  readonly status: string | undefined
  /** Fixed session id: env, else file, else none. */
  readonly stableId: string | undefined
  /** pi-intercom routing scope (P17), from the environment only; `undefined` means unscoped. */
  readonly scopeId: string | undefined
  /** Home group: env, else file, else `"default"` (per-session injection happens above this layer). */
  readonly group: string
  /** Host key binding for the intercom overlay; `undefined` lets the host choose. */
  readonly shortcut: string | undefined
  readonly broker: BrokerLaunch
  readonly askTimeoutMs: number
  readonly sendTimeoutMs: number
  readonly listTimeoutMs: number
  readonly liveness: LivenessSettings
  /**
   * pi: how many received messages stay unconfirmed (the broker keeps them)
   * while pi has not written the session file; the first past it makes the
   * extension confirm them anyway, and half of it brings a warning
   * (docs/pi.md).
   */
  readonly unsavedMessageLimit: number
  /** Where the broker keeps its state: `"sqlite"` (the database, default) or `"memory"` (lost with the process). */
  readonly durability: "sqlite" | "memory"
}

// ---------------------------------------------------------------------------
// Reading config.json
// ---------------------------------------------------------------------------

const POSITIVE_MS = "a positive integer (milliseconds)"

/** A positive safe integer written in plain decimal digits, or `undefined`. */
export const parsePositiveInt = (text: string): number | undefined => {
  if (!/^\d+$/.test(text)) return undefined
  const value = Number(text)
  return Number.isSafeInteger(value) && value > 0 ? value : undefined
}

interface EnvValue {
  readonly variable: string
  readonly value: string
}

/** The first variable in `names` with a non-blank value (trimmed). */
const firstNonBlank = (env: Environment, names: ReadonlyArray<string>): EnvValue | undefined => {
  for (const variable of names) {
    const value = nonBlank(env[variable])
    if (value !== undefined) return { variable, value }
  }
  return undefined
}

/**
 * The first variable in `names` holding a positive integer; a non-blank value
 * that is not one is ignored (as if unset) with a warning, like pi-intercom's
 * lenient liveness settings.
 */
const lenientPositiveInt = (
  env: Environment,
  names: ReadonlyArray<string>,
  warnings: Array<string>
): number | undefined => {
  for (const variable of names) {
    const value = nonBlank(env[variable])
    if (value === undefined) continue
    const parsed = parsePositiveInt(value)
    if (parsed !== undefined) return parsed
    warnings.push(`Ignoring environment variable ${variable}=${JSON.stringify(value)}: expected ${POSITIVE_MS}.`)
  }
  return undefined
}

/**
 * A warning when the agent dir was named with a leading `~` (`"~/.pi/agent"`
 * in a quoted or non-shell setting): it is not expanded (as in pi-intercom),
 * so it names a directory called `~` under the current directory — a
 * different agent dir in every directory a session starts in.
 */
const unexpandedTilde = (input: AgentDirInput, resolution: AgentDirResolution): string | undefined => {
  const source = resolution.source
  const [given, from] = source._tag === "Override"
    ? [nonBlank(input.dir), "--dir"]
    : source._tag === "Env"
    ? [nonBlank(input.env[source.variable]), source.variable]
    : [undefined, ""]
  if (given === undefined || !given.startsWith("~")) return undefined
  return `The agent dir ${JSON.stringify(given)} (${from}) starts with "~", which is not expanded: it is ${resolution.agentDir}. ` +
    `If you meant your home directory, write the path out (${input.homeDir}${given.slice(1).startsWith("/") ? given.slice(1) : "/…"}).`
}

// ---------------------------------------------------------------------------
// Resolution
// ---------------------------------------------------------------------------

/** The inputs of `resolveIntercomSettings`: everything it would otherwise take from the process. */
export interface ResolveIntercomSettingsInput extends AgentDirInput {
  /** Reads one candidate config file; must answer `Missing` for a file that does not exist. */
  readonly readFile: (path: string) => ConfigFileRead
  /**
   * Decides the short socket fallback (see `intercomPaths`); `loadIntercomSettings`
   * passes this process's. Without it, `paths.socketPath` is always `<intercomDir>/broker.sock`.
   */
  readonly socketPlacement?: SocketPlacement | undefined
}

/** The settings, and what is worth telling the user about how they were found. */
export interface IntercomSettingsResolution {
  readonly settings: IntercomSettings
  /** Things worth a log line that change nothing: unknown keys, ignored liveness values, an agent dir named with a leading `~`. */
  readonly warnings: ReadonlyArray<string>
  /**
   * `IntercomConfigFileError`: the file was rejected and defaults apply — log it.
   * `IntercomEnvError`: a startup error — `settings` falls back as if the
   * variable were unset, but the caller should refuse to start.
   * `SocketPathError`: a startup error — neither the default socket path nor
   * the short fallback fits in a Unix socket address.
   */
  readonly errors: ReadonlyArray<IntercomConfigError>
}

const sameArgs = (a: ReadonlyArray<string>, b: ReadonlyArray<string>): boolean =>
  a.length === b.length && a.every((arg, i) => arg === b[i])

/**
 * `brokerCommand` defaults to the sentinel `"npx"`; `brokerArgs` defaults to
 * the sentinel args while the command is `"npx"`, and to `[]` for any other
 * command (so `{ "brokerCommand": "bun" }` runs `bun <script>`).
 */
export const brokerLaunch = (config: IntercomConfigFile, configFile?: string): BrokerLaunch => {
  const command = config.brokerCommand ?? DEFAULT_BROKER_COMMAND
  const args = config.brokerArgs ?? (command === DEFAULT_BROKER_COMMAND ? DEFAULT_BROKER_ARGS : [])
  return command === DEFAULT_BROKER_COMMAND && sameArgs(args, DEFAULT_BROKER_ARGS)
    ? { _tag: "Default" }
    : { _tag: "Command", command, args, ...(configFile === undefined ? {} : { configFile }) }
}

interface FoundConfig {
  readonly path: string
  readonly read: { readonly _tag: "Text"; readonly text: string } | { readonly _tag: "Unreadable"; readonly reason: string }
}

/** The first candidate that exists (readable or not). */
const findConfig = (
  candidates: ReadonlyArray<string>,
  readFile: (path: string) => ConfigFileRead
): FoundConfig | undefined => {
  for (const path of candidates) {
    const read = readFile(path)
    if (read._tag !== "Missing") return { path, read }
  }
  return undefined
}

/**
 * Defaults ← `config.json` ← environment. Never throws: a rejected file and a
 * bad environment variable come back in `errors`. Pure: use it to test the
 * rules, or where the environment and files are not this process's.
 *
 * @example
 * ```ts
 * import { ConfigFileRead, resolveIntercomSettings } from "effect-intercom/config"
 *
 * const { settings, warnings, errors } = resolveIntercomSettings({
 *   env: { PI_INTERCOM_ASK_TIMEOUT_MS: "120000" },
 *   cwd: "/work",
 *   homeDir: "/home/me",
 *   readFile: (path) =>
 *     path === "/home/me/.pi/agent/intercom/config.json"
 *       ? ConfigFileRead.text(`{ "confirmSend": true, "colour": "blue" }`)
 *       : ConfigFileRead.missing
 * })
 * // settings.askTimeoutMs: 120000; settings.confirmSend: true
 * // settings.paths.socketPath: "/home/me/.pi/agent/intercom/broker.sock"
 * // warnings: ['Intercom config /home/me/.pi/agent/intercom/config.json: ignoring unknown key "colour".']
 * // errors: []
 * ```
 */
export const resolveIntercomSettings = (input: ResolveIntercomSettingsInput): IntercomSettingsResolution => {
  const { env } = input
  const warnings: Array<string> = []
  const errors: Array<IntercomConfigError> = []

  const agentDir = resolveAgentDir(input)
  const tilde = unexpandedTilde(input, agentDir)
  if (tilde !== undefined) warnings.push(tilde)
  const resolvedPaths = input.socketPlacement === undefined
    ? intercomPaths(agentDir.agentDir)
    : resolveIntercomPaths(agentDir.agentDir, input.socketPlacement)
  if (resolvedPaths instanceof SocketPathError) errors.push(resolvedPaths)
  const paths = resolvedPaths instanceof SocketPathError ? intercomPaths(agentDir.agentDir) : resolvedPaths

  const found = findConfig(configFileCandidates(agentDir, input.homeDir, input.cwd), input.readFile)
  let file: IntercomConfigFile = {}
  if (found !== undefined) {
    const parsed = found.read._tag === "Text"
      ? parseConfigFile(found.path, found.read.text)
      : rejected(found.path, "Unreadable", found.read.reason)
    warnings.push(...parsed.warnings)
    if (parsed.error !== undefined) errors.push(parsed.error)
    file = parsed.config
  }

  // A group the broker would refuse at registration is refused here, naming the variable that set it.
  const groupFromEnv = firstNonBlank(env, INTERCOM_ENV.group)
  if (groupFromEnv !== undefined && !isAcceptedGroup(groupFromEnv.value)) {
    errors.push(
      new IntercomEnvError({
        variable: groupFromEnv.variable,
        value: groupFromEnv.value,
        expected: GROUP_EXPECTATION
      })
    )
  }

  const askFromEnv = firstNonBlank(env, INTERCOM_ENV.askTimeoutMs)
  let askTimeoutMs: number = file.askTimeoutMs ?? INTERCOM_DEFAULTS.askTimeoutMs
  if (askFromEnv !== undefined) {
    const parsed = parsePositiveInt(askFromEnv.value)
    // The broker's range (ask-timeout-v1): a larger value would make every ask fail as not delivered.
    if (parsed === undefined || !isAskTimeoutMs(parsed)) {
      errors.push(
        new IntercomEnvError({
          variable: askFromEnv.variable,
          value: askFromEnv.value,
          expected: CONFIG_KEY_EXPECTATIONS.askTimeoutMs
        })
      )
    } else {
      askTimeoutMs = parsed
    }
  }

  const intervalMs = lenientPositiveInt(env, INTERCOM_ENV.livenessIntervalMs, warnings) ??
    INTERCOM_DEFAULTS.livenessIntervalMs
  const timeoutMs = Math.min(
    lenientPositiveInt(env, INTERCOM_ENV.livenessTimeoutMs, warnings) ?? INTERCOM_DEFAULTS.livenessTimeoutMs,
    intervalMs
  )

  const settings: IntercomSettings = {
    paths,
    agentDirSource: agentDir.source,
    configSource: found?.path,
    enabled: file.enabled ?? INTERCOM_DEFAULTS.enabled,
    confirmSend: file.confirmSend ?? INTERCOM_DEFAULTS.confirmSend,
    replyHint: file.replyHint ?? INTERCOM_DEFAULTS.replyHint,
    inboundTrigger: file.inboundTrigger ?? INTERCOM_DEFAULTS.inboundTrigger,
    toolVisibility: file.toolVisibility ?? INTERCOM_DEFAULTS.toolVisibility,
    status: file.status,
    stableId: firstNonBlank(env, INTERCOM_ENV.stableId)?.value ?? file.stableId,
    scopeId: firstNonBlank(env, INTERCOM_ENV.scopeId)?.value,
    group: firstNonBlank(env, INTERCOM_ENV.group)?.value ?? nonBlank(file.group) ?? INTERCOM_DEFAULTS.group,
    shortcut: file.shortcut,
    broker: brokerLaunch(file, found?.path),
    askTimeoutMs,
    sendTimeoutMs: file.sendTimeoutMs ?? INTERCOM_DEFAULTS.sendTimeoutMs,
    listTimeoutMs: file.listTimeoutMs ?? INTERCOM_DEFAULTS.listTimeoutMs,
    liveness: { intervalMs, timeoutMs },
    unsavedMessageLimit: file.unsavedMessageLimit ?? INTERCOM_DEFAULTS.unsavedMessageLimit,
    durability: file.durability ?? INTERCOM_DEFAULTS.durability
  }
  return { settings, warnings, errors }
}
