/**
 * Freezing a process the way SIGSTOP, swap or a debugger does, for the tests
 * of "one broker per agent dir": the process is alive and keeps its files,
 * locks and sockets, but answers nothing until it is continued.
 */
import { Effect, Option, Schedule, type Scope } from "effect"
import * as fs from "node:fs"

/** The one-letter state of `pid` from /proc (`T`: stopped, `Z`: zombie); `undefined` once it is gone. */
export const processState = (pid: number): string | undefined => {
  try {
    return /^State:\s+(\S)/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]
  } catch {
    return undefined
  }
}

const signal = (pid: number, name: NodeJS.Signals) =>
  Effect.sync(() => {
    try {
      process.kill(pid, name)
    } catch {
      // gone already
    }
  })

/**
 * Stops `pid` with SIGSTOP and returns once the kernel reports it stopped
 * (polled from /proc: a signal's effect is not synchronous). When the Scope
 * closes the process is continued, so that its own teardown can run.
 */
export const freeze = (pid: number): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    yield* Effect.addFinalizer(() => signal(pid, "SIGCONT"))
    yield* signal(pid, "SIGSTOP")
    const stopped = yield* Effect.sync(() => processState(pid) === "T").pipe(
      Effect.repeat({ schedule: Schedule.spaced("5 millis"), until: (stopped) => stopped }),
      Effect.timeoutOption("10 seconds"),
      Effect.map(Option.getOrElse(() => false))
    )
    if (!stopped) return yield* Effect.die(new Error(`pid ${pid} did not stop on SIGSTOP (state ${processState(pid)})`))
  })
