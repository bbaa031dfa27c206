/**
 * Auto-spawn with the real compiled broker (P93, C-BRK-16…20): the first
 * operation with no broker running starts a detached `dist/bin/intercom.mjs broker`,
 * and five processes racing to do so end up with exactly one broker.
 * Needs `npm run build` (npm test does it). Every broker started here is
 * stopped when its test's Scope closes.
 */
import { assert, describe, it } from "@effect/vitest"
import { vi } from "vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { BrokerStillChecking, ensureBroker } from "../../src/client/spawn.ts"
import { checkingBroker, checkingMarkOf } from "../../src/config/checkingMark.ts"
import { holdLifetimeLock } from "../../src/config/LifetimeLock.ts"
import { brokerEntryPoint, brokerScriptPath } from "../../src/config/install.ts"
import { probeHealth } from "../../src/transport/healthProbe.ts"
import { freeze } from "../support/freeze.ts"
import { childEnv, liveStranger, isAlive, readPidFile, spawnNode, stopPid } from "../support/process.ts"
import { agentDir, brokerProcesses, fakeBroker, makeClient } from "./support.ts"

const RACE_CLIENT = fileURLToPath(new URL("./fixtures/race-client.ts", import.meta.url))
const INTERRUPTED_SPAWN = fileURLToPath(new URL("./fixtures/interrupted-spawn.ts", import.meta.url))

/** Process group and session of a pid (fields 5 and 6 of /proc/<pid>/stat). */
const groupAndSession = (pid: number): readonly [number, number] => {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return [Number(fields[2]), Number(fields[3])]
}

