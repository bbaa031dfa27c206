/** P81, P91, P92, P94, P95: files, modes, startup conflicts, idle exit, shutdown. */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { type BrokerOptions, runBroker } from "../../src/broker/index.ts"
import { holdLifetimeLock } from "../../src/config/LifetimeLock.ts"
import { probeHealth } from "../../src/transport/index.ts"
import { brokerPaths, list, register, tempDir, withBroker } from "../support/broker.ts"
import { storeCorruptReplayBlock } from "../support/corruptDatabase.ts"
import { staleSocketAt } from "../support/staleSocket.ts"
import { advanceTo, exitsAt, type MemoryBrokerOptions, nextStepAt, now, withMemoryBroker } from "../support/memory.ts"
import { connect, type WireClient } from "../support/wire.ts"
import { liveStranger } from "../support/process.ts"

const mode = (file: string) => fs.statSync(file).mode & 0o777

/** How `runBroker` fails with `options`, which are all valid: a `BrokerStartupError`. */
const startupError = (options: BrokerOptions) =>
  Effect.flip(runBroker(options).pipe(Effect.catchTag("BrokerOptionError", Effect.die)))

describe("P92 idle exit (in memory, on simulated time)", () => {
  /** The broker core's idle exit, watched from a fiber of the test. */
  const watchIdleExit = (options: MemoryBrokerOptions) =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker(options)
      const exit = yield* Effect.forkChild(broker.broker.idleExit, { startImmediately: true })
      return { broker, exited: () => exit.pollUnsafe() !== undefined }
    })

  /**
   * `late` registers in the last step before the broker would exit at
   * `deadline`: the broker stays, an hour on; once `late` leaves, it exits
   * `idle` later.
   */
  const holdsOffUntilItLeaves = (exited: () => boolean, late: WireClient, deadline: number, idle: number) =>
    Effect.gen(function*() {
      yield* nextStepAt(deadline - 1)
      yield* register(late)
      yield* advanceTo((yield* now) + 3_600_000)
      assert.isFalse(exited(), "exited although a session had registered within the delay")
      yield* late.destroy
      yield* exitsAt(exited, (yield* now) + idle)
    })

  it.effect("completes exactly idleExit after the last session left, not before; a live session holds it off", () =>
    Effect.gen(function*() {
      const idle = 2_000
      const { broker, exited } = yield* watchIdleExit({ idleExit: idle })
      const a = yield* broker.session()
      const b = yield* broker.session()
      yield* a.client.destroy
      yield* advanceTo((yield* now) + 3_600_000)
      assert.isFalse(exited(), "exited while a session was still live")

      yield* b.client.send({ type: "unregister" })
      const lastLeftAt = yield* now
      yield* exitsAt(exited, lastLeftAt + idle)
    }))

  it.effect("the default delay is 5 s", () =>
    Effect.gen(function*() {
      const { broker, exited } = yield* watchIdleExit({})
      const a = yield* broker.session()
      yield* a.client.destroy
      const leftAt = yield* now
      yield* exitsAt(exited, leftAt + 5_000)
    }))

  it.effect("a registration within the delay cancels it; the delay starts again at the next last leave", () =>
    Effect.gen(function*() {
      const idle = 2_000
      const { broker, exited } = yield* watchIdleExit({ idleExit: idle, registrationTimeout: "1 hour" })
      const a = yield* broker.session()
      const late = yield* broker.connect("late")
      yield* a.client.destroy
      yield* holdsOffUntilItLeaves(exited, late, (yield* now) + idle, idle)
    }))

  it.effect("a broker that never saw a session exits idleExit after startup: health probes and unregistered connections do not count", () =>
    Effect.gen(function*() {
      const idle = 2_000
      const startedAt = yield* now
      const { broker, exited } = yield* watchIdleExit({ idleExit: idle, registrationTimeout: "1 hour" })
      const prober = yield* broker.connect("prober")
      yield* prober.roundTrip
      yield* prober.destroy
      yield* broker.connect("silent")
      yield* exitsAt(exited, startedAt + idle)
    }))

  it.effect("a session that comes within the delay after startup holds the exit off until it leaves", () =>
    Effect.gen(function*() {
      const idle = 2_000
      const startedAt = yield* now
      const { broker, exited } = yield* watchIdleExit({ idleExit: idle, registrationTimeout: "1 hour" })
      const late = yield* broker.connect("late")
      yield* holdsOffUntilItLeaves(exited, late, startedAt + idle, idle)
    }))

  it.effect("idleExit: null never exits, even hours after startup or after the last session left", () =>
    Effect.gen(function*() {
      const { broker, exited } = yield* watchIdleExit({ idleExit: null })
      yield* advanceTo((yield* now) + 24 * 3_600_000)
      assert.isFalse(exited(), "exited although no session ever came")
      const a = yield* broker.session()
      yield* a.client.send({ type: "unregister" })
      const b = yield* broker.session()
      yield* b.client.destroy
      yield* advanceTo((yield* now) + 24 * 3_600_000)
      assert.isFalse(exited())
      assert.strictEqual(yield* broker.broker.sessionCount, 0)
    }))
})

