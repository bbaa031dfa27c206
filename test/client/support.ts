/**
 * Helpers for `IntercomClient` tests: building a client in its own Scope,
 * subscribing to its streams before acting, polling, and — for the tests that
 * auto-spawn the real compiled broker — a private agent dir whose brokers are
 * always killed when the test's Scope closes, whatever happened; and fake
 * brokers (on a socket or in memory, one scripted ahead of `list`).
 *
 * Size note: ~710 lines, past the ~400 guide: the fake broker is most of it.
 */
import { Context, Data, Deferred, Duration, Effect, Exit, Fiber, Layer, Queue, Scope, Stream } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { IntercomClient, type IntercomClientService } from "../../src/client/IntercomClient.ts"
import type { IntercomClientOptions } from "../../src/client/options.ts"
import { brokerEntryPoint, BUNDLED_CLI, UNBUNDLED_CLI } from "../../src/config/install.ts"
import { isFrameDecodeError, parseFrameText } from "../../src/protocol/decode.ts"
import { frameText } from "../../src/protocol/framing.ts"
import type { SessionInfo, SessionRegistration } from "../../src/protocol/frames.ts"
import { type Dialer, dialUnixSocket } from "../../src/client/Dialer.ts"
import { IntercomNotConnected } from "../../src/client/errors.ts"
import { type Connection, ConnectionClosed } from "../../src/transport/Connection.ts"
import { makeInMemoryNetwork } from "../../src/transport/InMemoryNetwork.ts"
import { type ListenError, serveUnix } from "../../src/transport/UnixSocket.ts"
import { tempDir, type TestBroker } from "../support/broker.ts"
import { built } from "../support/built.ts"
import { closeOnSimulatedTime } from "../support/memory.ts"
import { type Child, type ChildFailed, type SpawnOptions, spawnNode as spawnNodeChild, stopPid } from "../support/process.ts"

export { childEnv, isAlive, readPidFile, stopPid } from "../support/process.ts"

/** A SessionRegistration (P11) with an optional name and status. */
export const registrationOf = (name?: string, status?: string): SessionRegistration => {
  const now = Date.now()
  return {
    cwd: "/tmp/project",
    model: "test-model",
    pid: process.pid,
    startedAt: now,
    lastActivity: now,
    ...(name === undefined ? {} : { name }),
    ...(status === undefined ? {} : { status })
  }
}

/** Options for a client of an in-process test broker (never spawns). */
export const brokerClientOptions = (
  broker: TestBroker,
  sessionId: string,
  name?: string,
  extra: Partial<IntercomClientOptions> = {}
): IntercomClientOptions => ({
  agentDir: broker.root,
  intercomDir: broker.intercomDir,
  socketPath: broker.socketPath,
  sessionId,
  registration: registrationOf(name),
  launch: false,
  ...extra
})

export interface TestClient {
  readonly client: IntercomClientService
  /** Closes the client's layer Scope (what a program's shutdown does). */
  readonly close: Effect.Effect<void>
}

/**
 * Builds `IntercomClient.layer(options)` in a child of the current Scope. For
 * the in-memory world under TestClock use `makeMemoryClient`: a client's close
 * may wait on simulated time.
 */
export const makeClient = (options: IntercomClientOptions): Effect.Effect<TestClient, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Scope.fork(yield* Effect.scope)
    // Options a client cannot use are a defect of the test (a test of that check makes its client itself).
    const context = yield* Layer.buildWithScope(IntercomClient.layer(options), scope).pipe(Effect.orDie)
    return { client: Context.get(context, IntercomClient), close: Scope.close(scope, Exit.void) }
  })

/**
 * `makeClient` for the in-memory world under TestClock: its close (explicit,
 * or when the test's Scope closes) lets simulated time pass until it is done.
 */
export const makeMemoryClient = (
  options: IntercomClientOptions
): Effect.Effect<TestClient & { readonly scope: Scope.Closeable }, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    yield* Effect.addFinalizer(() => closeOnSimulatedTime(scope))
    // Options a client cannot use are a defect of the test (a test of that check makes its client itself).
    const context = yield* Layer.buildWithScope(IntercomClient.layer(options), scope).pipe(Effect.orDie)
    return { client: Context.get(context, IntercomClient), close: closeOnSimulatedTime(scope), scope }
  })

