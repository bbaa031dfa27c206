/**
 * `intercom top` the way a person uses it: a broker process with traffic,
 * the built CLI's `top` running in a real pseudo-terminal (a private tmux
 * server), the screen read with `tmux capture-pane`, keys pressed with `tmux
 * send-keys`. Every wait polls the screen for the expected text with a
 * generous deadline; nothing waits a fixed time as a barrier.
 *
 * tmux comes from scripts/test-tools.sh (run here when tmux is missing); the
 * live-view tests are skipped, saying so, only when it cannot be installed.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Schedule, type Scope } from "effect"
import { execFileSync, spawnSync } from "node:child_process"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { BrokerSnapshot } from "../../src/observe/Snapshot.ts"
import { Schema } from "effect"
import { assertDelivered } from "../support/assertions.ts"
import { message, register, send } from "../support/broker.ts"
import { connect } from "../support/wire.ts"
import { cleanEnv, main, runCli, startBroker, tempDir } from "./support.ts"

const hasTmux = (): boolean => spawnSync("tmux", ["-V"], { stdio: "ignore" }).status === 0

/** tmux, installed by the project's test-tool script when it is missing. */
const tmuxReady = ((): boolean => {
  if (hasTmux()) return true
  const script = fileURLToPath(new URL("../../scripts/test-tools.sh", import.meta.url))
  spawnSync("bash", [script], { stdio: "inherit" })
  return hasTmux()
})()

/** A private tmux server (its own socket name), killed with the Scope. */
const tmuxServer = (): Effect.Effect<(...args: ReadonlyArray<string>) => string, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const socket = `ei-top-${randomUUID()}`
      return (...args: ReadonlyArray<string>) =>
        execFileSync("tmux", ["-L", socket, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })
    }),
    (tmux) => Effect.sync(() => {
      try {
        tmux("kill-server")
      } catch {
        // Already gone: the last session ended with `q`.
      }
    })
  )

