/**
 * The built `intercom` executable, run as a real process: startup line, files
 * and modes (P91), status/stop, signals and idle exit (P92, P95), startup
 * conflicts (P94), bad invocations. Needs `npm run build` first (`npm test`
 * does it).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import { openFileLimit } from "../../src/config/openFiles.ts"
import { probeHealth } from "../../src/transport/healthProbe.ts"
import { storeCorruptReplayBlock } from "../support/corruptDatabase.ts"
import { spawnChild } from "../support/process.ts"
import { cleanEnv, exists, main, mode, registerSession, runCli, STARTED, startBroker, tempDir } from "./support.ts"

/** A temp dir to use as HOME and agent dir, and the broker files under it. */
const setup = Effect.gen(function*() {
  const root = yield* tempDir()
  const agentDir = path.join(root, "agent")
  const intercomDir = path.join(agentDir, "intercom")
  return {
    root,
    agentDir,
    intercomDir,
    socketPath: path.join(intercomDir, "broker.sock"),
    pidFile: path.join(intercomDir, "broker.pid"),
    env: cleanEnv(root)
  }
})

describe("intercom broker", () => {
  it.live("starts, prints the startup line, writes its files with private modes, exits 0 on SIGTERM", () =>
    Effect.gen(function*() {
      const t = yield* setup
      const broker = yield* startBroker(["--dir", t.agentDir], t.env)
      assert.strictEqual(broker.brokerPid, broker.pid)
      assert.strictEqual(broker.stdout().split("\n")[0], `Intercom broker started (pid: ${broker.pid})`)
      yield* broker.waitStdout(/^Listening on .*broker\.sock for agent dir .*$/m)
      assert.include(broker.stdout(), t.socketPath)
      assert.include(broker.stdout(), t.agentDir)

      assert.strictEqual(fs.readFileSync(t.pidFile, "utf8"), String(broker.pid)) // no newline (P91)
      assert.strictEqual(mode(t.intercomDir), 0o700)
      assert.strictEqual(mode(t.socketPath), 0o600)
      assert.strictEqual(mode(t.pidFile), 0o600)
      assert.isTrue(fs.statSync(t.socketPath).isSocket())
      assert.isTrue(yield* probeHealth(t.socketPath))

      yield* broker.kill("SIGTERM")
      const outcome = yield* broker.waitExit()
      assert.deepStrictEqual(outcome, { code: 0, signal: null })
      assert.isFalse(exists(t.socketPath), "socket removed")
      assert.isFalse(exists(t.pidFile), "pid file removed")
    }))

  it.live("warns at start when the session cap is above the open-file limit, and not when it fits", () =>
    Effect.gen(function*() {
      const limit = yield* openFileLimit
      if (limit === undefined) return // not Linux: the limit is unknown and nothing is said
      const t = yield* setup
      const above = yield* startBroker(["--dir", t.agentDir, "--max-sessions", String(limit)], t.env)
      yield* above.kill("SIGTERM")
      assert.deepStrictEqual(yield* above.waitExit(), { code: 0, signal: null })
      assert.include(above.stderr(), `The session cap is ${limit}, but this process may open only`)
      assert.include(above.stderr(), "ulimit -n")

      const fits = yield* startBroker(["--dir", t.agentDir, "--max-sessions", "10"], t.env)
      yield* fits.kill("SIGTERM")
      assert.deepStrictEqual(yield* fits.waitExit(), { code: 0, signal: null })
      assert.notInclude(fits.stderr(), "ulimit -n")
    }))

  it.live("with the default cap above the open-file limit, states once what the limit holds (info), with no warning", () =>
    Effect.gen(function*() {
      if ((yield* openFileLimit) === undefined) return // not Linux: the limit is unknown and nothing is said
      const t = yield* setup
      // A limit of 1024 (soft and hard, so Node cannot raise it) against the default cap of 50000.
      const broker = yield* spawnChild(
        "/bin/sh",
        ["-c", `ulimit -n 1024 && exec "$0" "$@"`, process.execPath, main(), "broker", "--dir", t.agentDir],
        { env: t.env }
      )
      yield* broker.waitStdout(STARTED)
      yield* broker.kill("SIGTERM")
      assert.deepStrictEqual(yield* broker.waitExit(), { code: 0, signal: null }, broker.stderr())
      const notes = broker.stderr().split("\n").filter((line) => line.includes("ulimit -n"))
      assert.strictEqual(notes.length, 1, broker.stderr())
      assert.match(
        notes[0] ?? "",
        /^\S+ INFO Open-file limit 1024 \(ulimit -n\): this broker holds about 960 sessions, below its default cap of 50000;/
      )
      assert.notInclude(broker.stderr(), "WARN")
    }))

  it.live("--durability memory opens no database; the default (sqlite) opens intercom.db", () =>
    Effect.gen(function*() {
      const t = yield* setup
      const db = path.join(t.intercomDir, "intercom.db")
      const memory = yield* startBroker(["--dir", t.agentDir, "--durability", "memory"], t.env)
      assert.isTrue(yield* probeHealth(t.socketPath))
      assert.isFalse(exists(db), "memory mode created intercom.db")
      yield* memory.kill("SIGTERM")
      assert.deepStrictEqual(yield* memory.waitExit(), { code: 0, signal: null })
      const durable = yield* startBroker(["--dir", t.agentDir], t.env)
      assert.isTrue(yield* probeHealth(t.socketPath))
      assert.isTrue(exists(db), "the default mode did not create intercom.db")
      yield* durable.kill("SIGTERM")
      assert.deepStrictEqual(yield* durable.waitExit(), { code: 0, signal: null })
    }))

  it.live("exits 0 on SIGINT too", () =>
    Effect.gen(function*() {
      const t = yield* setup
      const broker = yield* startBroker(["--dir", t.agentDir], t.env)
      yield* broker.kill("SIGINT")
      assert.deepStrictEqual(yield* broker.waitExit(), { code: 0, signal: null })
      assert.isFalse(exists(t.socketPath))
      assert.isFalse(exists(t.pidFile))
    }))

  it.live("SIGTERM right after a burst of silent connections: every finalizer completes and the broker exits 0", () =>
    Effect.gen(function*() {
      const t = yield* setup
      const broker = yield* startBroker(["--dir", t.agentDir], t.env)
      const sockets = yield* Effect.acquireRelease(
        Effect.sync(() =>
          Array.from({ length: 20 }, () => net.createConnection({ path: t.socketPath }).on("error", () => {}))
        ),
        (sockets) => Effect.sync(() => sockets.forEach((socket) => socket.destroy()))
      )
      yield* Effect.callback<void>((resume) => {
        sockets[sockets.length - 1]?.once("connect", () => resume(Effect.void))
      })
      yield* broker.kill("SIGTERM")
      // Exit 1 would mean a finalizer hung and the shutdown grace ran out.
      assert.deepStrictEqual(yield* broker.waitExit(), { code: 0, signal: null }, broker.stderr())
      assert.isFalse(exists(t.socketPath))
      assert.isFalse(exists(t.pidFile))
    }))

  it.live("accepts the broker.ts path pi-intercom's spawner appends, and PI_CODING_AGENT_DIR", () =>
    Effect.gen(function*() {
      const t = yield* setup
      const env = { ...t.env, PI_CODING_AGENT_DIR: t.agentDir }
      const broker = yield* startBroker(["/some/path/broker/broker.ts"], env)
      assert.strictEqual(fs.readFileSync(t.pidFile, "utf8"), String(broker.pid))
      assert.isTrue(yield* probeHealth(t.socketPath))
    }))

  it.live("ATOMIC_CODING_AGENT_DIR beats PI_CODING_AGENT_DIR; --dir beats both", () =>
    Effect.gen(function*() {
      const t = yield* setup
      const atomic = path.join(t.root, "atomic")
      const pi = path.join(t.root, "pi")
      const env = { ...t.env, ATOMIC_CODING_AGENT_DIR: atomic, PI_CODING_AGENT_DIR: pi }
      const first = yield* startBroker([], env)
      assert.isTrue(exists(path.join(atomic, "intercom", "broker.pid")))
      assert.isFalse(exists(path.join(pi, "intercom")))
      const second = yield* startBroker(["--dir", t.agentDir], env)
      assert.isTrue(exists(t.pidFile))
      yield* first.kill("SIGTERM")
      yield* second.kill("SIGTERM")
      assert.strictEqual((yield* first.waitExit()).code, 0)
      assert.strictEqual((yield* second.waitExit()).code, 0)
    }))

  it.live("a bad ask-timeout variable stops it (exit 1, naming it); a bad group variable, which only clients use, does not", () =>
    Effect.gen(function*() {
      const t = yield* setup
      const ask = yield* runCli(["broker", "--dir", t.agentDir], { ...t.env, PI_INTERCOM_ASK_TIMEOUT_MS: "soon" })
      assert.strictEqual(ask.code, 1)
      assert.include(ask.stderr, `Environment variable PI_INTERCOM_ASK_TIMEOUT_MS must be`)
      const broker = yield* startBroker(["--dir", t.agentDir], { ...t.env, ATOMIC_INTERCOM_GROUP: "x".repeat(300) })
      assert.isTrue(yield* probeHealth(t.socketPath))
      yield* broker.kill("SIGTERM")
      assert.deepStrictEqual(yield* broker.waitExit(), { code: 0, signal: null })
    }))

  it.live("a second broker on the same dir exits 1 with the 'already running' message", () =>
    Effect.gen(function*() {
      const t = yield* setup
      const first = yield* startBroker(["--dir", t.agentDir], t.env)
      const second = yield* runCli(["broker", "--dir", t.agentDir], t.env)
      assert.strictEqual(second.code, 1)
      assert.include(second.stderr, "already running")
      assert.include(second.stderr, t.socketPath)
      assert.notInclude(second.stdout, "Intercom broker started")
      assert.notInclude(second.stderr, "Intercom broker stopped")
      // the first one is untouched
      assert.isTrue(yield* probeHealth(t.socketPath))
      assert.strictEqual(fs.readFileSync(t.pidFile, "utf8"), String(first.pid))
    }))

  it.live("a stale pid file naming a live non-broker process does not block startup", () =>
    Effect.gen(function*() {
      const t = yield* setup
      fs.mkdirSync(t.intercomDir, { recursive: true, mode: 0o700 })
      fs.writeFileSync(t.pidFile, String(process.pid), { mode: 0o600 }) // alive, but not a broker
      const broker = yield* startBroker(["--dir", t.agentDir], t.env)
      assert.strictEqual(fs.readFileSync(t.pidFile, "utf8"), String(broker.pid))
      assert.isTrue(yield* probeHealth(t.socketPath))
    }))

  it.live("an unusable intercom dir exits 1 with a clear message", () =>
    Effect.gen(function*() {
      const t = yield* setup
      fs.mkdirSync(t.agentDir, { recursive: true })
      fs.writeFileSync(t.intercomDir, "not a directory") // root can write anywhere; a file in the way stops anyone
      const result = yield* runCli(["broker", "--dir", t.agentDir], t.env)
      assert.strictEqual(result.code, 1)
      assert.include(result.stderr, "Cannot use the intercom directory")
      assert.include(result.stderr, t.intercomDir)
      assert.include(result.stderr, "it is not a directory")
      assert.notInclude(result.stderr, "EEXIST", "not mkdir's own message")
      assert.notInclude(result.stderr, "    at ", "no stack trace")
      assert.notInclude(result.stderr, "Intercom broker stopped", "it never started")
      assert.strictEqual(result.stdout, "")
    }))

  it.live("a database holding a row that does not decode: exits 1 naming the file once, the row and what to do", () =>
    Effect.gen(function*() {
      const t = yield* setup
      fs.mkdirSync(t.intercomDir, { recursive: true, mode: 0o700 })
      const file = path.join(t.intercomDir, "intercom.db")
      yield* storeCorruptReplayBlock(file)
      const result = yield* runCli(["broker", "--dir", t.agentDir], t.env)
      assert.strictEqual(result.code, 1)
      assert.strictEqual(result.stderr.split(file).length - 1, 1, `the path once in: ${result.stderr}`)
      assert.include(result.stderr, "replay block \"1\" does not decode")
      assert.include(result.stderr, "move the file aside")
      assert.include(result.stderr, "--durability memory")
      assert.notInclude(result.stderr, "    at ", "no stack trace")
      assert.strictEqual(result.stdout, "")
    }))

  it.live("a database file that is not a database: exits 1 naming the file and how to start afresh", () =>
    Effect.gen(function*() {
      const t = yield* setup
      fs.mkdirSync(t.intercomDir, { recursive: true, mode: 0o700 })
      const file = path.join(t.intercomDir, "intercom.db")
      fs.writeFileSync(file, "not a database, but long enough to have a header".repeat(20), { mode: 0o600 })
      const result = yield* runCli(["broker", "--dir", t.agentDir], t.env)
      assert.strictEqual(result.code, 1)
      assert.include(result.stderr, `${file} is damaged or is not an intercom database`)
      assert.include(result.stderr, `mv ${file} ${file}.corrupt`)
      assert.include(result.stderr, "--durability memory")
      assert.strictEqual(result.stdout, "")
    }))

  it.live("logs one line per session join and leave, then exits 0 when idle", () =>
    Effect.gen(function*() {
      const t = yield* setup
      const broker = yield* startBroker(["--dir", t.agentDir], t.env)
      const before = broker.stderr().split("\n").length
      yield* Effect.scoped(
        Effect.gen(function*() {
          yield* registerSession(t.socketPath, "alice")
          yield* broker.waitStderr(/alice/)
        })
      )
      yield* broker.waitStderr(/alice[^\n]*\n[^\n]*alice/) // a second line about alice: she left
      const lines = broker.stderr().split("\n").slice(before - 1).filter((line) => line.includes("alice"))
      assert.strictEqual(lines.length, 2, broker.stderr())
      for (const line of lines) assert.match(line, /^\d{4}-\d\d-\d\dT\S+Z INFO /)

      // P92: 5 s after the last session left, the broker shuts down by itself
      const outcome = yield* broker.waitExit("15 seconds")
      assert.deepStrictEqual(outcome, { code: 0, signal: null })
      assert.isFalse(exists(t.socketPath))
      assert.isFalse(exists(t.pidFile))
    }), 30_000)

  it.live("--idle-exit sets how long it waits with no session (here: one that never came)", () =>
    Effect.gen(function*() {
      const t = yield* setup
      const broker = yield* startBroker(["--dir", t.agentDir, "--idle-exit", "1s"], t.env)
      assert.deepStrictEqual(yield* broker.waitExit("15 seconds"), { code: 0, signal: null })
      assert.isFalse(exists(t.socketPath))
    }), 30_000)

  it.live("--mailbox-retention takes a duration such as 12h (the broker starts with it)", () =>
    Effect.gen(function*() {
      const t = yield* setup
      const broker = yield* startBroker(["--dir", t.agentDir, "--mailbox-retention", "12h", "--idle-exit", "1s"], t.env)
      yield* broker.waitStdout(/Intercom broker started/)
      assert.deepStrictEqual(yield* broker.waitExit("15 seconds"), { code: 0, signal: null })
    }), 30_000)

  it.live("falls back to a short socket path for a long agent dir, and status/stop find it", () =>
    Effect.gen(function*() {
      const t = yield* setup
      const runtimeDir = path.join(t.root, "run")
      fs.mkdirSync(runtimeDir, { mode: 0o700 })
      const agentDir = path.join(t.root, "a".repeat(60), "b".repeat(60))
      const env = { ...t.env, XDG_RUNTIME_DIR: runtimeDir }
      const broker = yield* startBroker(["--dir", agentDir], env)
      const listening = yield* broker.waitStdout(/^Listening on (\S+) \(short fallback: .*$/m)
      const socketPath = listening[1] ?? ""
      assert.match(socketPath, new RegExp(`^${runtimeDir}/intercom-\\d+/[0-9a-f]{16}\\.sock$`))
      assert.strictEqual(mode(path.dirname(socketPath)), 0o700)
      assert.strictEqual(mode(socketPath), 0o600)
      assert.isTrue(yield* probeHealth(socketPath))
      // the pid file stays in the agent dir
      assert.strictEqual(fs.readFileSync(path.join(agentDir, "intercom", "broker.pid"), "utf8"), String(broker.pid))

      const status = yield* runCli(["broker", "status", "--dir", agentDir], env)
      assert.strictEqual(status.code, 0, status.stdout + status.stderr)
      assert.include(status.stdout, socketPath)
      const stop = yield* runCli(["broker", "stop", "--dir", agentDir], env)
      assert.strictEqual(stop.code, 0, stop.stdout + stop.stderr)
      assert.deepStrictEqual(yield* broker.waitExit(), { code: 0, signal: null })
      assert.isFalse(exists(socketPath))
    }))
})

describe("intercom broker: the fast path and effect/cli run the same broker", () => {
  /** One broker's life, with pids and times taken out: stdout, the alice lines on stderr, the exit. */
  const lifeOf = (args: (agentDir: string) => ReadonlyArray<string>) =>
    Effect.gen(function*() {
      const t = yield* setup
      const broker = yield* startBroker(args(t.agentDir), t.env)
      yield* broker.waitStdout(/^Listening on .*$/m)
      yield* Effect.scoped(
        Effect.gen(function*() {
          yield* registerSession(t.socketPath, "alice")
          yield* broker.waitStderr(/alice/)
        })
      )
      yield* broker.waitStderr(/alice[^\n]*\n[^\n]*alice/)
      yield* broker.kill("SIGTERM")
      const outcome = yield* broker.waitExit()
      const anonymous = (text: string) =>
        text.replaceAll(t.root, "<root>").replaceAll(String(broker.pid), "<pid>").replace(/^\S+Z /gm, "<time> ")
      return {
        stdout: anonymous(broker.stdout()),
        stderr: anonymous(broker.stderr()).split("\n").filter((line) => line.includes("alice") || line.includes("stopped")),
        outcome
      }
    })

  it.live("startup lines, join/leave lines, shutdown line and exit 0 are the same either way", () =>
    Effect.gen(function*() {
      // argv.ts takes the first; --idle-exit (the default 5s), which only the full program knows, sends the second
      // through effect/cli.
      const fast = yield* lifeOf((agentDir) => ["--dir", agentDir])
      const full = yield* lifeOf((agentDir) => ["--idle-exit", "5s", "--dir", agentDir])
      assert.deepStrictEqual(full, fast)
      assert.deepStrictEqual(fast.outcome, { code: 0, signal: null })
      assert.match(fast.stdout, /^Intercom broker started \(pid: <pid>\)\nListening on /)
      assert.strictEqual(fast.stderr.length, 3, fast.stderr.join("\n")) // joined, left, stopped
    }), 30_000)

  it.live("a startup error: the same message and exit code 1 either way", () =>
    Effect.gen(function*() {
      const t = yield* setup
      fs.mkdirSync(t.agentDir, { recursive: true })
      fs.writeFileSync(t.intercomDir, "not a directory")
      const fast = yield* runCli(["broker", "--dir", t.agentDir], t.env)
      const full = yield* runCli(["broker", "--idle-exit", "5s", "--dir", t.agentDir], t.env)
      assert.deepStrictEqual(full, fast)
      assert.strictEqual(fast.code, 1)
    }))
})

describe("intercom broker status", () => {
  it.live("exits 0 and reports the pid while a broker runs, 1 when none does", () =>
    Effect.gen(function*() {
      const t = yield* setup
      const none = yield* runCli(["broker", "status", "--dir", t.agentDir], t.env)
      assert.strictEqual(none.code, 1)
      assert.include(none.stdout, "not running")
      assert.include(none.stdout, t.socketPath)
      assert.isFalse(exists(t.intercomDir), "status creates nothing")

      const broker = yield* startBroker(["--dir", t.agentDir], t.env)
      // the flag may also come before the subcommand
      const running = yield* runCli(["broker", "--dir", t.agentDir, "status"], t.env)
      assert.strictEqual(running.code, 0, running.stdout + running.stderr)
      assert.include(running.stdout, "running")
      assert.notInclude(running.stdout, "not running")
      assert.match(running.stdout, new RegExp(`pid:\\s+${broker.pid}\\b`))
      assert.include(running.stdout, t.socketPath)
    }))

  it.live("a pid file without a broker is reported as stale", () =>
    Effect.gen(function*() {
      const t = yield* setup
      fs.mkdirSync(t.intercomDir, { recursive: true, mode: 0o700 })
      fs.writeFileSync(t.pidFile, String(process.pid))
      const result = yield* runCli(["broker", "status", "--dir", t.agentDir], t.env)
      assert.strictEqual(result.code, 1)
      assert.include(result.stdout, "stale")
    }))
})

describe("intercom broker stop", () => {
  it.live("stops a running broker: it exits 0 and its socket and pid file are gone", () =>
    Effect.gen(function*() {
      const t = yield* setup
      const broker = yield* startBroker(["--dir", t.agentDir], t.env)
      const stop = yield* runCli(["broker", "stop", "--dir", t.agentDir], t.env)
      assert.strictEqual(stop.code, 0, stop.stdout + stop.stderr)
      assert.include(stop.stdout, `Intercom broker stopped (pid: ${broker.pid})`)
      assert.notInclude(stop.stderr, "Warning", "no session was connected")
      assert.deepStrictEqual(yield* broker.waitExit(), { code: 0, signal: null })
      assert.isFalse(exists(t.socketPath))
      assert.isFalse(exists(t.pidFile))
    }))

  it.live("with sessions connected, warns on stderr how many, that their clients may start a broker again, and how to stop them", () =>
    Effect.gen(function*() {
      const t = yield* setup
      const broker = yield* startBroker(["--dir", t.agentDir], t.env)
      yield* registerSession(t.socketPath, "alice")
      yield* registerSession(t.socketPath, "bob")
      const stop = yield* runCli(["broker", "stop", "--dir", t.agentDir], t.env)
      assert.strictEqual(stop.code, 0, stop.stdout + stop.stderr)
      assert.include(stop.stdout, `Intercom broker stopped (pid: ${broker.pid})`)
      assert.include(stop.stderr, "Warning: 2 sessions were connected to it.")
      assert.include(stop.stderr, "may start a broker again")
      assert.include(stop.stderr, "Ctrl-C each `intercom watch`")
    }))

  it.live("with no broker running, says so, signals nobody and exits 0", () =>
    Effect.gen(function*() {
      const t = yield* setup
      fs.mkdirSync(t.intercomDir, { recursive: true, mode: 0o700 })
      fs.writeFileSync(t.pidFile, String(process.pid)) // must never be signalled
      const result = yield* runCli(["broker", "stop", "--dir", t.agentDir], t.env)
      assert.strictEqual(result.code, 0)
      assert.include(result.stdout, "No intercom broker is running")
    }))

  it.live("refuses to signal a pid that does not hold the broker socket", () =>
    Effect.gen(function*() {
      const t = yield* setup
      const broker = yield* startBroker(["--dir", t.agentDir], t.env)
      fs.writeFileSync(t.pidFile, String(process.pid)) // a live process that is not the broker
      const result = yield* runCli(["broker", "stop", "--dir", t.agentDir], t.env)
      assert.strictEqual(result.code, 1)
      assert.include(result.stderr, "Not sending any signal")
      assert.isTrue(yield* probeHealth(t.socketPath), "the broker is still running")
      assert.isUndefined(broker.outcome(), "the broker is still running")
    }))
})

describe("bad invocations", () => {
  const usage = (args: ReadonlyArray<string>, expected: string) =>
    Effect.gen(function*() {
      const t = yield* setup
      const result = yield* runCli(args, t.env)
      assert.strictEqual(result.code, 2, `${args.join(" ")}\n${result.stdout}${result.stderr}`)
      // The usage is part of the error: on stderr, with it; stdout carries results only.
      assert.include(result.stderr, "USAGE")
      assert.include(result.stderr, expected)
      assert.strictEqual(result.stdout, "")
    })

  it.live("an unknown flag exits 2 with usage", () => usage(["broker", "--bogus"], "--bogus"))
  it.live("a non-integer --max-sessions exits 2", () => usage(["broker", "--max-sessions", "abc"], "max-sessions"))
  it.live("a non-positive --max-sessions exits 2", () => usage(["broker", "--max-sessions", "0"], "--max-sessions must be a whole number ≥ 1, got 0"))
  it.live("an --idle-exit that is neither a duration nor never exits 2", () =>
    usage(["broker", "--idle-exit", "soon"], "--idle-exit must be a duration"))
  it.live("a --mailbox-retention that is not a duration from 1s to 30d exits 2 and says so", () =>
    Effect.gen(function*() {
      for (const value of ["soon", "0", "500ms", "31d"]) {
        yield* usage(["broker", "--mailbox-retention", value], "--mailbox-retention must be a duration from 1s to 30d")
      }
    }))
  it.live("a mistyped subcommand exits 2 with the nearest subcommand, and starts no broker", () =>
    Effect.gen(function*() {
      yield* usage(["broker", "stopp"], "unknown subcommand 'stopp'; did you mean 'stop'?")
      yield* usage(["broker", "satus"], "did you mean 'status'?")
    }))
  it.live("more than one positional argument exits 2", () => usage(["broker", "/a/broker.ts", "extra"], "extra"))
  it.live("no subcommand exits 2", () =>
    Effect.gen(function*() {
      const t = yield* setup
      const result = yield* runCli([], t.env)
      assert.strictEqual(result.code, 2)
      assert.include(result.stdout, "USAGE")
    }))

  it.live("--help and --version exit 0", () =>
    Effect.gen(function*() {
      const t = yield* setup
      const help = yield* runCli(["broker", "--help"], t.env)
      assert.strictEqual(help.code, 0)
      assert.include(help.stdout, "status")
      assert.include(help.stdout, "stop")
      const version = yield* runCli(["--version"], t.env)
      assert.strictEqual(version.code, 0)
      assert.match(version.stdout, /\d+\.\d+\.\d+/)
    }))
})
