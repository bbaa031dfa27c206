/**
 * Where one agent dir's intercom files live. This module is the single source
 * of truth for the agent-dir rules (C-CFG-1, P90, design "Decisions already
 * taken"); the broker CLI, the client and the pi adapter all call
 * `resolveAgentDir` / `intercomPaths` instead of re-implementing them.
 *
 * Everything here is pure: the environment, cwd, home dir and socket
 * placement come in as arguments, so the rules are unit-testable without
 * touching the process.
 */
import * as path from "node:path"
import { type SocketLocation, socketLocation, SocketPathError, type SocketPlacement } from "./socketPath.ts"

/** Environment variables that name the agent dir, highest precedence first. */
export const AGENT_DIR_ENV_VARS = ["ATOMIC_CODING_AGENT_DIR", "PI_CODING_AGENT_DIR"] as const
/** One of `AGENT_DIR_ENV_VARS`. */
export type AgentDirEnvVar = (typeof AGENT_DIR_ENV_VARS)[number]

/** A read-only view of the environment (`process.env` fits). */
export type Environment = Readonly<Record<string, string | undefined>>

/** What `resolveAgentDir` decides from: a flag, the environment, cwd and home dir. */
export interface AgentDirInput {
  /** An explicit dir (e.g. a `--dir` flag); beats the environment. Blank means "not given". */
  readonly dir?: string | undefined
  /** `ATOMIC_CODING_AGENT_DIR` and `PI_CODING_AGENT_DIR` are read from it. */
  readonly env: Environment
  /** Base for relative values. */
  readonly cwd: string
  readonly homeDir: string
}

/** Where the agent dir came from. */
export type AgentDirSource =
  | { readonly _tag: "Override" }
  | { readonly _tag: "Env"; readonly variable: AgentDirEnvVar }
  | { readonly _tag: "Default" }

/** The agent dir, and which rule chose it. */
export interface AgentDirResolution {
  /** Absolute and normalised. */
  readonly agentDir: string
  readonly source: AgentDirSource
}

/** Trimmed, non-empty value, or `undefined` (empty and whitespace-only mean "unset"). */
export const nonBlank = (value: string | undefined): string | undefined => {
  const trimmed = value?.trim()
  return trimmed === undefined || trimmed.length === 0 ? undefined : trimmed
}

/** `<homeDir>/.pi/agent`: the agent dir when nothing names another one. */
export const defaultAgentDir = (homeDir: string, cwd: string): string => path.resolve(cwd, homeDir, ".pi", "agent")

/**
 * The Atomic default agent dir, `<homeDir>/.atomic/agent`. Only its
 * `intercom/config.json` is ever read (see `configFileCandidates`); runtime
 * files never go there.
 */
export const atomicAgentDir = (homeDir: string, cwd: string): string => path.resolve(cwd, homeDir, ".atomic", "agent")

/**
 * The agent dir: `dir`, else `ATOMIC_CODING_AGENT_DIR`, else
 * `PI_CODING_AGENT_DIR` (each trimmed; blank means unset; relative values are
 * resolved against `cwd`; `~` is not expanded, as in pi-intercom), else
 * `<homeDir>/.pi/agent`.
 *
 * @example
 * ```ts
 * import { resolveAgentDir } from "effect-intercom/config"
 *
 * resolveAgentDir({ env: { PI_CODING_AGENT_DIR: "agents/a" }, cwd: "/work", homeDir: "/home/me" })
 * // { agentDir: "/work/agents/a", source: { _tag: "Env", variable: "PI_CODING_AGENT_DIR" } }
 * resolveAgentDir({ dir: " ", env: {}, cwd: "/work", homeDir: "/home/me" })
 * // { agentDir: "/home/me/.pi/agent", source: { _tag: "Default" } }
 * ```
 */
export const resolveAgentDir = (input: AgentDirInput): AgentDirResolution => {
  const override = nonBlank(input.dir)
  if (override !== undefined) return { agentDir: path.resolve(input.cwd, override), source: { _tag: "Override" } }
  for (const variable of AGENT_DIR_ENV_VARS) {
    const value = nonBlank(input.env[variable])
    if (value !== undefined) return { agentDir: path.resolve(input.cwd, value), source: { _tag: "Env", variable } }
  }
  return { agentDir: defaultAgentDir(input.homeDir, input.cwd), source: { _tag: "Default" } }
}