describe("auto-spawn", () => {
  it.live("the first operation spawns one detached broker: pid file, health, broker.log; the lock is released", () =>
    Effect.gen(function*() {
      const dir = yield* agentDir()
      const id = "spawn-0000-0001"
      const { client } = yield* makeClient(dir.clientOptions(id, "spawner"))
      const sessions = yield* client.list
      assert.deepStrictEqual(sessions.map((s) => [s.id, s.name]), [[id, "spawner"]])

      const pid = readPidFile(dir.pidFile)
      assert.isDefined(pid, "broker.pid")
      if (pid === undefined) return
      assert.notStrictEqual(pid, process.pid)
      assert.isTrue(isAlive(pid))
      assert.deepStrictEqual(brokerProcesses(dir.agentDir), [pid])
      // Detached: its own process group and session, so it outlives this process's terminal.
      assert.deepStrictEqual(groupAndSession(pid), [pid, pid])
      // Started with the broker's V8 flags, before the entry point (a 4 MB young generation).
      const argv = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter((a) => a !== "")
      assert.deepStrictEqual(argv.slice(1, 3), ["--max-semi-space-size=4", brokerEntryPoint()])
      assert.isTrue(yield* probeHealth(dir.socketPath))
      assert.isTrue(fs.existsSync(dir.logFile), "broker.log")
      assert.isFalse(fs.existsSync(dir.lockFile), "the spawn lock was released")

      // A second client of the same agent dir uses that broker.
      const other = yield* makeClient(dir.clientOptions("spawn-0000-0002", "second"))
      assert.deepStrictEqual((yield* other.client.list).map((s) => s.id), [id, "spawn-0000-0002"])
      assert.deepStrictEqual(brokerProcesses(dir.agentDir), [pid])
    }))

  it.live("a broker that dies at launch fails the operation with its exit code and stderr", () =>
    Effect.gen(function*() {
      const dir = yield* agentDir()
      const { client } = yield* makeClient(dir.clientOptions("spawn-fail-0001", undefined, {
        launch: { _tag: "Command", command: process.execPath, args: ["-e", "console.error('no broker today'); process.exit(3)"] }
      }))
      const error = yield* Effect.flip(client.list)
      assert.strictEqual(error._tag, "IntercomNotConnected")
      assert.strictEqual(
        error.message,
        "Intercom not connected: broker failed to start: the broker exited (exit code 3); broker stderr:\nno broker today\n" +
          `It was started by brokerCommand ${JSON.stringify(process.execPath)} with brokerArgs ` +
          `["-e","console.error('no broker today'); process.exit(3)"] in config.json: fix that command there, or remove ` +
          "brokerCommand and brokerArgs to start the bundled broker."
      )
      assert.isFalse(fs.existsSync(dir.lockFile), "the spawn lock was released")
    }))

  it.live("a brokerCommand runs `<command> ...brokerArgs <broker script>`, a broker for the client's agent dir even where ATOMIC_CODING_AGENT_DIR names another", () =>
    Effect.gen(function*() {
      const dir = yield* agentDir()
      const elsewhere = yield* agentDir()
      // The brokers started here are found by their pid files (the broker script's command line names no dir).
      for (const pidFile of [dir.pidFile, elsewhere.pidFile]) {
        yield* Effect.addFinalizer(() => {
          const pid = readPidFile(pidFile)
          return pid === undefined ? Effect.void : stopPid(pid)
        })
      }
      // Inherited by the spawned broker: the client's own environment names another agent dir.
      yield* Effect.acquireRelease(
        Effect.sync(() => vi.stubEnv("ATOMIC_CODING_AGENT_DIR", elsewhere.agentDir)),
        () => Effect.sync(() => vi.unstubAllEnvs())
      )
      // `node --max-semi-space-size=4 <broker script>`, as `{ "brokerCommand": "node", "brokerArgs":
      // ["--max-semi-space-size=4"] }` runs it (docs/configuration.md: the default launch's V8 flag, passed by hand).
      yield* ensureBroker({
        agentDir: dir.agentDir,
        intercomDir: dir.intercomDir,
        socketPath: dir.socketPath,
        launch: { _tag: "Command", command: process.execPath, args: ["--max-semi-space-size=4"] }
      })
      assert.isTrue(yield* probeHealth(dir.socketPath))
      const pid = readPidFile(dir.pidFile)
      assert.isDefined(pid)
      const argv = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter((a) => a !== "")
      assert.deepStrictEqual(argv.slice(1), ["--max-semi-space-size=4", brokerScriptPath()])
      assert.isFalse(fs.existsSync(elsewhere.socketPath), "no broker for the inherited agent dir")
    }))

  it.live("a brokerCommand that cannot be run names brokerCommand and the config.json that set it, and what to do", () =>
    Effect.gen(function*() {
      const dir = yield* agentDir()
      const configFile = `${dir.agentDir}/intercom/config.json`
      const { client } = yield* makeClient(dir.clientOptions("spawn-fail-0002", undefined, {
        launch: { _tag: "Command", command: "/nonexistent/broker-bin", args: [], configFile }
      }))
      const error = yield* Effect.flip(client.list)
      assert.strictEqual(
        error.message,
        "Intercom not connected: broker failed to start: the broker exited (launch error: spawn /nonexistent/broker-bin ENOENT)\n" +
          `It was started by brokerCommand "/nonexistent/broker-bin" in ${configFile}: fix that command there, or remove ` +
          "brokerCommand and brokerArgs to start the bundled broker."
      )
    }))

  it.live("five processes racing to spawn end with exactly one broker, and all five registered with it", () =>
    Effect.gen(function*() {
      const dir = yield* agentDir()
      const ids = ["race-1", "race-2", "race-3", "race-4", "race-5"]
      const contenders = yield* Effect.forEach(ids, (id) => spawnNode([RACE_CLIENT, dir.agentDir, id], { stdin: "pipe" }))
      yield* Effect.forEach(contenders, (p) => p.waitStdout(/^ready$/m), { concurrency: "unbounded" })
      // All loaded: start them at once.
      yield* Effect.forEach(contenders, (p) => p.writeLine("go"))
      yield* Effect.forEach(contenders, (p, i) => p.waitStdout(new RegExp(`^registered ${ids[i]}$`, "m")), {
        concurrency: "unbounded"
      })

      const pid = readPidFile(dir.pidFile)
      assert.isDefined(pid)
      assert.deepStrictEqual(brokerProcesses(dir.agentDir), [pid], "exactly one broker process")
      assert.isFalse(fs.existsSync(dir.lockFile), "the spawn lock was released")
      const log = fs.readFileSync(dir.logFile, "utf8")
      assert.notMatch(log, /AlreadyRunning|already running|Error|error/, log)
      for (const p of contenders) assert.strictEqual(p.stderr(), "", `stderr of pid ${p.pid}`)

      // All five are sessions of that one broker.
      const { client } = yield* makeClient(dir.clientOptions("race-observer", "observer", { launch: false }))
      const listed = (yield* client.list).map((s) => s.id)
      assert.sameMembers(listed, [...ids, "race-observer"])

      // They leave cleanly when told to.
      yield* Effect.forEach(contenders, (p) => p.endStdin)
      const outcomes = yield* Effect.forEach(contenders, (p) => p.waitExit(), { concurrency: "unbounded" })
      assert.deepStrictEqual(outcomes, ids.map(() => ({ code: 0, signal: null })))
      assert.deepStrictEqual((yield* client.list).map((s) => s.id), ["race-observer"])
    }))
})