export class Timeout extends Data.TaggedError("Timeout")<{ readonly what: string }> {
  override get message(): string {
    return `timed out waiting for ${this.what}`
  }
}

/**
 * A running subscription. The client's streams subscribe to their PubSub only
 * when they start running, so the stream is run in a fiber started at once:
 * when this returns, the subscription exists and nothing published afterwards
 * is missed.
 */
export interface Subscription<A> {
  /** The next element matching `predicate`, skipping others; fails after `timeout`. */
  readonly next: (predicate?: (a: A) => boolean, timeout?: Duration.Input) => Effect.Effect<A, Timeout>
  /** Everything received so far (matched or skipped). */
  readonly seen: () => ReadonlyArray<A>
}

export const subscribe = <A>(stream: Stream.Stream<A>, label: string): Effect.Effect<Subscription<A>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const queue = yield* Queue.unbounded<A>()
    const seen: Array<A> = []
    yield* Effect.forkScoped(
      Stream.runForEach(stream, (a) => Effect.andThen(Effect.sync(() => seen.push(a)), Queue.offer(queue, a))),
      { startImmediately: true }
    )
    const next = (predicate: (a: A) => boolean = () => true, timeout: Duration.Input = "3 seconds") =>
      Effect.gen(function*() {
        while (true) {
          const a = yield* Queue.take(queue)
          if (predicate(a)) return a
        }
      }).pipe(Effect.timeoutOrElse({ duration: timeout, orElse: () => Effect.fail(new Timeout({ what: label })) }))
    return { next, seen: () => seen }
  })

// ---------------------------------------------------------------------------
// Real broker processes (auto-spawn tests)
// ---------------------------------------------------------------------------

/**
 * Every live process whose command line is a broker for an agent dir that
 * `matches` (`… dist/bin/intercom.mjs broker --dir <agentDir>`, or the
 * unbundled `dist/cli/main.js`: see `brokerEntryPoint`), from /proc. Zombies
 * (exited, not yet reaped) do not count.
 */
export const brokerProcessesWhere = (matches: (arg: string) => boolean): ReadonlyArray<number> => {
  const found: Array<number> = []
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const argv = fs.readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0")
      if (!argv.some((arg) => arg.endsWith(BUNDLED_CLI) || arg.endsWith(UNBUNDLED_CLI))) continue
      if (!argv.includes("broker") || !argv.some(matches)) continue
      const state = /^State:\s+(\S)/m.exec(fs.readFileSync(`/proc/${entry}/status`, "utf8"))?.[1]
      if (state !== "Z") found.push(Number(entry))
    } catch {
      // the process went away while we looked
    }
  }
  return found
}

/** Every live broker process for exactly `agentDir`. */
export const brokerProcesses = (agentDir: string): ReadonlyArray<number> =>
  brokerProcessesWhere((arg) => arg === agentDir)

export interface AgentDir {
  readonly agentDir: string
  readonly intercomDir: string
  readonly socketPath: string
  readonly pidFile: string
  readonly lockFile: string
  readonly logFile: string
  /** Options for a client that auto-spawns the compiled broker for this dir. */
  readonly clientOptions: (
    sessionId: string,
    name?: string,
    extra?: Partial<IntercomClientOptions>
  ) => IntercomClientOptions
}

/**
 * A fresh, short agent dir under /tmp (dies at once, naming `npm run build`,
 * when the broker its clients spawn was not built). When the Scope closes, every broker
 * process of this dir is stopped (SIGTERM, then SIGKILL) and the dir removed.
 */
export const agentDir = (): Effect.Effect<AgentDir, never, Scope.Scope> =>
  Effect.gen(function*() {
    // Its clients auto-spawn the compiled broker: without a build, fail now and say so.
    built(brokerEntryPoint())
    const root = yield* tempDir("eic-")
    const intercomDir = path.join(root, "intercom")
    // Registered after tempDir, so it runs before the dir is removed.
    yield* Effect.addFinalizer(() =>
      Effect.forEach(brokerProcesses(root), (pid) => stopPid(pid), { concurrency: "unbounded", discard: true })
    )
    return {
      agentDir: root,
      intercomDir,
      socketPath: path.join(intercomDir, "broker.sock"),
      pidFile: path.join(intercomDir, "broker.pid"),
      lockFile: path.join(intercomDir, "broker.spawn.lock"),
      logFile: path.join(intercomDir, "broker.log"),
      clientOptions: (sessionId, name, extra = {}) => ({
        agentDir: root,
        intercomDir,
        socketPath: path.join(intercomDir, "broker.sock"),
        sessionId,
        registration: registrationOf(name),
        launch: { _tag: "Default" },
        ...extra
      })
    }
  })

