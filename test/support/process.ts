/**
 * The one child-process harness for every test that runs a real process (the
 * built CLI, the spawn-race fixture, the example).
 *
 * - Output is complete when the child's `close` event fires (it has exited
 *   *and* both pipes are drained), so `waitExit` returns the final stdout and
 *   stderr — never a read taken some milliseconds after `exit`.
 * - Waiting for output is event-driven: a pattern is checked on every chunk,
 *   and a child that closes without printing it fails the wait at once.
 * - Every child leads its own process group; when the test's Scope closes the
 *   whole group is SIGKILLed and its `close` awaited, so a failed assertion
 *   never leaves a process (or a grandchild) behind.
 * - Every failure names the command and carries its stdout and stderr.
 *
 * Processes that are not our children (a broker a CLI command spawned
 * detached) cannot be awaited by event; `stopPid` signals them and polls
 * their liveness until they are gone.
 */
import { Data, Deferred, Duration, Effect, Exit, Option, Schedule, type Scope } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

/** Generous: the suite shares two slow cores with other work. A bound for failure reports, never a barrier. */
export const CHILD_WAIT: Duration.Input = "20 seconds"

export interface Outcome {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

export class ChildFailed extends Data.TaggedError("ChildFailed")<{
  readonly command: string
  readonly what: string
  readonly stdout: string
  readonly stderr: string
}> {
  override get message(): string {
    return `${this.command}: ${this.what}\n--- stdout:\n${this.stdout}\n--- stderr:\n${this.stderr}`
  }
}

export interface Child {
  readonly child: ChildProcess
  readonly pid: number
  /** The command line, for failure messages. */
  readonly command: string
  readonly stdout: () => string
  readonly stderr: () => string
  /** The outcome once the child has closed (exited and both pipes drained); `undefined` before. */
  readonly outcome: () => Outcome | undefined
  /** Completes when the child has closed. */
  readonly closed: Effect.Effect<Outcome>
  /** Waits until the child has closed; fails (with its output) after `timeout`. */
  readonly waitExit: (timeout?: Duration.Input) => Effect.Effect<Outcome, ChildFailed>
  /** Waits until stdout matches `pattern` (searched from the start); fails if the child closes first. */
  readonly waitStdout: (pattern: RegExp, timeout?: Duration.Input) => Effect.Effect<RegExpExecArray, ChildFailed>
  readonly waitStderr: (pattern: RegExp, timeout?: Duration.Input) => Effect.Effect<RegExpExecArray, ChildFailed>
  /** Writes to stdin (only with `stdin: "pipe"`). */
  readonly write: (text: string) => Effect.Effect<void>
  readonly writeLine: (line: string) => Effect.Effect<void>
  readonly endStdin: Effect.Effect<void>
  /** Signals the child itself (not its group): what a user's `kill` does. */
  readonly kill: (signal: NodeJS.Signals) => Effect.Effect<void>
  /** A failure carrying this child's output. */
  readonly failure: (what: string) => ChildFailed
}

export interface SpawnOptions {
  readonly cwd?: string
  readonly env?: Readonly<Record<string, string>>
  readonly stdin?: "pipe" | "ignore"
}

const killGroup = (pid: number, signal: NodeJS.Signals): void => {
  try {
    process.kill(-pid, signal)
  } catch {
    // the group is gone already
  }
}

/** Spawns `command ...args` as the leader of a new process group, owned by the current Scope. */
export const spawnChild = (
  command: string,
  args: ReadonlyArray<string>,
  options: SpawnOptions = {}
): Effect.Effect<Child, never, Scope.Scope> =>
  Effect.gen(function*() {
    const closed = yield* Deferred.make<Outcome>()
    const state: { stdout: string; stderr: string; outcome: Outcome | undefined } = {
      stdout: "",
      stderr: "",
      outcome: undefined
    }
    // Re-checked on every chunk and at close; a waiter returns true once it is done.
    const waiters = new Set<() => boolean>()
    const wake = () => {
      for (const waiter of [...waiters]) if (waiter()) waiters.delete(waiter)
    }
    const child = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const child = spawn(command, [...args], {
          cwd: options.cwd ?? process.cwd(),
          env: options.env ?? childEnv(),
          stdio: [options.stdin ?? "ignore", "pipe", "pipe"],
          detached: true // its own process group, killed as a whole at teardown
        })
        child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
          state.stdout += chunk
          wake()
        })
        child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
          state.stderr += chunk
          wake()
        })
        child.stdin?.on("error", () => {}) // the child may be gone before we write
        child.once("close", (code, signal) => {
          state.outcome = { code, signal }
          Deferred.doneUnsafe(closed, Exit.succeed(state.outcome))
          wake()
        })
        return child
      }),
      (child) =>
        Effect.gen(function*() {
          if (child.pid !== undefined) killGroup(child.pid, "SIGKILL")
          yield* Effect.timeoutOption(Deferred.await(closed), "5 seconds")
        })
    )
    const pid = child.pid ?? -1
    const commandLine = [command, ...args].join(" ")
    const failure = (what: string) =>
      new ChildFailed({ command: commandLine, what, stdout: state.stdout, stderr: state.stderr })
    const bounded = <A>(effect: Effect.Effect<A, ChildFailed>, what: string, timeout: Duration.Input) =>
      Effect.timeoutOrElse(effect, { duration: timeout, orElse: () => Effect.fail(failure(`timed out waiting for ${what}`)) })
    const waitFor = (stream: "stdout" | "stderr", pattern: RegExp, timeout: Duration.Input = CHILD_WAIT) =>
      bounded(
        Effect.callback<RegExpExecArray, ChildFailed>((resume) => {
          const attempt = (): boolean => {
            const match = pattern.exec(state[stream])
            if (match !== null) {
              resume(Effect.succeed(match))
              return true
            }
            if (state.outcome !== undefined) {
              resume(Effect.fail(failure(`closed (${JSON.stringify(state.outcome)}) without printing ${pattern} on ${stream}`)))
              return true
            }
            return false
          }
          if (attempt()) return
          waiters.add(attempt)
          return Effect.sync(() => void waiters.delete(attempt))
        }),
        `${pattern} on ${stream}`,
        timeout
      )
    return {
      child,
      pid,
      command: commandLine,
      stdout: () => state.stdout,
      stderr: () => state.stderr,
      outcome: () => state.outcome,
      closed: Deferred.await(closed),
      waitExit: (timeout = CHILD_WAIT) => bounded(Deferred.await(closed), "the process to exit", timeout),
      waitStdout: (pattern, timeout) => waitFor("stdout", pattern, timeout),
      waitStderr: (pattern, timeout) => waitFor("stderr", pattern, timeout),
      write: (text) => Effect.sync(() => void child.stdin?.write(text)),
      writeLine: (line) => Effect.sync(() => void child.stdin?.write(`${line}\n`)),
      endStdin: Effect.sync(() => void child.stdin?.end()),
      kill: (signal) => Effect.sync(() => void child.kill(signal)),
      failure
    } satisfies Child
  })

