/**
 * Running the built CLI (`node dist/bin/intercom.mjs`, the bundle `bin` points
 * at) as a child process. Every child lives in the test's Scope and is
 * SIGKILLed when it closes, so a failed assertion never leaves a broker
 * behind. Nothing here builds: `npm test` runs `npm run build` before vitest.
 */
import { Data, Deferred, Duration, Effect, Exit, type Scope } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

export const MAIN = fileURLToPath(new URL("../../dist/bin/intercom.mjs", import.meta.url))

export const STARTED = /^Intercom broker started \(pid: (\d+)\)$/m

/** Generous: the suite shares two slow cores with other test files. */
export const WAIT = Duration.seconds(15)

export class CliTimeout extends Data.TaggedError("CliTimeout")<{
  readonly what: string
  readonly stdout: string
  readonly stderr: string
}> {
  override get message(): string {
    return `timed out waiting for ${this.what}\n--- stdout:\n${this.stdout}\n--- stderr:\n${this.stderr}`
  }
}

export interface Outcome {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

export interface CliProcess {
  readonly child: ChildProcess
  readonly pid: number
  readonly stdout: () => string
  readonly stderr: () => string
  /** Completes when the process has exited. */
  readonly exited: Effect.Effect<Outcome>
  /** Waits for the process to exit, failing after `timeout`. */
  readonly waitExit: (timeout?: Duration.Input) => Effect.Effect<Outcome, CliTimeout>
  /** Waits until stdout matches `pattern`; returns the match. */
  readonly waitStdout: (pattern: RegExp, timeout?: Duration.Input) => Effect.Effect<RegExpExecArray, CliTimeout>
  /** Waits until stderr matches `pattern`; returns the match. */
  readonly waitStderr: (pattern: RegExp, timeout?: Duration.Input) => Effect.Effect<RegExpExecArray, CliTimeout>
  readonly kill: (signal: NodeJS.Signals) => Effect.Effect<void>
}

/** The environment of a spawned CLI: no inherited agent-dir variables, a private HOME. */
export const cleanEnv = (home: string, extra: Readonly<Record<string, string>> = {}): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && key !== "ATOMIC_CODING_AGENT_DIR" && key !== "PI_CODING_AGENT_DIR") env[key] = value
  }
  return { ...env, HOME: home, NODE_NO_WARNINGS: "1", ...extra }
}

/** Spawns `node dist/bin/intercom.mjs ...args`; killed (SIGKILL) when the Scope closes if still running. */
export const spawnCli = (
  args: ReadonlyArray<string>,
  env: Readonly<Record<string, string>>
): Effect.Effect<CliProcess, never, Scope.Scope> =>
  Effect.gen(function*() {
    const exit = yield* Deferred.make<Outcome>()
    const child = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const child = spawn(process.execPath, [MAIN, ...args], { env, stdio: ["ignore", "pipe", "pipe"] })
        child.once("exit", (code, signal) => Deferred.doneUnsafe(exit, Exit.succeed({ code, signal })))
        return child
      }),
      (child) =>
        Effect.gen(function*() {
          if (child.exitCode === null && child.signalCode === null) {
            child.kill("SIGKILL")
            yield* Effect.timeoutOption(Deferred.await(exit), "5 seconds")
          }
        })
    )
    let stdout = ""
    let stderr = ""
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk
    })
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk
    })
    const timeoutError = (what: string) => () => new CliTimeout({ what, stdout, stderr })
    const waitFor = (what: string, read: () => string, pattern: RegExp, timeout: Duration.Input = WAIT) =>
      Effect.gen(function*() {
        while (true) {
          const match = pattern.exec(read())
          if (match !== null) return match
          if (child.exitCode !== null || child.signalCode !== null) {
            yield* Effect.sleep("50 millis") // let the pipes drain
            const last = pattern.exec(read())
            if (last !== null) return last
            return yield* timeoutError(`${what} ${pattern} (the process exited)`)()
          }
          yield* Effect.sleep("20 millis")
        }
      }).pipe(
        Effect.timeoutOrElse({ duration: timeout, orElse: () => Effect.fail(timeoutError(`${what} ${pattern}`)()) })
      )
    return {
      child,
      pid: child.pid ?? -1,
      stdout: () => stdout,
      stderr: () => stderr,
      exited: Deferred.await(exit),
      waitExit: (timeout: Duration.Input = WAIT) =>
        Deferred.await(exit).pipe(
          Effect.timeoutOrElse({ duration: timeout, orElse: () => Effect.fail(timeoutError("exit")()) })
        ),
      waitStdout: (pattern, timeout) => waitFor("stdout", () => stdout, pattern, timeout),
      waitStderr: (pattern, timeout) => waitFor("stderr", () => stderr, pattern, timeout),
      kill: (signal) => Effect.sync(() => void child.kill(signal))
    } satisfies CliProcess
  })

export interface Completed extends Outcome {
  readonly stdout: string
  readonly stderr: string
}

/** Runs a short command to completion. */
export const runCli = (
  args: ReadonlyArray<string>,
  env: Readonly<Record<string, string>>
): Effect.Effect<Completed, CliTimeout> =>
  Effect.scoped(
    Effect.gen(function*() {
      const cli = yield* spawnCli(args, env)
      const outcome = yield* cli.waitExit()
      // let the pipes drain after exit
      yield* Effect.sleep("20 millis")
      return { ...outcome, stdout: cli.stdout(), stderr: cli.stderr() }
    })
  )

/** Starts `intercom broker ...args` and waits for its startup line; returns it with its pid. */
export const startBroker = (
  args: ReadonlyArray<string>,
  env: Readonly<Record<string, string>>
): Effect.Effect<CliProcess & { readonly brokerPid: number }, CliTimeout, Scope.Scope> =>
  Effect.gen(function*() {
    const cli = yield* spawnCli(["broker", ...args], env)
    const match = yield* cli.waitStdout(STARTED)
    return { ...cli, brokerPid: Number(match[1]) }
  })

/** A fresh short temp dir, removed with the Scope. */
export const tempDir = (prefix = "eic-"): Effect.Effect<string, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), prefix))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )

export const mode = (file: string): number => fs.statSync(file).mode & 0o777

export const exists = (file: string): boolean => fs.existsSync(file)

/** A raw wire client: enough to register one session and go away. */
export const encodeFrame = (value: unknown): Buffer => {
  const payload = Buffer.from(JSON.stringify(value), "utf8")
  const header = Buffer.alloc(4)
  header.writeUInt32BE(payload.length, 0)
  return Buffer.concat([header, payload])
}

export class DialFailed extends Data.TaggedError("DialFailed")<{ readonly path: string; readonly cause: unknown }> {}

/** Connects, sends `register`, waits for any reply bytes (the `registered` frame). Destroyed with the Scope. */
export const registerSession = (socketPath: string, name: string): Effect.Effect<net.Socket, DialFailed, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.callback<net.Socket, DialFailed>((resume) => {
      const socket = net.createConnection({ path: socketPath })
      socket.once("error", (cause) => resume(Effect.fail(new DialFailed({ path: socketPath, cause }))))
      socket.once("connect", () => {
        const now = Date.now()
        socket.write(encodeFrame({
          type: "register",
          sessionId: `cli-test-${name}`,
          session: { name, cwd: "/tmp", model: "test", pid: process.pid, startedAt: now, lastActivity: now }
        }))
      })
      socket.once("data", () => resume(Effect.succeed(socket)))
      return Effect.sync(() => socket.destroy())
    }),
    (socket) => Effect.sync(() => socket.destroy())
  )
