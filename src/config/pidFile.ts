/**
 * `broker.pid` as other processes read it, and whether the process it names
 * is alive. The broker (checking the file is still its own), the client's
 * auto-spawn and `intercom broker status`/`stop` all read it here, so they
 * agree on what a valid pid file is.
 *
 * The format: the pid in canonical decimal on the first line (our broker
 * writes nothing else; pi-intercom's newer brokers add an identity line
 * after it, C-BRK-22, which is ignored). Anything else on the first line —
 * `"12a"`, `" 12"`, `"012"`, `"0"` — makes the file unparsable, and an
 * unparsable file names no process.
 *
 * A pid file alone is never proof of a broker (P94): pids are recycled.
 * Callers pair it with the health probe or the broker's lifetime lock.
 *
 * The broker writes it with `writePidFile`: atomically, mode 0600.
 */
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import { parsePositiveDecimal } from "./decimal.ts"
import { errorCode } from "./errno.ts"
import { writePrivateFileSync } from "./privateFile.ts"

/**
 * The pid in pid-file content: its first line, when that is a canonical
 * positive decimal integer; else `undefined`.
 *
 * @example
 * parsePid("41230")                // 41230
 * parsePid("41230\nlinux-v1 …")    // 41230
 * parsePid("12a")                  // undefined
 */
export const parsePid = (text: string): number | undefined => parsePositiveDecimal(text.split("\n", 1)[0] ?? "")

/** The pid recorded in `pidFile`; `undefined` if the file is absent, unreadable or unparsable. */
export const readPidFile = (pidFile: string): Effect.Effect<number | undefined> =>
  Effect.sync(() => {
    try {
      return parsePid(fs.readFileSync(pidFile, "utf8"))
    } catch {
      return undefined
    }
  })

/**
 * Makes `pidFile` name `pid` (canonical decimal, no newline), mode 0600,
 * atomically: a reader never sees a partial file, and a leftover file's
 * looser mode is not kept. Fails with the `fs` error.
 *
 * @example
 * yield* writePidFile("/home/me/.pi/agent/intercom/broker.pid", process.pid)
 */
export const writePidFile = (pidFile: string, pid: number): Effect.Effect<void, Error> =>
  Effect.try({
    try: () => writePrivateFileSync(pidFile, String(pid)),
    catch: (cause) => cause instanceof Error ? cause : new Error(String(cause))
  })

/**
 * Whether a process with this pid exists (`kill(pid, 0)`; EPERM counts: it
 * exists, it is just not ours). Only a positive integer names one process:
 * `0` and negative numbers (process groups) are never alive.
 */
export const isProcessAlive = (pid: number): Effect.Effect<boolean> =>
  Effect.sync(() => {
    if (!Number.isSafeInteger(pid) || pid <= 0) return false
    try {
      process.kill(pid, 0)
      return true
    } catch (error) {
      return errorCode(error) === "EPERM"
    }
  })
