/**
 * Starting a real broker for a test, and the register / list / send helpers
 * that every broker test uses.
 */
import { Data, Effect, type Scope } from "effect"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import {
  type BrokerHandle,
  type BrokerOptions,
  type BrokerOptionError,
  type BrokerStartupError,
  runBroker
} from "../../src/broker/index.ts"
import type { BrokerFrame, Message, SessionInfo } from "../../src/protocol/index.ts"
import { connect, type ConnectOptions, type DialFailed, type FrameOf, type WireClient, type WireError } from "./wire.ts"

/** A fresh, short directory under /tmp (socket paths must stay under ~107 bytes); removed with the Scope. */
export const tempDir = (prefix = "ei-"): Effect.Effect<string, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join("/tmp", prefix))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )

export interface TestBroker {
  readonly handle: BrokerHandle
  readonly root: string
  readonly intercomDir: string
  readonly socketPath: string
  /** Opens a raw wire client to this broker. */
  readonly connect: (label?: string, options?: ConnectOptions) => Effect.Effect<WireClient, DialFailed, Scope.Scope>
  /** Connects and registers; fails if the broker does not answer `registered`. */
  readonly session: (options?: RegisterOptions) => Effect.Effect<Session, DialFailed | WireError, Scope.Scope>
}

export type TestBrokerOptions = Partial<Omit<BrokerOptions, "intercomDir" | "socketPath">>

/** Paths a broker would use under a root directory. */
export const brokerPaths = (root: string) => {
  const intercomDir = path.join(root, "intercom")
  return { intercomDir, socketPath: path.join(intercomDir, "broker.sock"), pidFile: path.join(intercomDir, "broker.pid") }
}

/** Starts `runBroker` in a fresh temp dir (or in `root`, which outlives it), inside the current Scope. */
export const withBroker = (
  options: TestBrokerOptions = {},
  at?: string
): Effect.Effect<TestBroker, BrokerStartupError | BrokerOptionError, Scope.Scope> =>
  Effect.gen(function*() {
    const root = at ?? (yield* tempDir())
    const { intercomDir, socketPath } = brokerPaths(root)
    const handle = yield* runBroker({ ...options, intercomDir, socketPath })
    const open = (label?: string, connectOptions?: ConnectOptions) => connect(socketPath, label, connectOptions)
    return {
      handle,
      root,
      intercomDir,
      socketPath,
      connect: open,
      session: (registerOptions: RegisterOptions = {}) =>
        Effect.gen(function*() {
          const client = yield* open(registerOptions.label ?? registerOptions.sessionId ?? registerOptions.name, {
            allowHalfOpen: registerOptions.allowHalfOpen ?? false
          })
          const registered = yield* register(client, registerOptions)
          return { client, id: registered.sessionId, registered }
        })
    }
  })

/** A broker with three sessions, "sender", "receiver" and "third" (the receipt and control tests). */
export const senderReceiverThird = Effect.gen(function*() {
  const broker = yield* withBroker()
  const sender = yield* broker.session({ sessionId: "sender" })
  const receiver = yield* broker.session({ sessionId: "receiver" })
  const third = yield* broker.session({ sessionId: "third" })
  return { broker, sender, receiver, third }
})

// ---------------------------------------------------------------------------
// Registration
// ---------------------------------------------------------------------------

export interface RegisterOptions {
  /** `undefined` → a fresh unique id; `null` → omit it (the broker assigns one). */
  readonly sessionId?: string | null
  readonly name?: string
  readonly scopeId?: string
  readonly cwd?: string
  readonly model?: string
  readonly status?: string
  /** Extra or overriding fields of `session` (SessionRegistration). */
  readonly session?: Readonly<Record<string, unknown>>
  /** Extra top-level fields of the `register` frame. */
  readonly frame?: Readonly<Record<string, unknown>>
  /** Label of the wire client in failure messages. */
  readonly label?: string
  /** See `ConnectOptions.allowHalfOpen` (for `TestBroker.session`). */
  readonly allowHalfOpen?: boolean
}

export interface Session {
  readonly client: WireClient
  readonly id: string
  readonly registered: FrameOf<"registered">
}