// ---------------------------------------------------------------------------
// A scriptable fake broker (for what a real broker never does)
// ---------------------------------------------------------------------------

export interface FakeFrame {
  /** Which accepted connection it came on, from 1. */
  readonly connection: number
  readonly frame: { readonly type: string; readonly [key: string]: unknown }
}

export interface FakeBrokerOptions {
  /**
   * `features` of `registered`; `undefined` omits the field, as an older
   * pi-intercom broker does. Default: omitted.
   */
  readonly features?: ReadonlyArray<string> | undefined
  /**
   * `features` of `registered` on every connection after the first (a broker
   * restarted as another version). Default: `features`.
   */
  readonly laterFeatures?: ReadonlyArray<string> | undefined
  /** The `stateEpoch` of `registered` on each connection, by number (`state-epoch-v1`). Default: omitted. */
  readonly stateEpochOf?: (connection: number) => string
  /** Answer `list`. Default true. */
  readonly answerList?: boolean
  /** After `registered`, stop reading and answering (a hung broker). Default false. */
  readonly hangAfterRegister?: boolean
  /**
   * Answer a `send` only when the connection's next frame comes, just before
   * answering that frame: every answer still goes out in the order of the
   * frames it answers, as a base broker's do. Default false.
   */
  readonly holdSendAnswers?: boolean
  /**
   * Whether a `send`'s `delivered` carries its delivery details
   * (`delivery: "socket_delivered"`), as P41 has every broker write it,
   * rather than bare, as only a cancel's answer is (P71) — a client fills in
   * the defaults of a missing field (P41), so most tests need no more.
   * Default: bare.
   */
  readonly detailedSendAnswers?: boolean
  /**
   * Whether a `send` of this message id is read and never answered (a
   * broker slow to route it). Default: every send is answered.
   */
  readonly leaveSendUnanswered?: (messageId: string) => boolean
  /**
   * Answer `cancel_message` (P71) with a bare `delivered` (cancelled) or a
   * bare `delivery_failed` (`refused`), or end the connection unanswered
   * (`end`). Default: no answer.
   */
  readonly cancelAnswer?: "cancelled" | "refused" | "end"
  /**
   * Frames written right after a cancel's answer (`cancelAnswer`), in the
   * same transport write, given the cancelled message's id. Default: none.
   */
  readonly afterCancel?: (messageId: string) => ReadonlyArray<{ readonly type: string; readonly [key: string]: unknown }>
  /**
   * Frames written right ahead of a cancel's answer (`cancelAnswer`), in the
   * same transport write, given the cancelled message's id: where a broker
   * writes the question it asks again when a reply is withdrawn. Default: none.
   */
  readonly beforeCancel?: (messageId: string) => ReadonlyArray<{ readonly type: string; readonly [key: string]: unknown }>
  /**
   * After `registered` on its first connection, write `taken_over` naming
   * this pid (`takeover-v1`) and end that connection, as a broker does when
   * another process registers the same id. Default: never.
   */
  readonly takeOverFirst?: number
  /**
   * Leave `health` unanswered on the first this many connections, as a broker
   * that has not started answering yet (one checking its database). Default 0.
   */
  readonly silentHealthConnections?: number
  /**
   * On reading `unregister`, write this frame (a `message`, say: one the
   * client reads while it leaves). Default: nothing.
   */
  readonly onUnregister?: { readonly type: string; readonly [key: string]: unknown }
  /**
   * Frames written right after a `send`'s (or `supervisor_send`'s) answer, in the same transport
   * write (so the client reads them in one batch), given the sent message's
   * id. Default: none.
   */
  readonly afterSend?: (messageId: string) => ReadonlyArray<{ readonly type: string; readonly [key: string]: unknown }>
  /**
   * Frames written right before a `list`'s answer, in the same transport
   * write. Default: none.
   */
  readonly beforeList?: () => ReadonlyArray<{ readonly type: string; readonly [key: string]: unknown }>
  /**
   * Whether a `list` marked `settle: true` (`ask-expiry-v1`) on this
   * connection ends the connection instead of being answered. Default: never.
   */
  readonly dropOnSettle?: (connection: number) => boolean
  /**
   * Whether a `list` marked `settle: true` on this connection is read and
   * never answered, the connection kept open (a frozen broker). Default: never.
   */
  readonly ignoreSettle?: (connection: number) => boolean
  /**
   * Whether, from a `list` marked `settle: true` on this connection on, the
   * fake answers nothing there, the connection kept open (a frozen broker:
   * the liveness probe goes unanswered too). Default: never.
   */
  readonly freezeOnSettle?: (connection: number) => boolean
  /**
   * Holds the answer to a `list` marked `settle: true` until this many
   * further `list`s (probes) on its connection were answered, then writes
   * it (a broker holding the settle behind a parked reply, then releasing
   * it). Default: answered at once.
   */
  readonly settleAnsweredAfterLists?: number
  /**
   * The refusal (`delivery_failed` with this code and reason) a `send` or `supervisor_send` of this message id gets
   * on this connection, in place of `delivered`. Default: none (delivered).
   */
  readonly refuseSend?: (connection: number, messageId: string) => { readonly code: string; readonly reason: string } | undefined
  /** Whether a `send` (of this message id) on this connection ends the connection unanswered. Default: never. */
  readonly dropOnSend?: (connection: number, messageId: unknown) => boolean
  /**
   * Frames written right after `registered`, in the same transport write,
   * given the connection's number: output a broker gives back at a rejoin.
   * Default: none.
   */
  readonly afterRegistered?: (connection: number) => ReadonlyArray<{ readonly type: string; readonly [key: string]: unknown }>
}

