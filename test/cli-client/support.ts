/**
 * The built `intercom` executable (whatever package.json's `bin` names) run as
 * real processes, for the client commands, through the one process harness
 * (test/support/process.ts). Every agent dir is a short private dir under /tmp
 * whose broker (auto-spawned, detached) is stopped through its pid file when
 * the Scope closes, before the dir is removed. Nothing here builds: `npm test`
 * runs the build before vitest.
 */
import { makeClient, registrationOf, subscribe } from "../client/support.ts"
import { Effect, type Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { built } from "../support/built.ts"
import {
  type Child,
  type ChildFailed,
  childEnv,
  type Completed,
  readPidFile,
  runChild,
  spawnNode,
  stopPid
} from "../support/process.ts"

export type { Child, ChildFailed, Completed, Outcome } from "../support/process.ts"

const ROOT = fileURLToPath(new URL("../../", import.meta.url))

/** package.json `bin.intercom`, resolved against the package root; fails at once when it was not built. */
export const binPath = (): string => {
  const pkg: unknown = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8"))
  const bin = typeof pkg === "object" && pkg !== null && "bin" in pkg ? pkg.bin : undefined
  const entry = typeof bin === "string"
    ? bin
    : typeof bin === "object" && bin !== null && "intercom" in bin && typeof bin.intercom === "string"
    ? bin.intercom
    : undefined
  if (entry === undefined) throw new Error("package.json has no bin.intercom")
  return built(path.resolve(ROOT, entry))
}

export const BIN = binPath()

/** An agent dir for one test, and the environment that points the CLI at it. */
export interface Agent {
  readonly root: string
  readonly agentDir: string
  readonly intercomDir: string
  readonly socketPath: string
  readonly pidFile: string
  readonly env: Readonly<Record<string, string>>
}

/**
 * A fresh agent dir `/tmp/eicc-XXXXXX/a` (short, for the socket path), with a
 * private HOME and no inherited intercom variables. Its broker (auto-spawned,
 * detached: not our child) is stopped through its pid file and the dir removed
 * when the Scope closes.
 */
export const makeAgent: Effect.Effect<Agent, never, Scope.Scope> = Effect.acquireRelease(
  Effect.sync(() => {
    const root = fs.mkdtempSync("/tmp/eicc-")
    const agentDir = path.join(root, "a")
    const intercomDir = path.join(agentDir, "intercom")
    return {
      root,
      agentDir,
      intercomDir,
      socketPath: path.join(intercomDir, "broker.sock"),
      pidFile: path.join(intercomDir, "broker.pid"),
      env: childEnv({ HOME: root, USER: "tester", PI_CODING_AGENT_DIR: agentDir })
    }
  }),
  (agent) => {
    const pid = readPidFile(agent.pidFile)
    return (pid === undefined ? Effect.void : stopPid(pid)).pipe(
      Effect.andThen(Effect.sync(() => fs.rmSync(agent.root, { recursive: true, force: true })))
    )
  }
)

/** Spawns `intercom ...args` in the agent's environment; its process group is killed when the Scope closes. */
export const spawnCli = (
  agent: Agent,
  args: ReadonlyArray<string>,
  options: { readonly stdin?: "pipe" | "ignore"; readonly env?: Readonly<Record<string, string>> } = {}
): Effect.Effect<Child, never, Scope.Scope> =>
  spawnNode([BIN, ...args], {
    env: { ...agent.env, ...options.env },
    cwd: agent.root,
    stdin: options.stdin ?? "ignore"
  })

/** Runs a command to completion; its complete output. */
export const runCli = (
  agent: Agent,
  args: ReadonlyArray<string>,
  options: { readonly env?: Readonly<Record<string, string>> } = {}
): Effect.Effect<Completed, ChildFailed> =>
  runChild(process.execPath, [BIN, ...args], { env: { ...agent.env, ...options.env }, cwd: agent.root })

/** `watch --name <name>` with piped stdin, once it has printed its ready line. */
export const startWatch = (
  agent: Agent,
  name: string,
  extra: ReadonlyArray<string> = []
): Effect.Effect<Child, ChildFailed, Scope.Scope> =>
  Effect.gen(function*() {
    const watch = yield* spawnCli(agent, ["watch", "--name", name, ...extra], { stdin: "pipe" })
    yield* extra.includes("--json") ? watch.waitStdout(/"event":"ready"/) : watch.waitStdout(/^Watching as /m)
    return watch
  })

/** Parses every line of `text` as JSON. */
export const jsonLines = (text: string): ReadonlyArray<Record<string, unknown>> =>
  text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => {
      const value: unknown = JSON.parse(line)
      if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error(`not an object: ${line}`)
      return Object.fromEntries(Object.entries(value))
    })

/** The single JSON object a `--json` command printed. */
export const jsonOf = (completed: Completed): Record<string, unknown> => {
  const lines = jsonLines(completed.stdout)
  if (lines.length !== 1 || lines[0] === undefined) {
    throw new Error(`expected one JSON line, got:\n${completed.stdout}\n--- stderr:\n${completed.stderr}`)
  }
  return lines[0]
}

/** `value[k1][k2]…`, or `undefined` where a step is not an object. */
export const get = (value: unknown, ...keys: ReadonlyArray<string>): unknown =>
  keys.reduce<unknown>((current, key) => typeof current === "object" && current !== null ? Reflect.get(current, key) : undefined, value)

/** `value` when it is an array; throws otherwise. */
export const asArray = (value: unknown): ReadonlyArray<unknown> => {
  if (!Array.isArray(value)) throw new Error(`not an array: ${JSON.stringify(value)}`)
  return value
}

/**
 * A supervisor session `supervisorId` ("planner", with an owner token) and a
 * child `childId` ("worker", group `run-1`) it authorized, both clients of
 * `agent`'s broker (which must be running), and the child's question events.
 */
export const supervisedChild = (agent: Agent, supervisorId: string, childId: string) =>
  Effect.gen(function*() {
    const options = (sessionId: string, name: string) => ({
      agentDir: agent.agentDir,
      intercomDir: agent.intercomDir,
      socketPath: agent.socketPath,
      sessionId,
      registration: registrationOf(name),
      launch: false as const
    })
    const supervisor = yield* makeClient({ ...options(supervisorId, "planner"), ownerToken: "a-long-random-owner-token" })
    const grant = yield* supervisor.client.authorizeChild("worker")
    const child = yield* makeClient({ ...options(childId, "worker"), group: "run-1", supervisorGrant: grant })
    const events = yield* subscribe(child.client.questionEvents, "question events")
    return { child, events, supervisor }
  })