describe("a file where the intercom dir must be", () => {
  it.live("a library client's spawn names the file and what to do, in the CLI's words (config/dirInTheWay.ts)", () =>
    Effect.gen(function*() {
      const dir = yield* agentDir()
      // The intercom dir itself is a file.
      fs.writeFileSync(dir.intercomDir, "")
      const { client } = yield* makeClient(dir.clientOptions("spawn-file-0001", "spawner"))
      const error = yield* Effect.flip(client.list)
      assert.strictEqual(error._tag, "IntercomNotConnected")
      const otherDir = "(--dir, ATOMIC_CODING_AGENT_DIR or PI_CODING_AGENT_DIR)"
      assert.strictEqual(
        error.message,
        `Intercom not connected: broker failed to start: cannot use the intercom directory ${dir.intercomDir}: it is not a directory. ` +
          `Move that file out of the way, or pass another agent dir ${otherDir}.`
      )
      // A file above it: that file is named.
      const file = path.join(dir.agentDir, "afile")
      fs.writeFileSync(file, "")
      const below = path.join(file, "sub", "intercom")
      const other = yield* makeClient({
        ...dir.clientOptions("spawn-file-0002", "spawner"),
        agentDir: path.join(file, "sub"),
        intercomDir: below,
        socketPath: path.join(below, "broker.sock")
      })
      const aboveError = yield* Effect.flip(other.client.list)
      assert.strictEqual(
        aboveError.message,
        `Intercom not connected: broker failed to start: cannot use the intercom directory ${below}: ${file}, a file above it, is in the way. ` +
          `Move that file out of the way, or pass another agent dir ${otherDir}.`
      )
    }))
})

