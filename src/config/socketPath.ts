/**
 * Where the broker socket of one agent dir lives: `<agentDir>/intercom/broker.sock`,
 * or — when that path does not fit in a Unix socket address — a short
 * fallback `<runtimeDir>/intercom-<uid>/<16 hex of sha256(agentDir)>.sock` in a
 * private 0700 dir (P90). The broker and every client must apply the same
 * rule, or a client cannot reach a broker whose agent dir is long; this module
 * is that rule's single source of truth (`intercomPaths` and
 * `loadIntercomSettings` use it).
 *
 * Everything here is pure; the process-dependent parts (runtime dir, uid,
 * preparing the private dir) are in `runtimeDir.ts`.
 */
import * as Data from "effect/Data"
import { createHash } from "node:crypto"
import * as path from "node:path"

/**
 * Longest socket path, in bytes, the platform accepts: `sun_path` is 108 bytes
 * on Linux and 104 on macOS/BSD, one of which is the terminating NUL.
 */
export const socketPathLimit = (platform: NodeJS.Platform): number => platform === "linux" ? 107 : 103

/** First 16 hex digits of sha256(agentDir): names the short socket of one agent dir. */
export const agentDirHash = (agentDir: string): string =>
  createHash("sha256").update(agentDir, "utf8").digest("hex").slice(0, 16)

/** What decides whether, and where, the socket moves to the short fallback. */
export interface SocketPlacement {
  /** Base for the short fallback socket (see `chooseRuntimeDir` in runtimeDir.ts). */
  readonly runtimeDir: string
  readonly uid: number
  /** See `socketPathLimit`. */
  readonly maxSocketBytes: number
}

/** Where one agent dir's broker socket is, as `socketLocation` decides. */
export interface SocketLocation {
  /** Where the broker listens and clients dial: `defaultSocketPath`, or the short fallback. */
  readonly socketPath: string
  /** `<agentDir>/intercom/broker.sock`: where pi-intercom clients look. */
  readonly defaultSocketPath: string
  /** Set when `defaultSocketPath` is too long: the private dir that holds the short socket. */
  readonly fallbackDir: string | undefined
}

/**
 * No usable broker socket path for an agent dir: a startup error, whose
 * `message` says what to change.
 */
export class SocketPathError extends Data.TaggedError("SocketPathError")<{
  /**
   * `TooLong`: neither the default socket path nor the short fallback fits in
   * a Unix socket address. `FallbackDirUnsafe`: the fallback's private dir
   * cannot be created, or is a symlink, not a directory, or another user's.
   */
  readonly kind: "TooLong" | "FallbackDirUnsafe"
  /** The default socket path (`TooLong`) or the fallback dir (`FallbackDirUnsafe`). */
  readonly path: string
  /** The measured length and limit, or what is wrong with the dir. */
  readonly detail: string
}> {
  override get message(): string {
    switch (this.kind) {
      case "TooLong":
        return `The broker socket path ${this.path} is too long for a Unix socket (${this.detail}), and so is the short fallback under the runtime dir. Use a shorter agent dir (--dir or PI_CODING_AGENT_DIR), or set XDG_RUNTIME_DIR or TMPDIR to a short directory.`
      case "FallbackDirUnsafe":
        return `Cannot use ${this.path} for the broker socket: ${this.detail}. Remove it, or set XDG_RUNTIME_DIR or TMPDIR to another directory.`
    }
  }
}

const fits = (socketPath: string, maxBytes: number): boolean => Buffer.byteLength(socketPath, "utf8") <= maxBytes

/**
 * The socket of the (absolute, normalised) agent dir whose default socket is
 * `defaultSocketPath`: that path while it fits in `maxSocketBytes`, else
 * `<runtimeDir>/intercom-<uid>/<agentDirHash>.sock`; an error when neither fits.
 */
export const socketLocation = (
  agentDir: string,
  defaultSocketPath: string,
  placement: SocketPlacement
): SocketLocation | SocketPathError => {
  if (fits(defaultSocketPath, placement.maxSocketBytes)) {
    return { socketPath: defaultSocketPath, defaultSocketPath, fallbackDir: undefined }
  }
  const fallbackDir = path.join(placement.runtimeDir, `intercom-${placement.uid}`)
  const socketPath = path.join(fallbackDir, `${agentDirHash(agentDir)}.sock`)
  if (!fits(socketPath, placement.maxSocketBytes)) {
    return new SocketPathError({
      kind: "TooLong",
      path: defaultSocketPath,
      detail: `${Buffer.byteLength(defaultSocketPath, "utf8")} bytes, the limit is ${placement.maxSocketBytes}`
    })
  }
  return { socketPath, defaultSocketPath, fallbackDir }
}

/**
 * The private dir of `socketPath` when it is a short fallback socket of user
 * `uid` (`…/intercom-<uid>/<16 hex>.sock`), else `undefined`. Lets a client
 * that was handed only a socket path check that dir (`prepareFallbackDir`)
 * before it dials into it.
 */
export const fallbackDirOf = (socketPath: string, uid: number): string | undefined => {
  const dir = path.dirname(socketPath)
  return path.basename(dir) === `intercom-${uid}` && /^[0-9a-f]{16}\.sock$/.test(path.basename(socketPath))
    ? dir
    : undefined
}