/** What a fake broker saw, and how to wait for it. */
export interface FakeBrokerState {
  /** Every frame received, in order. */
  readonly frames: ReadonlyArray<FakeFrame>
  /** Every frame the fake sent, with the connection it went to. */
  readonly sent: ReadonlyArray<FakeFrame>
  readonly ofType: (type: string) => ReadonlyArray<FakeFrame>
  /** Connections accepted so far. */
  readonly connections: () => number
  /** Connections that have ended (EOF or error), by number. */
  readonly ended: () => ReadonlyArray<number>
  /** Waits (on events, not by polling) until `check` holds; fails after `timeout`. */
  readonly until: (what: string, check: () => boolean, timeout?: Duration.Input) => Effect.Effect<void, Timeout>
}

export interface FakeBroker extends FakeBrokerState {
  readonly root: string
  readonly intercomDir: string
  readonly socketPath: string
}

/**
 * A base-protocol broker over any transport: answers `health`, `register`
 * (with the configured features), `list` with the sessions registered on it,
 * and `send` (a child's `supervisor_send` too) with a bare `{type:"delivered", messageId}`, the minimum P41
 * allows. It records every frame it receives.
 */
export const makeFakeBroker = (
  options: FakeBrokerOptions = {}
): { readonly state: FakeBrokerState; readonly accept: (connection: Connection) => Effect.Effect<void> } => {
  const frames: Array<FakeFrame> = []
  const sent: Array<FakeFrame> = []
  const ended: Array<number> = []
  const sessions = new Map<number, SessionInfo>()
  const waiters = new Set<() => boolean>()
  const changed = () => {
    for (const waiter of [...waiters]) if (waiter()) waiters.delete(waiter)
  }
  const state = { accepted: 0 }
  const accept = (connection: Connection) => {
    const id = ++state.accepted
    changed()
    return Effect.gen(function*() {
      const reply = (...batch: ReadonlyArray<{ readonly type: string; readonly [key: string]: unknown }>) =>
        Effect.andThen(
          Effect.sync(() => {
            for (const frame of batch) sent.push({ connection: id, frame })
          }),
          connection.writeAll(batch.map((frame) => JSON.stringify(frame)))
        )
      /** Send answers held back (`holdSendAnswers`) until the next frame. */
      const held: Array<{ readonly type: string; readonly [key: string]: unknown }> = []
      let frozen = false
      /** A settling answer held (`settleAnsweredAfterLists`), and the lists still to answer before it. */
      let heldSettle: { readonly answer: { readonly type: string; readonly [key: string]: unknown }; listsLeft: number } | undefined
      while (true) {
        const texts = yield* connection.read
        for (const text of texts) {
          const parsed = parseFrameText(text)
          if (isFrameDecodeError(parsed)) continue
          frames.push({ connection: id, frame: parsed })
          changed()
          if (frozen) continue
          if (parsed.type !== "send") {
            for (const answer of held.splice(0)) yield* reply(answer)
          }
          switch (parsed.type) {
            case "health":
              if (id <= (options.silentHealthConnections ?? 0)) break
              yield* reply({ type: "health_ok", requestId: parsed.requestId, protocol: "pi-intercom", version: 1 })
              break
            case "register": {
              const sessionId = typeof parsed.sessionId === "string" ? parsed.sessionId : `fake-${id}`
              const session = typeof parsed.session === "object" && parsed.session !== null ? parsed.session : {}
              sessions.set(id, { cwd: "/tmp", model: "m", pid: 1, startedAt: 0, lastActivity: 0, ...session, id: sessionId })
              const features = id > 1 && options.laterFeatures !== undefined ? options.laterFeatures : options.features
              yield* reply({
                type: "registered",
                sessionId,
                ...(features === undefined ? {} : { features }),
                ...(options.stateEpochOf === undefined ? {} : { stateEpoch: options.stateEpochOf(id) })
              }, ...(options.afterRegistered?.(id) ?? []))
              if (options.hangAfterRegister === true) return yield* Effect.never
              if (options.takeOverFirst !== undefined && id === 1) {
                yield* reply({ type: "taken_over", sessionId, pid: options.takeOverFirst })
                return yield* connection.end
              }
              break
            }
            case "unregister":
              sessions.delete(id)
              if (options.onUnregister !== undefined) yield* reply(options.onUnregister)
              break
            case "list":
              if (parsed.settle === true && options.dropOnSettle?.(id) === true) return yield* connection.end
              if (parsed.settle === true && options.ignoreSettle?.(id) === true) break
              if (parsed.settle === true && options.freezeOnSettle?.(id) === true) {
                frozen = true
                break
              }
              if (parsed.settle === true && options.settleAnsweredAfterLists !== undefined) {
                heldSettle = {
                  answer: { type: "sessions", requestId: parsed.requestId, sessions: [...sessions.values()] },
                  listsLeft: options.settleAnsweredAfterLists
                }
                break
              }
              if (options.answerList !== false) {
                yield* reply(
                  ...(options.beforeList?.() ?? []),
                  { type: "sessions", requestId: parsed.requestId, sessions: [...sessions.values()] }
                )
              }
              if (heldSettle !== undefined && --heldSettle.listsLeft <= 0) {
                const released = heldSettle.answer
                heldSettle = undefined
                yield* reply(released)
              }
              break
            case "send":
            case "supervisor_send": {
              const message = parsed.message
              const messageId = typeof message === "object" && message !== null && "id" in message ? message.id : "unknown"
              if (options.dropOnSend?.(id, messageId) === true) return yield* connection.end
              if (typeof messageId === "string" && options.leaveSendUnanswered?.(messageId) === true) break
              const refusal = typeof messageId === "string" ? options.refuseSend?.(id, messageId) : undefined
              const answer = refusal !== undefined
                ? { type: "delivery_failed", messageId, ...refusal }
                : options.detailedSendAnswers === true
                ? { type: "delivered", messageId, delivery: "socket_delivered" }
                : { type: "delivered", messageId }
              if (options.holdSendAnswers === true) held.push(answer)
              else {
                const after = typeof messageId === "string" ? options.afterSend?.(messageId) ?? [] : []
                yield* reply(answer, ...after)
              }
              break
            }
            case "cancel_message": {
              if (options.cancelAnswer === "end") return yield* connection.end
              const after = typeof parsed.messageId === "string" ? options.afterCancel?.(parsed.messageId) ?? [] : []
              const before = typeof parsed.messageId === "string" ? options.beforeCancel?.(parsed.messageId) ?? [] : []
              if (options.cancelAnswer === "cancelled") yield* reply(...before, { type: "delivered", messageId: parsed.messageId }, ...after)
              if (options.cancelAnswer === "refused") {
                yield* reply(...before, {
                  type: "delivery_failed",
                  messageId: parsed.messageId,
                  reason: "Message cannot be cancelled by this session"
                }, ...after)
              }
              break
            }
          }
        }
      }
    }).pipe(
      Effect.ensuring(Effect.sync(() => {
        sessions.delete(id)
        ended.push(id)
        changed()
      })),
      Effect.ignore
    )
  }
  const until = (what: string, check: () => boolean, timeout: Duration.Input = "5 seconds") =>
    Effect.callback<void>((resume) => {
      const attempt = () => {
        if (!check()) return false
        resume(Effect.void)
        return true
      }
      if (attempt()) return
      waiters.add(attempt)
      return Effect.sync(() => void waiters.delete(attempt))
    }).pipe(Effect.timeoutOrElse({ duration: timeout, orElse: () => Effect.fail(new Timeout({ what })) }))
  return {
    state: {
      frames,
      sent,
      ofType: (type) => frames.filter((f) => f.frame.type === type),
      connections: () => state.accepted,
      ended: () => ended,
      until
    },
    accept
  }
}