export interface Completed extends Outcome {
  readonly stdout: string
  readonly stderr: string
}

/** Runs a child to completion and returns its outcome with its complete output. */
export const runChild = (
  command: string,
  args: ReadonlyArray<string>,
  options: SpawnOptions = {}
): Effect.Effect<Completed, ChildFailed> =>
  Effect.scoped(
    Effect.gen(function*() {
      const child = yield* spawnChild(command, args, options)
      const outcome = yield* child.waitExit()
      return { ...outcome, stdout: child.stdout(), stderr: child.stderr() }
    })
  )

/** `node ...args` with the Node running the tests. */
export const spawnNode = (args: ReadonlyArray<string>, options: SpawnOptions = {}) =>
  spawnChild(process.execPath, args, options)

// ---------------------------------------------------------------------------
// Processes that are not our children
// ---------------------------------------------------------------------------

export const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** The first line of a pid file as a pid, if it holds one. */
export const readPidFile = (file: string): number | undefined => {
  try {
    const pid = Number.parseInt(fs.readFileSync(file, "utf8").split("\n", 1)[0] ?? "", 10)
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined
  } catch {
    return undefined
  }
}

/**
 * Whether `pid` is gone, polled every 20 ms for at most `timeout`: a process
 * that is not our child gives no event when it exits.
 */
export const awaitGone = (pid: number, timeout: Duration.Input = "5 seconds"): Effect.Effect<boolean> =>
  Effect.sync(() => !isAlive(pid)).pipe(
    Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (gone) => gone }),
    Effect.timeoutOption(timeout),
    Effect.map(Option.getOrElse(() => false))
  )

/** SIGTERM, wait until gone (at most `grace`), then SIGKILL: teardown for a process that is not our child. */
export const stopPid = (pid: number, grace: Duration.Input = "5 seconds"): Effect.Effect<void> =>
  Effect.gen(function*() {
    if (!isAlive(pid)) return
    yield* Effect.sync(() => process.kill(pid, "SIGTERM"))
    if (!(yield* awaitGone(pid, grace))) {
      yield* Effect.sync(() => {
        try {
          process.kill(pid, "SIGKILL")
        } catch {
          // gone meanwhile
        }
      })
    }
  }).pipe(Effect.ignore)

/**
 * The environment of a child: the test process's, without the variables that
 * would point it at the user's agent dir, plus `extra`.
 */
export const childEnv = (extra: Readonly<Record<string, string>> = {}): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined) continue
    if (/^(ATOMIC|PI)_(CODING_AGENT_DIR|INTERCOM_)/.test(key)) continue
    env[key] = value
  }
  return {
    // Loading effect dominates a child's startup: share a compile cache between test runs.
    NODE_COMPILE_CACHE: path.join(os.tmpdir(), "effect-intercom-test-compile-cache"),
    ...env,
    NODE_NO_WARNINGS: "1",
    ...extra
  }
}

/**
 * A live process that is no broker (a `sleep`): what an older broker's pid
 * left in `broker.pid` may name by now. Killed when the test's Scope closes.
 */
export const liveStranger = Effect.acquireRelease(
  Effect.sync(() => spawn("sleep", ["30"], { stdio: "ignore" })),
  (child) => Effect.sync(() => child.kill())
)
