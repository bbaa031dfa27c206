/**
 * Where the CLI's broker files live (P90). The rules are config's — the
 * agent dir from `config/agentDir.ts`, the socket path and its short fallback
 * from `config/socketPath.ts` — so that the CLI's broker listens exactly where
 * a client using `loadIntercomSettings` dials. This module only feeds them the
 * `--dir` flag and this process's environment.
 */
import * as Effect from "effect/Effect"
import * as os from "node:os"
import { type Environment, type IntercomPaths, resolveAgentDir, resolveIntercomPaths } from "../config/agentDir.ts"
import { processSocketPlacement } from "../config/runtimeDir.ts"
import { SocketPathError, type SocketPlacement } from "../config/socketPath.ts"

// The socket-path rule and the fallback dir live in config; re-exported for the CLI's modules.
/** Every file of one agent dir's intercom runtime (see `config/agentDir.ts`). */
export type { IntercomPaths } from "../config/agentDir.ts"
export { chooseRuntimeDir, currentUid, prepareFallbackDir } from "../config/runtimeDir.ts"
export { agentDirHash, SocketPathError, socketPathLimit } from "../config/socketPath.ts"

/** What `resolveCliPaths` decides from: the `--dir` flag and this process's environment, cwd, home and socket placement. */
export interface ProcessInputs {
  /** The `--dir` flag, if given. */
  readonly dir: string | undefined
  readonly env: Environment
  readonly cwd: string
  readonly homeDir: string
  /** See `processSocketPlacement`. */
  readonly placement: SocketPlacement
}

/**
 * `resolveAgentDir` (`--dir`, else `ATOMIC_CODING_AGENT_DIR`, else
 * `PI_CODING_AGENT_DIR`, else `~/.pi/agent`) followed by `resolveIntercomPaths`.
 */
export const resolveCliPaths = (inputs: ProcessInputs): IntercomPaths | SocketPathError =>
  resolveIntercomPaths(
    resolveAgentDir({ dir: inputs.dir, env: inputs.env, cwd: inputs.cwd, homeDir: inputs.homeDir }).agentDir,
    inputs.placement
  )

/**
 * Resolves every path for this process (flag, environment, cwd, home, runtime
 * dir, uid, platform). Creates nothing.
 */
export const resolveProcessPaths = (dir: string | undefined): Effect.Effect<IntercomPaths, SocketPathError> =>
  Effect.gen(function*() {
    const env = process.env
    const result = resolveCliPaths({
      dir,
      env,
      cwd: process.cwd(),
      homeDir: os.homedir(),
      placement: yield* processSocketPlacement(env)
    })
    return result instanceof SocketPathError ? yield* result : result
  })