/** A fake broker on a real Unix socket (`serveUnix`), in a fresh agent dir. */
export const fakeBroker = (options: FakeBrokerOptions = {}): Effect.Effect<FakeBroker, ListenError, Scope.Scope> =>
  Effect.gen(function*() {
    const root = yield* tempDir("eif-")
    const intercomDir = path.join(root, "intercom")
    fs.mkdirSync(intercomDir, { mode: 0o700 })
    const socketPath = path.join(intercomDir, "broker.sock")
    const { accept, state } = makeFakeBroker(options)
    yield* serveUnix(socketPath, accept)
    return { ...state, root, intercomDir, socketPath }
  })

/** A fake broker on its own in-memory network, for tests under TestClock. */
export const memoryFakeBroker = (options: FakeBrokerOptions = {}): Effect.Effect<
  FakeBrokerState & { readonly address: string; readonly dial: Dialer },
  never,
  Scope.Scope
> =>
  Effect.gen(function*() {
    const network = yield* makeInMemoryNetwork()
    const address = "mem://fake-broker"
    const { accept, state } = makeFakeBroker(options)
    yield* network.listen(address, accept).pipe(Effect.orDie)
    return {
      ...state,
      address,
      dial: (target: string) =>
        network.dial(target).pipe(Effect.mapError((error) => new IntercomNotConnected({ reason: error.message })))
    }
  })