describe("P81/P91 files and modes", () => {
  it.live("the directory is (re)chmodded 0700, the socket is 0600, broker.pid holds our pid (0600, no newline)", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const { intercomDir, socketPath, pidFile } = brokerPaths(root)
      fs.mkdirSync(intercomDir, { mode: 0o755 })
      fs.chmodSync(intercomDir, 0o755)
      const handle = yield* runBroker({ intercomDir, socketPath })
      assert.strictEqual(mode(intercomDir), 0o700)
      assert.isTrue(fs.statSync(socketPath).isSocket())
      assert.strictEqual(mode(socketPath), 0o600)
      assert.strictEqual(fs.readFileSync(pidFile, "utf8"), String(process.pid))
      assert.strictEqual(mode(pidFile), 0o600)
      assert.strictEqual(handle.pid, process.pid)
      assert.strictEqual(handle.socketPath, socketPath)
    }))

  it.live("a missing directory is created 0700; writePidFile: false writes no pid file", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const { intercomDir, socketPath, pidFile } = brokerPaths(path.join(root, "deep", "er"))
      yield* runBroker({ intercomDir, socketPath, writePidFile: false })
      assert.strictEqual(mode(intercomDir), 0o700)
      assert.isFalse(fs.existsSync(pidFile))
      assert.isTrue(yield* probeHealth(socketPath))
    }))

  it.live("a database holding a row that does not decode fails startup naming the file once, the row, and what to do", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const { intercomDir, socketPath } = brokerPaths(root)
      fs.mkdirSync(intercomDir, { recursive: true, mode: 0o700 })
      const file = path.join(intercomDir, "intercom.db")
      yield* storeCorruptReplayBlock(file)
      const error = yield* startupError({ intercomDir, socketPath, writePidFile: false })
      assert.strictEqual(error.kind, "StoreUnreadable")
      assert.strictEqual(error.message.split(file).length - 1, 1, `the path once in: ${error.message}`)
      assert.include(error.message, "replay block \"1\" does not decode")
      assert.include(error.message, "move the file aside")
      assert.include(error.message, "--durability memory")
      assert.isFalse(fs.existsSync(socketPath), "it never listened")
    }))

  it.live("a broker that checks its database in full names itself in broker.checking while it checks, then removes it", () =>
    Effect.gen(function*() {
      // A database its broker did not close cleanly: a copy of the file taken while a broker had it open.
      const crashed = brokerPaths(yield* tempDir())
      yield* Effect.scoped(Effect.gen(function*() {
        const first = brokerPaths(yield* tempDir())
        yield* runBroker({ intercomDir: first.intercomDir, socketPath: first.socketPath, writePidFile: false })
        fs.mkdirSync(crashed.intercomDir, { mode: 0o700 })
        fs.copyFileSync(path.join(first.intercomDir, "intercom.db"), path.join(crashed.intercomDir, "intercom.db"))
      }))
      // The check holds the event loop, so the mark is seen through the directory's change events, delivered
      // in order: once the sentinel written after startup has been reported, every earlier change has been.
      const changed: Array<string> = []
      const sentinelSeen = yield* Deferred.make<void>()
      yield* Effect.acquireRelease(
        Effect.sync(() =>
          fs.watch(crashed.intercomDir, (_event, name) => {
            if (name === "sentinel") Deferred.doneUnsafe(sentinelSeen, Exit.void)
            else if (name !== null) changed.push(name)
          })
        ),
        (watcher) => Effect.sync(() => watcher.close())
      )
      yield* runBroker({ intercomDir: crashed.intercomDir, socketPath: crashed.socketPath, writePidFile: false })
      fs.writeFileSync(path.join(crashed.intercomDir, "sentinel"), "")
      yield* Deferred.await(sentinelSeen)
      assert.include(changed, "broker.checking", "the mark was written during the full check")
      assert.isFalse(fs.existsSync(path.join(crashed.intercomDir, "broker.checking")), "and removed after it")
      assert.isTrue(yield* probeHealth(crashed.socketPath))
    }))

  it.live("a broker.pid that cannot be written fails startup naming the directory and the file, once each", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const { intercomDir, socketPath, pidFile } = brokerPaths(root)
      fs.mkdirSync(pidFile, { recursive: true }) // a directory in the way
      const error = yield* Effect.scoped(startupError({ intercomDir, socketPath }))
      assert.strictEqual(error.kind, "DirectoryUnusable")
      assert.isTrue(
        error.message.startsWith(`Cannot use the intercom directory ${intercomDir}: broker.pid cannot be written (EISDIR`),
        error.message
      )
    }))

  it.live("a file where the intercom dir must be fails startup with NotADirectory, saying to move it", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const file = path.join(root, "a-file")
      fs.writeFileSync(file, "")
      const error = yield* startupError({ intercomDir: path.join(file, "intercom"), socketPath: path.join(root, "s.sock") })
      assert.strictEqual(error.kind, "NotADirectory")
      assert.include(error.message, `${file} is not a directory. Move that file out of the way, or pass another agent dir with --dir.`)
      assert.notInclude(error.message, "writable")
    }))
})