describe("the spawn lock (C-BRK-17…19)", () => {
  /** A launch that fails at once, so a spawn attempt shows up as "exited (exit code 3)". */
  const failingLaunch = { _tag: "Command", command: process.execPath, args: ["-e", "process.exit(3)"] } as const

  /** `waitMs`: short where the wait must run out; long where the launched process's exit ends it first. */
  const ensure = (dir: { agentDir: string; intercomDir: string; socketPath: string }, waitMs = 400) =>
    ensureBroker({ ...dir, launch: failingLaunch, waitMs }).pipe(Effect.flip, Effect.map((e) => e._tag === "BrokerSpawnFailed" ? e.detail : e.message))

  /** What a client that lost the spawn race says: C-BRK-17's words once, then what happened and what to do. */
  const lostRace = (dir: { intercomDir: string; socketPath: string }, waitMs = 400) =>
    `Broker failed to start within timeout: another client holds ${dir.intercomDir}/broker.spawn.lock and is ` +
    `starting the broker, but nothing answered on ${dir.socketPath} within ${waitMs} ms. Try again; if it keeps ` +
    `failing, the broker's stderr is in ${dir.intercomDir}/broker.log.`

  const prepare = Effect.gen(function*() {
    const dir = yield* agentDir()
    fs.mkdirSync(dir.intercomDir, { recursive: true, mode: 0o700 })
    return dir
  })

  it.live("a lock held by a live process with a fresh timestamp: wait for health, never spawn", () =>
    Effect.gen(function*() {
      const dir = yield* prepare
      fs.writeFileSync(dir.lockFile, `${process.ppid}\n${Date.now()}\n`)
      assert.strictEqual(yield* ensure(dir), lostRace(dir))
      assert.isFalse(fs.existsSync(dir.logFile), "nothing was launched")
      assert.isTrue(fs.existsSync(dir.lockFile), "someone else's lock is left alone")
    }))

  it.live("an empty lock just created is held (its creator is about to write it)", () =>
    Effect.gen(function*() {
      const dir = yield* prepare
      fs.writeFileSync(dir.lockFile, "")
      assert.strictEqual(yield* ensure(dir), lostRace(dir))
      assert.isFalse(fs.existsSync(dir.logFile), "nothing was launched")
    }))

  const staleLocks: ReadonlyArray<readonly [string, (lockFile: string) => void]> = [
    ["its pid is gone", (lockFile) => fs.writeFileSync(lockFile, `999999999\n${Date.now()}\n`)],
    ["it is older than 10 s", (lockFile) => fs.writeFileSync(lockFile, `${process.ppid}\n${Date.now() - 11_000}\n`)],
    ["its timestamp is unreadable", (lockFile) => fs.writeFileSync(lockFile, `${process.ppid}\nyesterday\n`)],
    ["it is empty and older than a second", (lockFile) => {
      fs.writeFileSync(lockFile, "")
      const past = new Date(Date.now() - 5_000)
      fs.utimesSync(lockFile, past, past)
    }]
  ]
  for (const [why, write] of staleLocks) {
    it.live(`a stale lock is removed and the spawn goes ahead: ${why}`, () =>
      Effect.gen(function*() {
        const dir = yield* prepare
        write(dir.lockFile)
        // The spawned process exits at once, but starting Node can take seconds on a loaded machine.
        // The first line: the rest names brokerCommand (this test launches a command of its own).
        assert.strictEqual((yield* ensure(dir, 30_000)).split("\n")[0], "the broker exited (exit code 3)")
        assert.isFalse(fs.existsSync(dir.lockFile), "our own lock was released")
      }))
  }
})

describe("auto-spawn and a broker that holds the agent dir", () => {
  it.live("a frozen broker: the client waits, then reports it as not answering, naming its pid, and starts no second one", () =>
    Effect.gen(function*() {
      const dir = yield* agentDir()
      const broker = yield* spawnNode([brokerEntryPoint(), "broker", "--dir", dir.agentDir], { env: childEnv() })
      yield* broker.waitStdout(/^Intercom broker started \(pid: \d+\)$/m)
      yield* freeze(broker.pid)
      const error = yield* Effect.flip(ensureBroker({ ...dir, launch: { _tag: "Default" }, waitMs: 1000 }))
      assert.include(error.message, `pid ${broker.pid}`)
      assert.include(error.message, "does not answer")
      assert.deepStrictEqual(brokerProcesses(dir.agentDir), [broker.pid], "no second broker was started")
      assert.isFalse(fs.existsSync(dir.logFile), "nothing was launched")
    }))

  it.live("a lock holder that has not written broker.pid yet: the older pid file's live pid is not named, nor to be signalled", () =>
    Effect.gen(function*() {
      const dir = yield* agentDir()
      fs.mkdirSync(dir.intercomDir, { recursive: true, mode: 0o700 })
      // An old broker's pid, now another process's (a sleep): alive, but not the lock's holder.
      const child = yield* liveStranger
      fs.writeFileSync(dir.pidFile, String(child.pid))
      yield* holdLifetimeLock(dir.intercomDir) // the holder: nothing listening, no pid written
      const error = yield* Effect.flip(ensureBroker({ ...dir, launch: { _tag: "Default" }, waitMs: 200 }))
      assert.strictEqual(error._tag, "BrokerNotAnswering")
      assert.notInclude(error.message, String(child.pid))
      assert.match(error.message, /^An intercom broker is running but does not answer/)
    }))
})