/**
 * `connection`, recording the frames of each transport write it makes
 * (`write`, and `writeAll` through it) in `writes` (a new array unless
 * given), oldest first.
 */
export const recordingWrites = (connection: Connection, writes: Array<ReadonlyArray<string>> = []) => {
  const recorded: Connection = {
    ...connection,
    read: connection.read,
    end: connection.end,
    destroy: connection.destroy,
    write: (frames) => {
      writes.push(frames.map(frameText))
      return connection.write(frames)
    },
    writeAll: (frames) => Effect.suspend(() => recorded.write(frames) ?? Effect.void)
  }
  return { connection: recorded, writes }
}

/**
 * A dialer whose next write of a frame of `type` (a `send`), once `stall()` armed it, is not taken until
 * `release`; `stalled` completes as that write begins. `cut` drops the socket that write stalled on (the
 * link dies with the write unfinished: its frames, and all queued behind it, never reach the peer).
 * `breakWrites` fails the stalled write, and refuses every later one, while the socket still reads (a
 * write that fails before the reader sees the link end). Real Unix sockets (`dialUnixSocket`).
 */
export const stallingDial = (type = "send") => {
  const release = Deferred.makeUnsafe<void>()
  const stalled = Deferred.makeUnsafe<void>()
  const broken = Deferred.makeUnsafe<void>()
  let stallNext = false
  let stalledOn: Connection | undefined
  const refused = new ConnectionClosed({ clean: false, cause: "the write side broke (test)" })
  const dial = (socketPath: string) =>
    Effect.map(dialUnixSocket(socketPath), (connection): Connection => ({
      id: connection.id,
      trustedLocal: connection.trustedLocal,
      read: connection.read,
      writeAll: connection.writeAll,
      write: (frames) => {
        if (stalledOn === connection && Deferred.isDoneUnsafe(broken)) return Effect.fail(refused)
        if (!stallNext || !frames.some((f) => frameText(f).startsWith(`{"type":"${type}"`))) return connection.write(frames)
        stallNext = false
        stalledOn = connection
        Deferred.doneUnsafe(stalled, Exit.void)
        return Effect.raceFirst(
          Effect.andThen(Deferred.await(release), connection.writeAll(frames)),
          Effect.andThen(Deferred.await(broken), Effect.fail(refused))
        )
      },
      unfinishedWrite: () => connection.unfinishedWrite(),
      readProgress: () => connection.readProgress(),
      readPending: () => connection.readPending(),
      end: connection.end,
      destroy: connection.destroy
    }))
  const cut = Effect.suspend(() => stalledOn?.destroy ?? Effect.void)
  const breakWrites = Effect.sync(() => Deferred.doneUnsafe(broken, Exit.void))
  return { breakWrites, cut, dial, release, stalled, stall: () => (stallNext = true) }
}