const shellQuote = (text: string): string => `'${text.replaceAll("'", `'\\''`)}'`

/** Polls `look` every 100 ms until it returns a value, failing after `deadline` with the last screen. */
const pollScreen = <A>(
  screen: () => string,
  look: (text: string) => A | undefined,
  what: string,
  deadline: Duration.Input = "30 seconds"
): Effect.Effect<A, Error> =>
  Effect.suspend(() => {
    const text = screen()
    const found = look(text)
    return found === undefined ? Effect.fail(new Error(`not on the screen yet: ${what}\n${text}`)) : Effect.succeed(found)
  }).pipe(
    Effect.retry(Schedule.spaced("100 millis").pipe(Schedule.upTo({ duration: deadline })))
  )

/** The sessions table's rows: lines after the NAME header up to the blank line. */
const tableRows = (text: string): ReadonlyArray<string> => {
  const lines = text.split("\n")
  const header = lines.findIndex((line) => line.startsWith("NAME"))
  if (header < 0) return []
  const end = lines.findIndex((line, i) => i > header && line.trim() === "")
  return lines.slice(header + 1, end < 0 ? undefined : end)
}

describe("intercom top", () => {
  it.live.skipIf(!tmuxReady)("in a terminal: sessions, traffic, open asks and refusals appear; s sorts, / filters, q quits", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const agentDir = path.join(root, "agent")
      const socketPath = path.join(agentDir, "intercom", "broker.sock")
      yield* startBroker(["--dir", agentDir, "--idle-exit", "never", "--durability", "memory"], cleanEnv(root))
      const alice = yield* connect(socketPath, "alice")
      const bob = yield* connect(socketPath, "bob")
      const carol = yield* connect(socketPath, "carol")
      yield* register(alice, { sessionId: "a", name: "alice", status: "busy" })
      yield* register(bob, { sessionId: "b", name: "bob", status: "idle" })
      yield* register(carol, { sessionId: "c", name: "carol" })
      assertDelivered(yield* send(alice, "bob", message("hello")))
      assertDelivered(yield* send(bob, "alice", message("can you look?", { id: "ask-1", expectsReply: true })))
      assert.strictEqual((yield* send(alice, "nobody", message("lost"))).type, "delivery_failed")

      const tmux = yield* tmuxServer()
      const command = `${shellQuote(process.execPath)} ${shellQuote(main())} top --dir ${shellQuote(agentDir)} --interval 200`
      tmux("new-session", "-d", "-s", "top", "-x", "150", "-y", "45", `env HOME=${shellQuote(root)} ${command}`)
      const screen = () => tmux("capture-pane", "-p", "-t", "top")

      // The first screen: every session, the open ask, the refusal with its code.
      yield* pollScreen(screen, (text) =>
        ["alice", "bob", "carol", "OPEN ASKS (1)", "bob → alice  ask-1", "alice → nobody  E_TARGET_NOT_FOUND"]
            .every((part) => text.includes(part)) ? true : undefined, "sessions, the open ask and the refusal")

      // Live: new traffic shows up without a key press.
      assertDelivered(yield* send(carol, "alice", message("news")))
      yield* pollScreen(screen, (text) => text.includes("delivered 3") ? true : undefined, "the third delivery in the totals")
      const carolRow = yield* pollScreen(screen, (text) => tableRows(text).find((row) => row.startsWith("carol")), "carol's row")
      assert.match(carolRow, /^carol\s+default\s+-\s+ok\s+0\s+0\s+0\s+1\s/)

      // s: sort by name (from last activity).
      tmux("send-keys", "-t", "top", "s")
      const byName = yield* pollScreen(screen, (text) =>
        text.includes("sort (name)") ? tableRows(text).map((row) => row.split(" ")[0]) : undefined, "sorted by name")
      assert.deepStrictEqual(byName, ["alice", "bob", "carol"])

      // /bob Enter: only bob's row is left.
      tmux("send-keys", "-t", "top", "/", "b", "o", "b", "Enter")
      const filtered = yield* pollScreen(screen, (text) =>
        text.includes(`("bob")`) ? tableRows(text).map((row) => row.split(" ")[0]) : undefined, "filtered to bob")
      assert.deepStrictEqual(filtered, ["bob"])

      // q: top ends, its tmux session with it.
      tmux("send-keys", "-t", "top", "q")
      yield* pollScreen(() => {
        try {
          tmux("has-session", "-t", "top")
          return "running"
        } catch {
          return "gone"
        }
      }, (state) => state === "gone" ? true : undefined, "top to quit")
    }), 120_000)

  it.live("--once --json prints one snapshot a script can decode", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const agentDir = path.join(root, "agent")
      const socketPath = path.join(agentDir, "intercom", "broker.sock")
      yield* startBroker(["--dir", agentDir, "--idle-exit", "never", "--durability", "memory"], cleanEnv(root))
      const alice = yield* connect(socketPath, "alice")
      const bob = yield* connect(socketPath, "bob")
      yield* register(alice, { sessionId: "a", name: "alice" })
      yield* register(bob, { sessionId: "b", name: "bob" })
      assertDelivered(yield* send(alice, "bob", message("hello", { id: "m1" })))
      const result = yield* runCli(["top", "--once", "--json", "--dir", agentDir], cleanEnv(root))
      assert.strictEqual(result.code, 0, result.stderr)
      const snapshot = Schema.decodeUnknownSync(BrokerSnapshot)(JSON.parse(result.stdout))
      assert.deepStrictEqual(snapshot.sessions.map((row) => row.name).sort(), ["alice", "bob"])
      assert.deepStrictEqual(snapshot.traffic.map((entry) => entry.messageId), ["m1"])
    }), 60_000)

  it.live("a --dir that does not exist is a bad invocation naming it, not \"no broker\" (exit 2)", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const missing = path.join(root, "agnet")
      const result = yield* runCli(["top", "--once", "--dir", missing], cleanEnv(root))
      assert.strictEqual(result.code, 2, result.stderr)
      assert.strictEqual(result.stderr, `No such directory: ${missing} (--dir). Create it, or omit --dir for the default agent dir.\n`)
      assert.strictEqual(result.stdout, "")
    }), 60_000)

  it.live("with no broker, top says none is running and how to start one (exit 1)", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      fs.mkdirSync(path.join(root, "agent"))
      const result = yield* runCli(["top", "--once", "--dir", path.join(root, "agent")], cleanEnv(root))
      assert.strictEqual(result.code, 1)
      assert.include(result.stderr, "No intercom broker answers on")
      assert.include(result.stderr, "intercom broker")
    }), 60_000)

  it.live("--once prints the snapshot as text without the live view's key help", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const agentDir = path.join(root, "agent")
      yield* startBroker(["--dir", agentDir, "--idle-exit", "never", "--durability", "memory"], cleanEnv(root))
      const result = yield* runCli(["top", "--once", "--dir", agentDir], cleanEnv(root))
      assert.strictEqual(result.code, 0, result.stderr)
      assert.include(result.stdout, "RECENT REFUSALS")
      assert.notInclude(result.stdout, "keys:")
      assert.notInclude(result.stdout, "q quit")
    }), 60_000)

  it.live("--json without --once is refused with what to use instead (a bad invocation, exit 2)", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const result = yield* runCli(["top", "--json", "--dir", path.join(root, "agent")], cleanEnv(root))
      assert.strictEqual(result.code, 2)
      assert.include(result.stderr, "--json needs --once")
    }), 60_000)
})