/** A valid SessionRegistration (P11). */
export const registration = (options: RegisterOptions = {}): Record<string, unknown> => {
  const now = Date.now()
  return {
    cwd: options.cwd ?? "/tmp",
    model: options.model ?? "test-model",
    pid: process.pid,
    startedAt: now,
    lastActivity: now,
    ...(options.name === undefined ? {} : { name: options.name }),
    ...(options.status === undefined ? {} : { status: options.status }),
    ...options.session
  }
}

/** A session id no other test uses. */
export const freshId = (prefix = "s"): string => `${prefix}-${randomUUID()}`

/** The `register` frame for these options. */
export const registerFrame = (options: RegisterOptions = {}): Record<string, unknown> => ({
  type: "register",
  session: registration(options),
  ...(options.sessionId === null ? {} : { sessionId: options.sessionId ?? freshId() }),
  ...(options.scopeId === undefined ? {} : { scopeId: options.scopeId }),
  ...options.frame
})

/** Registers on `client` and returns the `registered` frame. */
export const register = (
  client: WireClient,
  options: RegisterOptions = {}
): Effect.Effect<FrameOf<"registered">, WireError> =>
  Effect.andThen(client.send(registerFrame(options)), client.next("registered"))

// ---------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------

/** `list` → the matching `sessions` frame's sessions (P31). */
export const list = (client: WireClient): Effect.Effect<ReadonlyArray<SessionInfo>, WireError> => {
  const requestId = randomUUID()
  return client.send({ type: "list", requestId }).pipe(
    Effect.andThen(client.next("sessions", (frame) => frame.requestId === requestId)),
    Effect.map((frame) => frame.sessions)
  )
}

/** This session's SessionInfo as the broker lists it. */
export const infoOf = (client: WireClient, id: string): Effect.Effect<SessionInfo, WireError | MissingSession> =>
  Effect.flatMap(list(client), (sessions) => {
    const found = sessions.find((session) => session.id === id)
    return found === undefined ? Effect.fail(new MissingSession({ id })) : Effect.succeed(found)
  })

export class MissingSession extends Data.TaggedError("MissingSession")<{ readonly id: string }> {
  override get message(): string {
    return `session ${this.id} is not listed`
  }
}

/** A valid authored message (P40). */
export const message = (text: string, extra: Partial<Message> = {}): Message => ({
  id: randomUUID(),
  timestamp: Date.now(),
  content: { text },
  ...extra
})

export type Ack = FrameOf<"delivered" | "delivery_failed">

/**
 * Waits for the first unread `delivered`/`delivery_failed` answer for `messageId`.
 * A `cancel_message` is answered under the message's id too (a bare `delivered` when it took
 * effect): a test that cancels and then sends again under the same id must read the
 * cancel's answer first, or this returns it as the new send's.
 */
export const ackFor = (client: WireClient, messageId: string): Effect.Effect<Ack, WireError> =>
  client.next(["delivered", "delivery_failed"], (frame) => frame.messageId === messageId)

/** Sends `message` to `to` (plus extra send-frame fields) and returns the answer (see `ackFor` on a cancel's answer). */
export const send = (
  client: WireClient,
  to: string,
  msg: Message,
  extra: Readonly<Record<string, unknown>> = {}
): Effect.Effect<Ack, WireError> =>
  Effect.andThen(client.send({ type: "send", to, message: msg, ...extra }), ackFor(client, msg.id))

/** Waits for the `message` frame carrying `messageId`. */
export const messageFor = (client: WireClient, messageId: string) =>
  client.next("message", (frame) => frame.message.id === messageId)

/** Membership as a client sees it: the view a stream of membership frames builds. */
export const applyMembership = (view: Map<string, SessionInfo>, frame: FrameOf<FrameTypeMembership>): void => {
  switch (frame.type) {
    case "session_joined":
    case "presence_update":
      view.set(frame.session.id, frame.session)
      return
    case "session_left":
      view.delete(frame.sessionId)
      return
  }
}

/** The membership view a stream of frames builds (frames of other types are skipped). */
export const membershipView = (frames: ReadonlyArray<BrokerFrame>): Map<string, SessionInfo> => {
  const view = new Map<string, SessionInfo>()
  for (const frame of frames) {
    if (frame.type === "session_joined" || frame.type === "presence_update" || frame.type === "session_left") {
      applyMembership(view, frame)
    }
  }
  return view
}

export type FrameTypeMembership = "session_joined" | "presence_update" | "session_left"
export const membershipTypes: ReadonlyArray<FrameTypeMembership> = ["session_joined", "presence_update", "session_left"]