/** A frame a scripted fake broker writes: its `type` and the fields that frame carries. */
export type ScriptFrame = { readonly type: string; readonly [key: string]: unknown }

/**
 * Bob's client, connected in memory to a fake broker that writes the frames
 * it is told to right ahead of its next `list` answer, bob's `controls` and
 * `messages` subscribed before he connects. `listAfter(frames)` has the broker
 * write `frames`, then returns once bob read the `list` answer behind them (so
 * all of them were read by then).
 */
export const scriptedListClient = Effect.gen(function*() {
  let script: ReadonlyArray<ScriptFrame> = []
  const fake = yield* memoryFakeBroker({
    beforeList: () => {
      const frames = script
      script = []
      return frames
    }
  })
  const { client } = yield* makeMemoryClient(memoryClientOptions(fake, "bbbbbbbb-3333-4000-8000-00000000000b", "bob"))
  const controls = yield* subscribe(client.controls, "bob's controls")
  const messages = yield* subscribe(client.messages, "bob's messages")
  yield* client.connect
  const listAfter = (frames: ReadonlyArray<ScriptFrame>) =>
    Effect.suspend(() => {
      script = frames
      return Effect.asVoid(client.list)
    })
  return { client, controls, messages, listAfter }
})

/** Options for a client dialling an in-memory network (never spawns). */
export const memoryClientOptions = (
  target: { readonly address: string; readonly dial: Dialer },
  sessionId: string,
  name?: string,
  extra: Partial<IntercomClientOptions> = {}
): IntercomClientOptions => ({
  agentDir: "/mem",
  intercomDir: "/mem/intercom",
  socketPath: target.address,
  sessionId,
  registration: registrationOf(name),
  launch: false,
  dial: target.dial,
  ...extra
})

/** Client options for a fake broker (never spawns). */
export const fakeClientOptions = (
  fake: FakeBroker,
  sessionId: string,
  extra: Partial<IntercomClientOptions> = {}
): IntercomClientOptions => ({
  agentDir: fake.root,
  intercomDir: fake.intercomDir,
  socketPath: fake.socketPath,
  sessionId,
  registration: registrationOf("fake-client"),
  launch: false,
  ...extra
})


// ---------------------------------------------------------------------------
// Compatibility for test/testing/example.test.ts (owned by the simulation work)
/**
 * Runs `cancels` together and has their callers give up once the fake broker has read `written`
 * `cancel_message` frames in all (their own among them): each cancel is left detached with its frame
 * written, however long the writes took — no timeout is raced. Fails naming `what` if the frames never come.
 */
export const giveUpOnceWritten = (
  fake: FakeBrokerState,
  cancels: ReadonlyArray<Effect.Effect<unknown, unknown>>,
  written: number,
  what: string
): Effect.Effect<void, Timeout, Scope.Scope> =>
  Effect.gen(function*() {
    const callers = yield* Effect.forEach(cancels, (cancel) => Effect.forkScoped(Effect.exit(cancel)))
    yield* fake.until(what, () => fake.ofType("cancel_message").length >= written)
    yield* Fiber.interruptAll(callers)
  })

// ---------------------------------------------------------------------------

/**
 * `node ...args` through the process harness, with `waitExit` answering the
 * exit code (or the signal's name) as before. New tests use
 * `spawnNode` from test/support/process.ts directly.
 */
export const spawnNode = (
  args: ReadonlyArray<string>,
  options: SpawnOptions = {}
): Effect.Effect<
  Omit<Child, "waitExit"> & { readonly waitExit: (timeout?: Duration.Input) => Effect.Effect<number | string, ChildFailed> },
  never,
  Scope.Scope
> =>
  Effect.map(spawnNodeChild(args, options), (child) => ({
    ...child,
    waitExit: (timeout?: Duration.Input) =>
      Effect.map(child.waitExit(timeout), (outcome) => outcome.code ?? outcome.signal ?? "unknown")
  }))