describe("P95 shutdown", () => {
  it.live("closing the Scope disconnects sessions and removes the socket and pid files", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const { intercomDir, socketPath, pidFile } = brokerPaths(root)
      const scope = yield* Scope.make()
      yield* runBroker({ intercomDir, socketPath }).pipe(Scope.provide(scope))
      const client = yield* connect(socketPath, "session")
      yield* client.send({ type: "register", sessionId: "s", session: { cwd: "/", model: "m", pid: 1, startedAt: 1, lastActivity: 1 } })
      yield* client.next("registered")
      assert.isTrue(fs.existsSync(socketPath))
      assert.isTrue(fs.existsSync(pidFile))
      yield* Scope.close(scope, Exit.void)
      yield* client.waitClosed()
      assert.isFalse(fs.existsSync(socketPath), "socket file left behind")
      assert.isFalse(fs.existsSync(pidFile), "pid file left behind")
      assert.isFalse(yield* probeHealth(socketPath, "300 millis"))
    }))
})

describe("P91/P94 startup conflicts", () => {
  it.live("a second broker on the same socket fails with AlreadyRunning and leaves the first one serving", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const session = yield* broker.session({ sessionId: "first" })
      const exit = yield* Effect.exit(Effect.scoped(runBroker({ intercomDir: broker.intercomDir, socketPath: broker.socketPath })))
      assert.isTrue(Exit.isFailure(exit))
      const error = yield* Effect.scoped(startupError({ intercomDir: broker.intercomDir, socketPath: broker.socketPath }))
      assert.strictEqual(error.kind, "AlreadyRunning")
      assert.strictEqual(error.path, broker.socketPath)
      // broker.pid names this process, which the kernel lists as the lock's holder: the pid is verified.
      assert.include(error.message, `already running (pid ${process.pid}) on ${broker.socketPath}`)
      assert.isTrue(fs.existsSync(broker.socketPath))
      assert.isTrue(yield* probeHealth(broker.socketPath))
      assert.isFalse(session.client.isClosed())
      assert.deepStrictEqual((yield* list(session.client)).map((s) => s.id), ["first"])
      assert.strictEqual(fs.readFileSync(path.join(broker.intercomDir, "broker.pid"), "utf8"), String(process.pid))
    }))

  it.live("a stale socket file with nothing listening is replaced", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const { intercomDir, socketPath } = brokerPaths(root)
      fs.mkdirSync(intercomDir, { mode: 0o700 })
      yield* staleSocketAt(socketPath)
      assert.isTrue(fs.statSync(socketPath).isSocket())
      assert.isFalse(yield* probeHealth(socketPath, "300 millis"))
      yield* runBroker({ intercomDir, socketPath })
      assert.isTrue(yield* probeHealth(socketPath))
      assert.strictEqual(mode(socketPath), 0o600)
    }))

  it.live("a regular file or a directory at the socket path is left alone, and startup fails saying so, naming the path once", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const { intercomDir, socketPath } = brokerPaths(root)
      fs.mkdirSync(intercomDir, { mode: 0o700 })
      const notASocket = `Cannot listen on ${socketPath}: NOT_A_SOCKET, something that is not a socket is there, and was left alone: move it away.`
      fs.writeFileSync(socketPath, "someone's file")
      const file = yield* Effect.scoped(startupError({ intercomDir, socketPath, writePidFile: false }))
      assert.strictEqual(file.kind, "ListenFailed")
      assert.strictEqual(file.message, notASocket)
      assert.strictEqual(fs.readFileSync(socketPath, "utf8"), "someone's file")
      fs.rmSync(socketPath)
      fs.mkdirSync(socketPath)
      const dir = yield* Effect.scoped(startupError({ intercomDir, socketPath, writePidFile: false }))
      assert.strictEqual(dir.message, notASocket)
      assert.isTrue(fs.statSync(socketPath).isDirectory())
    }))

  it.live("a broker that holds the lock but has not written broker.pid yet: an older pid file's live pid is not named as its", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const { intercomDir, socketPath, pidFile } = brokerPaths(root)
      // An old broker's pid, now another process's (here a sleep): alive, but not the lock's holder.
      const child = yield* liveStranger
      fs.mkdirSync(intercomDir, { mode: 0o700 })
      fs.writeFileSync(pidFile, String(child.pid), { mode: 0o600 })
      // The holder: the lock taken, nothing listening and no pid written yet.
      yield* holdLifetimeLock(intercomDir)
      const error = yield* Effect.scoped(startupError({ intercomDir, socketPath }))
      assert.strictEqual(error.kind, "AlreadyRunning")
      assert.notInclude(error.message, `pid ${child.pid}`)
      assert.strictEqual(
        error.message,
        `An intercom broker is already running (it holds ${intercomDir}/broker.lock; its pid is not known yet) on ` +
          `${socketPath}. Use it, or stop it with \`intercom broker stop\`.`
      )
      assert.strictEqual(fs.readFileSync(pidFile, "utf8"), String(child.pid), "the pid file is left alone")
    }))

  it.live("a pid file naming a live process that is not a broker does not block startup", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const { intercomDir, socketPath, pidFile } = brokerPaths(root)
      const child = yield* liveStranger
      const childPid = child.pid
      assert.isNumber(childPid)
      fs.mkdirSync(intercomDir, { mode: 0o700 })
      fs.writeFileSync(pidFile, String(childPid), { mode: 0o600 })
      yield* runBroker({ intercomDir, socketPath })
      assert.isTrue(yield* probeHealth(socketPath))
      assert.strictEqual(fs.readFileSync(pidFile, "utf8"), String(process.pid))
    }))
})
