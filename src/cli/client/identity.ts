/**
 * Who a CLI invocation is on the bus: its name, and — for `intercom watch` —
 * the stable session id that name maps to. See docs/cli.md, "Names and
 * session ids".
 *
 * - Every command acts *as a name*: `--name`, else `cli-<user>`.
 * - `watch --name N` registers with the stable id `cli-<32 hex>` derived from
 *   N (case-insensitive, like name targeting) and the pi-intercom scope, so a
 *   restarted watch is the same session: mail queued while it was away
 *   reaches it, and its id never changes under the people who talk to it.
 * - Short-lived commands (`list`, `send`, `ask`, …) never register under that
 *   id — that would take the watch's session over (P16). While a watch of
 *   their name runs they hand their action to it instead (`control.ts`);
 *   otherwise they register with a fresh random id.
 */
import { createHash } from "node:crypto"
import * as os from "node:os"
import { isSafeLabel } from "../../session/validation.ts"

/** The `model` a CLI session announces (shown in `list`). */
export const CLI_MODEL = "intercom-cli"

/** Longest `--name` accepted: names are shown in one-line lists. */
export const MAX_NAME_LENGTH = 64

/** `$USER` (`$LOGNAME`, `$USERNAME`), else the account name. */
const userName = (): string | undefined => {
  const fromEnv = process.env["USER"] ?? process.env["LOGNAME"] ?? process.env["USERNAME"]
  if (fromEnv !== undefined && fromEnv.trim() !== "") return fromEnv
  try {
    return os.userInfo().username
  } catch {
    return undefined
  }
}

/** `cli-<user>` (characters outside `[A-Za-z0-9._-]` become `-`), or `cli`. */
export const defaultCliName = (): string => {
  const user = userName()?.trim().replace(/[^A-Za-z0-9._-]/g, "-")
  return user === undefined || user.length === 0 ? "cli" : `cli-${user}`
}

/** Why a `--name` is unusable, or `undefined` when it is fine. */
export const nameProblem = (name: string): string | undefined => {
  const trimmed = name.trim()
  if (trimmed.length === 0) return "--name must not be empty"
  if (trimmed.length > MAX_NAME_LENGTH) return `--name must be at most ${MAX_NAME_LENGTH} characters`
  if (!isSafeLabel(trimmed)) return "--name must not contain control characters"
  return undefined
}

/**
 * The key of a name within a pi-intercom scope: SHA-256 hex of
 * `<scopeId>\0<lower-cased trimmed name>`. Names match case-insensitively
 * (C-TGT-1), so `Planner` and `planner` are one identity.
 */
export const nameKey = (name: string, scopeId: string | undefined): string =>
  createHash("sha256").update(`${scopeId ?? ""}\u0000${name.trim().toLowerCase()}`, "utf8").digest("hex")

/**
 * The stable session id of `watch --name <name>`: `cli-` + 32 hex digits.
 * Well formed for pi-intercom brokers too (`[A-Za-z0-9_-]{8,80}`), and never
 * equal to a pi session's `pi-<hex>` id or a random UUID.
 */
export const watchSessionId = (name: string, scopeId: string | undefined): string =>
  `cli-${nameKey(name, scopeId).slice(0, 32)}`
