/**
 * What `broker stop` needs to know about another process beyond its pid file
 * (config/pidFile.ts): whether it really is the process listening on the
 * broker socket (on Linux), and how to signal it. A pid file alone is never
 * trusted (P94): pids are recycled.
 */
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import { errorCode } from "../config/errno.ts"
import { privateSocketPathMatcher } from "../transport/privateName.ts"

/**
 * Inodes of the Unix sockets that serve `socketPath`, from a `/proc/net/unix`
 * table: those bound to the path itself (a listener that binds it directly,
 * such as pi-intercom's broker) or to one of its private names, which
 * `serveUnix` binds before it links the path to the socket (transport/privateName.ts).
 */
export const socketInodes = (procNetUnix: string, socketPath: string): ReadonlySet<string> => {
  const isPrivate = privateSocketPathMatcher(socketPath)
  const inodes = new Set<string>()
  for (const line of procNetUnix.split("\n").slice(1)) {
    // Num RefCount Protocol Flags Type St Inode Path
    const fields = line.trim().split(/\s+/)
    const inode = fields[6]
    const address = fields.slice(7).join(" ")
    if (inode !== undefined && (address === socketPath || isPrivate(address))) inodes.add(inode)
  }
  return inodes
}

/**
 * Whether process `pid` holds a socket that serves `socketPath` (the listener
 * or an accepted connection; see `socketInodes`). `undefined` where this
 * cannot be told (no `/proc`, or the process's descriptors are not readable
 * by us).
 */
export const processOwnsSocket = (pid: number, socketPath: string): Effect.Effect<boolean | undefined> =>
  Effect.sync(() => {
    let table: string
    try {
      table = fs.readFileSync("/proc/net/unix", "utf8")
    } catch {
      return undefined
    }
    const inodes = socketInodes(table, socketPath)
    if (inodes.size === 0) return undefined
    let fds: Array<string>
    try {
      fds = fs.readdirSync(`/proc/${pid}/fd`)
    } catch (error) {
      return errorCode(error) === "ENOENT" ? false : undefined
    }
    for (const fd of fds) {
      try {
        const match = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`))
        if (match?.[1] !== undefined && inodes.has(match[1])) return true
      } catch {
        // closed while we looked
      }
    }
    return false
  })

/** Sends `signal` to `pid`: `"sent"`, `"gone"` (no such process) or `"denied"` (EPERM). */
export const signalProcess = (pid: number, signal: NodeJS.Signals): Effect.Effect<"sent" | "gone" | "denied"> =>
  Effect.sync(() => {
    try {
      process.kill(pid, signal)
      return "sent"
    } catch (error) {
      return errorCode(error) === "EPERM" ? "denied" : "gone"
    }
  })
