/**
 * Running the built CLI (`node dist/bin/intercom.mjs`, the bundle `bin` points
 * at) as a child process, through the one process harness
 * (test/support/process.ts): output read on `close`, the whole process group
 * killed when the test's Scope closes. Nothing here builds: `npm test` runs
 * `npm run build` before vitest.
 */
import { Data, Effect, type Scope } from "effect"
import * as fs from "node:fs"
import * as net from "node:net"
import { built, BUILT_CLI } from "../support/built.ts"
import { type Child, type ChildFailed, childEnv, type Completed, runChild, spawnNode } from "../support/process.ts"

export { tempDir } from "../support/broker.ts"
export type { Child, ChildFailed, Completed, Outcome } from "../support/process.ts"

/** The CLI bundle's absolute path; fails at once, naming `npm run build`, when it was not built. */
export const main = (): string => built(BUILT_CLI)

export const STARTED = /^Intercom broker started \(pid: (\d+)\)$/m

/** The environment of a spawned CLI: no inherited agent-dir variables, a private HOME. */
export const cleanEnv = (home: string, extra: Readonly<Record<string, string>> = {}): Record<string, string> =>
  childEnv({ HOME: home, ...extra })

/** Spawns `node dist/bin/intercom.mjs ...args`; its process group is killed when the Scope closes. */
export const spawnCli = (
  args: ReadonlyArray<string>,
  env: Readonly<Record<string, string>>
): Effect.Effect<Child, never, Scope.Scope> => Effect.suspend(() => spawnNode([main(), ...args], { env }))

/** Runs a short command to completion; its complete output. */
export const runCli = (
  args: ReadonlyArray<string>,
  env: Readonly<Record<string, string>>
): Effect.Effect<Completed, ChildFailed> => Effect.suspend(() => runChild(process.execPath, [main(), ...args], { env }))

/** Starts `intercom broker ...args` and waits for its startup line; returns it with the pid it printed. */
export const startBroker = (
  args: ReadonlyArray<string>,
  env: Readonly<Record<string, string>>
): Effect.Effect<Child & { readonly brokerPid: number }, ChildFailed, Scope.Scope> =>
  Effect.gen(function*() {
    const cli = yield* spawnCli(["broker", ...args], env)
    const match = yield* cli.waitStdout(STARTED)
    return { ...cli, brokerPid: Number(match[1]) }
  })

export const mode = (file: string): number => fs.statSync(file).mode & 0o777

export const exists = (file: string): boolean => fs.existsSync(file)

/** A length-prefixed frame (P01), for the raw wire client below. */
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
        socket.write(encodeFrame({
          type: "register",
          sessionId: `cli-test-${name}`,
          session: { name, cwd: "/tmp", model: "test", pid: process.pid, startedAt: 1, lastActivity: 1 }
        }))
      })
      socket.once("data", () => resume(Effect.succeed(socket)))
      return Effect.sync(() => socket.destroy())
    }),
    (socket) => Effect.sync(() => socket.destroy())
  )
