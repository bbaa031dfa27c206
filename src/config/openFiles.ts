/**
 * The process's open-file limit, and the broker's start-up warning when its
 * session cap is above it. Every session is an open socket, so a broker whose
 * cap (50,000 by default) is above the limit refuses connections with
 * `EMFILE` long before the cap: the warning says so once, at start, with
 * what to do, instead of leaving the user to find `accept failed … EMFILE`
 * in the log under load. That is a warning when the cap was asked for
 * (`--max-sessions`); the default cap above a machine's limit is common (a
 * hard limit of 20,000 against 50,000) and nothing the user chose, so the
 * broker then states the session count the limit implies as information
 * (`sessionCapNote`), not as a warning on every start. Linux only (it reads `/proc/self/limits`, which
 * shows the soft limit Node raised at its own start); elsewhere the limit is
 * unknown and nothing is said.
 */
import * as Effect from "effect/Effect"
import * as fs from "node:fs"

/** Descriptors the broker holds besides its sessions: listener, database and its WAL files, lock, pid file, stdio, a margin. */
export const BROKER_OWN_FILES = 64

/**
 * The soft "Max open files" limit in the text of `/proc/<pid>/limits`, or
 * undefined when the line is missing or says `unlimited`.
 *
 * @example
 * parseOpenFileLimit("Max open files            20000                20000                files     ") // 20000
 */
export const parseOpenFileLimit = (limits: string): number | undefined => {
  const line = limits.split("\n").find((text) => text.startsWith("Max open files"))
  const soft = line?.slice("Max open files".length).trim().split(/\s+/)[0]
  if (soft === undefined || !/^\d+$/.test(soft)) return undefined
  return Number(soft)
}

/** This process's soft open-file limit, or undefined where it cannot be read (not Linux). */
export const openFileLimit: Effect.Effect<number | undefined> = Effect.sync(() => {
  try {
    return parseOpenFileLimit(fs.readFileSync("/proc/self/limits", "utf8"))
  } catch {
    return undefined
  }
})

/**
 * The warning for a session cap the open-file limit cannot hold, or
 * undefined when it can (or the limit is unknown).
 *
 * @example
 * sessionCapWarning(50_000, 1_024) // "The session cap is 50000, but this process may open only 1024 files …"
 */
export const sessionCapWarning = (maxSessions: number, limit: number | undefined): string | undefined => {
  if (limit === undefined || maxSessions + BROKER_OWN_FILES <= limit) return undefined
  const holds = Math.max(0, limit - BROKER_OWN_FILES)
  return `The session cap is ${maxSessions}, but this process may open only ${limit} files (ulimit -n): ` +
    `connections past about ${holds} sessions will be refused (EMFILE). ` +
    `Raise the limit (ulimit -n ${maxSessions + BROKER_OWN_FILES}, or LimitNOFILE= in a systemd unit) ` +
    `or lower --max-sessions to ${holds}.`
}

/**
 * For the default session cap (not asked for) above the open-file limit: the
 * number of sessions the limit holds, as a fact for the broker's log, or
 * undefined when the limit holds the cap (or is unknown).
 *
 * @example
 * sessionCapNote(50_000, 20_000) // "Open-file limit 20000 (ulimit -n): this broker holds about 19936 sessions …"
 */
export const sessionCapNote = (maxSessions: number, limit: number | undefined): string | undefined => {
  if (limit === undefined || maxSessions + BROKER_OWN_FILES <= limit) return undefined
  const holds = Math.max(0, limit - BROKER_OWN_FILES)
  return `Open-file limit ${limit} (ulimit -n): this broker holds about ${holds} sessions, ` +
    `below its default cap of ${maxSessions}; a connection past that is refused (EMFILE). ` +
    `For more, raise the limit (ulimit -n ${maxSessions + BROKER_OWN_FILES}, or LimitNOFILE= in a systemd unit).`
}