describe("a broker that checks its database in full at start (broker.checking)", () => {
  it.live("is waited for past waitMs while the mark names a live process, and used once it answers", () =>
    Effect.gen(function*() {
      // Health goes unanswered on the first probe (ensureBroker's own) and on the lock holder's wait.
      const broker = yield* fakeBroker({ silentHealthConnections: 2 })
      const dir = { agentDir: broker.root, intercomDir: broker.intercomDir, socketPath: broker.socketPath }
      yield* holdLifetimeLock(broker.intercomDir)
      fs.writeFileSync(checkingMarkOf(broker.intercomDir), String(process.pid))
      yield* ensureBroker({ ...dir, launch: { _tag: "Default" }, waitMs: 200, checkWaitMs: 30_000 })
      assert.strictEqual(broker.connections(), 3, "answered on the probe made while the check ran")
      assert.isFalse(fs.existsSync(path.join(broker.intercomDir, "broker.log")), "nothing was launched")
    }))

  it.live("still checking at checkWaitMs: fails with BrokerStillChecking, naming the pid and what to do", () =>
    Effect.gen(function*() {
      const dir = yield* agentDir()
      fs.mkdirSync(dir.intercomDir, { recursive: true, mode: 0o700 })
      yield* holdLifetimeLock(dir.intercomDir)
      fs.writeFileSync(checkingMarkOf(dir.intercomDir), String(process.pid))
      const error = yield* Effect.flip(ensureBroker({ ...dir, launch: { _tag: "Default" }, waitMs: 200, checkWaitMs: 600 }))
      assert.instanceOf(error, BrokerStillChecking)
      assert.strictEqual(
        error.message,
        `The intercom broker (pid ${process.pid}) is still checking its database (${dir.intercomDir}/intercom.db) after ` +
          "an unclean shutdown; waited 1 s. The check (PRAGMA quick_check) reads every page, about 4 s per GB, and the " +
          'broker answers once it ends. Try again shortly; "The full check only after an unclean close" in ' +
          "docs/store.md says more."
      )
    }))

  it.live("a mark left by a broker that is gone is ignored: the broker is reported as not answering, as before", () =>
    Effect.gen(function*() {
      const dir = yield* agentDir()
      fs.mkdirSync(dir.intercomDir, { recursive: true, mode: 0o700 })
      yield* holdLifetimeLock(dir.intercomDir)
      const gone = yield* spawnNode(["-e", "0"])
      yield* gone.waitExit()
      fs.writeFileSync(checkingMarkOf(dir.intercomDir), String(gone.pid))
      assert.isUndefined(yield* checkingBroker(dir.intercomDir, 60_000))
      const error = yield* Effect.flip(ensureBroker({ ...dir, launch: { _tag: "Default" }, waitMs: 200, checkWaitMs: 30_000 }))
      assert.strictEqual(error._tag, "BrokerNotAnswering")
    }))
})

describe("a leftover broker.checking", () => {
  it.live("half an hour old, naming a live process (a pid given to another process since), is ignored", () =>
    Effect.gen(function*() {
      const dir = yield* agentDir()
      fs.mkdirSync(dir.intercomDir, { recursive: true, mode: 0o700 })
      yield* holdLifetimeLock(dir.intercomDir)
      const mark = checkingMarkOf(dir.intercomDir)
      fs.writeFileSync(mark, String(process.pid))
      assert.strictEqual(yield* checkingBroker(dir.intercomDir, 60_000), process.pid, "a young mark counts")
      const longAgo = new Date(fs.statSync(mark).mtimeMs - 31 * 60_000)
      fs.utimesSync(mark, longAgo, longAgo)
      assert.isUndefined(yield* checkingBroker(dir.intercomDir, 60_000))
      const error = yield* Effect.flip(ensureBroker({ ...dir, launch: { _tag: "Default" }, waitMs: 200, checkWaitMs: 30_000 }))
      assert.strictEqual(error._tag, "BrokerNotAnswering")
    }))
})