/** Every file of one agent dir's intercom runtime (P90). */
export interface IntercomPaths {
  readonly agentDir: string
  /** `<agentDir>/intercom`. */
  readonly intercomDir: string
  /** `<intercomDir>/config.json`: where the config belongs (see `configFileCandidates` for the legacy fallback). */
  readonly configFile: string
  /**
   * Where the broker listens and clients dial: `defaultSocketPath`, or the
   * short fallback when that is too long for a Unix socket (see socketPath.ts).
   */
  readonly socketPath: string
  /** `<intercomDir>/broker.sock`: where pi-intercom clients look for the broker. */
  readonly defaultSocketPath: string
  /** Set when `socketPath` is the short fallback: the private dir that holds it (see `prepareFallbackDir`). */
  readonly socketFallbackDir: string | undefined
  /** `<intercomDir>/broker.pid`. */
  readonly pidFile: string
  /** `<intercomDir>/broker.spawn.lock`. */
  readonly spawnLockFile: string
}

const buildPaths = (agentDir: string, location: SocketLocation | undefined): IntercomPaths => {
  const intercomDir = path.join(agentDir, "intercom")
  const defaultSocketPath = path.join(intercomDir, "broker.sock")
  return {
    agentDir,
    intercomDir,
    configFile: path.join(intercomDir, "config.json"),
    socketPath: location?.socketPath ?? defaultSocketPath,
    defaultSocketPath,
    socketFallbackDir: location?.fallbackDir,
    pidFile: path.join(intercomDir, "broker.pid"),
    spawnLockFile: path.join(intercomDir, "broker.spawn.lock")
  }
}

const defaultSocketOf = (agentDir: string): string => path.join(agentDir, "intercom", "broker.sock")

/**
 * The intercom paths of an (absolute) agent dir, with the effective socket
 * for `placement` (see `processSocketPlacement`): the short fallback when
 * `<intercomDir>/broker.sock` is too long. Fails when even the fallback is
 * too long.
 */
export const resolveIntercomPaths = (
  agentDir: string,
  placement: SocketPlacement
): IntercomPaths | SocketPathError => {
  const location = socketLocation(agentDir, defaultSocketOf(agentDir), placement)
  return location instanceof SocketPathError ? location : buildPaths(agentDir, location)
}

/**
 * The intercom paths of an (absolute) agent dir. With a `placement`, as
 * `resolveIntercomPaths`, except that when no socket path fits, `socketPath`
 * stays the default one. Without a placement no fallback is considered: pass
 * one wherever a socket is served or dialled (`loadIntercomSettings` does).
 */
export const intercomPaths = (agentDir: string, placement?: SocketPlacement): IntercomPaths => {
  const location = placement === undefined ? undefined : socketLocation(agentDir, defaultSocketOf(agentDir), placement)
  return buildPaths(agentDir, location instanceof SocketPathError ? undefined : location)
}

/**
 * The config files to try, in order: `<agentDir>/intercom/config.json`, and —
 * only when the agent dir is the default one, `~/.pi/agent`, whether nothing
 * names it or `--dir` or a variable names that same dir — the Atomic location
 * `~/.atomic/agent/intercom/config.json`, read only when the first is missing
 * (C-CFG-1, with our `~/.pi/agent` default). Which dir, not how it was named:
 * a client of the default dir spawns its broker with `--dir` naming it, and
 * the two must read the same file. An unreadable or invalid first file is
 * never skipped in favour of the second.
 */
export const configFileCandidates = (resolution: AgentDirResolution, homeDir: string, cwd: string): ReadonlyArray<string> => {
  const primary = intercomPaths(resolution.agentDir).configFile
  if (resolution.agentDir !== defaultAgentDir(homeDir, cwd)) return [primary]
  const legacy = intercomPaths(atomicAgentDir(homeDir, cwd)).configFile
  return legacy === primary ? [primary] : [primary, legacy]
}
