/**
 * `broker.checking`: the mark a starting broker leaves in its intercom
 * directory while it checks its database in full. That check
 * (`PRAGMA quick_check`, run only on a file its broker did not close cleanly)
 * reads every page, about 4 s per GB, and the broker answers nothing until it
 * ends. A client whose wait for a health answer runs out while the mark names
 * a live process waits on (`client/spawn.ts`) instead of reporting a broker
 * that failed to start or does not answer.
 *
 * Its content is a pid file's (`pidFile.ts`): the broker's pid. The broker
 * writes it just before the check and removes it just after; a broker killed
 * during the check leaves it behind, naming a process that is gone, which
 * readers ignore. Its pid may be given to another process later, so a reader
 * also ignores a mark written longer ago than it would wait for a check
 * (`maxAgeMs`): a leftover mark can stretch a client's wait only while it is
 * young.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { isProcessAlive, readPidFile } from "./pidFile.ts"
import { writePrivateFileSync } from "./privateFile.ts"

/** The mark's file name in the intercom directory. */
export const CHECKING_MARK = "broker.checking"

/** `<intercomDir>/broker.checking`. */
export const checkingMarkOf = (intercomDir: string): string => path.join(intercomDir, CHECKING_MARK)

/**
 * Writes the mark (this process's pid, mode 0600), synchronously: the check
 * that follows holds the event loop. Best effort: a mark that cannot be
 * written only costs a waiting client its patience, never the check.
 */
export const writeCheckingMark = (file: string): void => {
  try {
    writePrivateFileSync(file, String(process.pid))
  } catch {
    // The client then reports the broker as not answering once its wait runs out, as before the mark.
  }
}

/** Removes the mark; best effort, like writing it (a leftover one names a dead pid once the broker ends). */
export const removeCheckingMark = (file: string): void => {
  try {
    fs.rmSync(file, { force: true })
  } catch {
    // Readers check that the pid is alive, and the same broker rewrites the mark at its next full check.
  }
}

/** When the mark was last written (ms since the epoch); `undefined` without one. */
const writtenAt = (file: string): number | undefined => {
  try {
    return fs.statSync(file).mtimeMs
  } catch {
    return undefined
  }
}

/**
 * The pid of a broker that is checking its database in full now: the mark
 * in `intercomDir` names a live process and was written at most `maxAgeMs`
 * ago. `undefined` without a mark, when its process is gone, or when it is
 * older (left by a broker killed during its check, its pid perhaps another
 * process's by now).
 *
 * @example
 * const pid = yield* checkingBroker("/home/me/.pi/agent/intercom", 120_000)
 * if (pid !== undefined) yield* Effect.log(`broker ${pid} is checking its database`)
 */
export const checkingBroker = (intercomDir: string, maxAgeMs: number): Effect.Effect<number | undefined> =>
  Effect.gen(function*() {
    const file = checkingMarkOf(intercomDir)
    const pid = yield* readPidFile(file)
    if (pid === undefined || !(yield* isProcessAlive(pid))) return undefined
    const at = yield* Effect.sync(() => writtenAt(file))
    const now = yield* Clock.currentTimeMillis
    return at !== undefined && now - at <= maxAgeMs ? pid : undefined
  })