describe("a spawn that is interrupted", () => {
  it.live("lets the client process exit while the broker it launched still runs", () =>
    Effect.gen(function*() {
      const dir = yield* agentDir()
      const slowPid = () => readPidFile(path.join(dir.agentDir, "slow.pid"))
      // The launched stand-in never ends by itself: stopped whatever the test's outcome.
      yield* Effect.addFinalizer(() => Effect.sync(() => {
        const pid = slowPid()
        if (pid !== undefined && isAlive(pid)) process.kill(pid)
      }))
      const client = yield* spawnNode([INTERRUPTED_SPAWN, dir.agentDir])
      // Before the fix the process lived as long as the launched broker.
      const outcome = yield* client.waitExit()
      const slow = slowPid()
      const stillRunning = slow !== undefined && isAlive(slow)
      assert.deepStrictEqual(outcome, { code: 0, signal: null })
      assert.strictEqual(client.stdout(), "interrupted\n")
      assert.isTrue(stillRunning, "the launched broker outlived the client, detached")
    }))
})

describe("files a spawn writes are private whatever was there before", () => {
  it.live("a leftover 0644 broker.pid and broker.log end up 0600", () =>
    Effect.gen(function*() {
      const dir = yield* agentDir()
      fs.mkdirSync(dir.intercomDir, { recursive: true, mode: 0o700 })
      for (const file of [dir.pidFile, dir.logFile]) {
        fs.writeFileSync(file, "999999999")
        fs.chmodSync(file, 0o644)
      }
      const { client } = yield* makeClient(dir.clientOptions("modes-0001", "modes"))
      yield* client.list
      const mode = (file: string) => fs.statSync(file).mode & 0o777
      assert.strictEqual(mode(dir.logFile), 0o600, "broker.log")
      assert.strictEqual(mode(dir.pidFile), 0o600, "broker.pid")
      assert.notStrictEqual(readPidFile(dir.pidFile), 999999999)
    }))
})

describe("another user's agent dir (chown: root only)", () => {
  const isRoot = process.getuid?.() === 0
  const OTHER_UID = 4242

  /** ensureBroker against a fake broker that answers health, its dir or socket given to another uid. */
  const dialForeign = (give: (fake: { readonly intercomDir: string; readonly socketPath: string }) => void) =>
    Effect.gen(function*() {
      const fake = yield* fakeBroker()
      give(fake)
      const error = yield* Effect.flip(ensureBroker({
        agentDir: fake.root,
        intercomDir: fake.intercomDir,
        socketPath: fake.socketPath,
        launch: { _tag: "Default" }
      }))
      assert.strictEqual(fake.connections(), 0, "never dialled")
      return { error, fake }
    })

  it.live.skipIf(!isRoot)("an intercom dir owned by another user is refused before anything dials or writes there", () =>
    Effect.gen(function*() {
      const { error, fake } = yield* dialForeign((fake) => fs.chownSync(fake.intercomDir, OTHER_UID, OTHER_UID))
      assert.strictEqual(
        error.message,
        `Broker failed to start: ${fake.intercomDir} is owned by uid ${OTHER_UID}, not by this user (uid 0); root is ` +
          "refused too, since that user controls its config.json (whose brokerCommand a spawning client runs): run the " +
          "command as that user: not dialling a socket another user controls. Use an agent dir of your own (--dir, ATOMIC_CODING_AGENT_DIR or PI_CODING_AGENT_DIR)."
      )
      assert.isFalse(fs.existsSync(path.join(fake.intercomDir, "broker.spawn.lock")))
    }))

  it.live.skipIf(!isRoot)("a socket file owned by another user is refused, in a dir of this user's", () =>
    Effect.gen(function*() {
      const { error, fake } = yield* dialForeign((fake) => fs.lchownSync(fake.socketPath, OTHER_UID, OTHER_UID))
      assert.include(error.message, `${fake.socketPath} is owned by uid ${OTHER_UID}, not by this user (uid 0)`)
    }))
})
