/**
 * The watch's control socket: how a short-lived command acts *as* a running
 * `intercom watch` of the same name instead of registering a second session.
 *
 * `watch --name N` listens on a private Unix socket named after N (and the
 * scope); `intercom reply --name N …` (and every other client command run as
 * N) dials it first. If a watch answers, the command sends its action there
 * as one frame, and the watch runs it in *its* session — the one that was
 * asked, that holds the reply tracker, under the one stable id — and sends
 * the tool result back. If nothing answers, the command runs as a
 * short-lived session of its own.
 *
 * Frames are the broker's framing (4-byte length + UTF-8 JSON). The socket is
 * mode 0600 in a 0700 directory, so only the same user can use it, as with
 * the broker's socket (P81).
 *
 * The socket is also the lock that keeps two watches of one name from taking
 * each other's session over (P16): a second watch finds the first one
 * answering and refuses to start.
 */
import { Data, Duration, Effect, Option, Schema, SchemaIssue, type Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import type { ToolResult } from "../../session/IntercomSession.ts"
import { IntercomToolParams } from "../../session/toolParams.ts"
import type { Connection } from "../../transport/Connection.ts"
import { listenReplacingStale } from "../../transport/staleSocket.ts"
import { dialUnix, serveUnix } from "../../transport/UnixSocket.ts"
import { foreignSocketProblem } from "../../config/privateDir.ts"
import {
  agentDirHash,
  chooseRuntimeDir,
  currentUid,
  type IntercomPaths,
  prepareFallbackDir,
  socketPathLimit
} from "../paths.ts"

// ---------------------------------------------------------------------------
// Where
// ---------------------------------------------------------------------------

/** Where the control socket of one watch name lives. */
export interface ControlLocation {
  /** The control socket of one name. */
  readonly socketPath: string
  /** Its directory: `<intercomDir>/cli`, or the private short fallback dir. */
  readonly dir: string
  /** True when the directory is the broker's short fallback dir (`prepareFallbackDir` rules). */
  readonly fallback: boolean
}

/** Neither the control socket path nor its short fallback fits in a Unix socket address. */
export class ControlPathTooLong extends Data.TaggedError("ControlPathTooLong")<{ readonly path: string }> {
  override get message(): string {
    return `The watch control socket path ${this.path} is too long for a Unix socket, and so is the short fallback. Use a shorter agent dir (--dir), or set XDG_RUNTIME_DIR or TMPDIR to a short directory.`
  }
}

const fits = (socketPath: string): boolean =>
  Buffer.byteLength(socketPath, "utf8") <= socketPathLimit(process.platform)

/**
 * `<intercomDir>/cli/<first 16 hex of the name key>.sock`; when that is too
 * long for a Unix socket, `<runtimeDir>/intercom-<uid>/<agent dir hash>-<key>.sock`
 * (the directory the broker's own short socket uses).
 */
export const controlLocation = (
  paths: IntercomPaths,
  key: string
): Effect.Effect<ControlLocation, ControlPathTooLong> =>
  Effect.gen(function*() {
    const short = key.slice(0, 16)
    const dir = path.join(paths.intercomDir, "cli")
    const socketPath = path.join(dir, `${short}.sock`)
    if (fits(socketPath)) return { socketPath, dir, fallback: false }
    const fallbackDir = path.join(yield* chooseRuntimeDir(process.env), `intercom-${currentUid()}`)
    const fallbackPath = path.join(fallbackDir, `${agentDirHash(paths.agentDir)}-${short}.sock`)
    if (fits(fallbackPath)) return { socketPath: fallbackPath, dir: fallbackDir, fallback: true }
    return yield* new ControlPathTooLong({ path: socketPath })
  })

// ---------------------------------------------------------------------------
// Frames
// ---------------------------------------------------------------------------

/**
 * A request: `type: "intercom"` and the tool's parameters, every field of
 * their one Schema (session/toolParams.ts), so none can be left out here.
 */
const ControlRequest = Schema.Struct({ type: Schema.Literal("intercom"), ...IntercomToolParams.fields })

const ControlRequestJson = Schema.fromJsonString(ControlRequest)

const ControlResponse = Schema.Struct({
  type: Schema.Literal("result"),
  text: Schema.String,
  isError: Schema.Boolean,
  details: Schema.Record(Schema.String, Schema.Unknown)
})

const decodeResponse = Schema.decodeUnknownOption(Schema.fromJsonString(ControlResponse))

/** A request frame that does not hold the tool's parameters: what is wrong where, in words. */
export class InvalidControlRequest extends Data.TaggedError("InvalidControlRequest")<{
  /** Each problem as `<field>: <what is wrong>` (just the problem when it is the frame as a whole). */
  readonly problems: ReadonlyArray<string>
}> {
  override get message(): string {
    return `Invalid control request: ${
      this.problems.join("; ")
    }. Nothing was run. (A watch started from another version of intercom may not know a parameter; restart the watch.)`
  }
}

const formatIssue = SchemaIssue.makeFormatterStandardSchemaV1()

const invalidRequest = (error: Schema.SchemaError): InvalidControlRequest =>
  new InvalidControlRequest({
    problems: formatIssue(error.issue).issues.map((issue) => {
      const field = (issue.path ?? []).map((segment) => String(typeof segment === "object" ? segment.key : segment))
      return field.length === 0 ? issue.message : `${field.join(".")}: ${issue.message}`
    })
  })

/**
 * A request frame's parameters. A field the tool does not have, or a field of
 * the wrong shape, fails with every such field named: a parameter is never
 * dropped on the way (the action would then run as a different one).
 */
export const decodeRequest = (text: string): Effect.Effect<IntercomToolParams, InvalidControlRequest> =>
  Schema.decodeUnknownEffect(ControlRequestJson)(text, { errors: "all", onExcessProperty: "error" }).pipe(
    Effect.map(({ type: _type, ...params }) => params),
    Effect.mapError(invalidRequest)
  )

/** The request frame carrying `params`: every parameter that is set. */
export const encodeRequest = (params: IntercomToolParams): Effect.Effect<string, InvalidControlRequest> =>
  Schema.encodeEffect(ControlRequestJson)({ type: "intercom", ...params }).pipe(Effect.mapError(invalidRequest))

const encodeResponse = (result: ToolResult): string =>
  JSON.stringify({ type: "result", text: result.text, isError: result.isError, details: result.details })

// ---------------------------------------------------------------------------
// The command side
// ---------------------------------------------------------------------------

/** The watch took the request but went away before it answered: the outcome is unknown. */
export class WatchLost extends Data.TaggedError("WatchLost")<{ readonly name: string }> {
  override get message(): string {
    return `The intercom watch "${this.name}" went away before answering; the action may or may not have been carried out.`
  }
}

/**
 * The control socket, its directory or the intercom dir above it belongs to
 * another user: nothing was sent there, since that user could be listening
 * in the watch's place.
 */
export class ControlSocketForeign extends Data.TaggedError("ControlSocketForeign")<{
  readonly socketPath: string
  /** What belongs to whom (`foreignSocketProblem`), or why it could not be checked. */
  readonly detail: string
}> {
  override get message(): string {
    return `Not handing the action to a watch's control socket at ${this.socketPath}: ${this.detail}, so another ` +
      `user could be listening there. Use an agent dir of your own (--dir, ATOMIC_CODING_AGENT_DIR or PI_CODING_AGENT_DIR).`
  }
}

/** Why `socketPath` (`<dir>/<name>.sock`, `<dir>` in the intercom dir or the fallback dir) is another user's, if it is. */
const foreignControl = (socketPath: string): Effect.Effect<void, ControlSocketForeign> =>
  Effect.try({
    try: () => {
      const dir = path.dirname(socketPath)
      const uid = currentUid()
      return foreignSocketProblem(path.dirname(dir), dir, uid) ?? foreignSocketProblem(dir, socketPath, uid)
    },
    catch: (cause) => cause
  }).pipe(
    Effect.catch((cause) =>
      // A file where a directory of the path must be: no socket can be there, so no watch either (the command's
      // own session then says what is in the way).
      cause instanceof Error && "code" in cause && cause.code === "ENOTDIR"
        ? Effect.succeed(undefined)
        : Effect.fail(new ControlSocketForeign({ socketPath, detail: `it cannot be checked (${String(cause)})` }))
    ),
    Effect.flatMap((detail) => detail === undefined ? Effect.void : Effect.fail(new ControlSocketForeign({ socketPath, detail })))
  )

/**
 * Hands `params` to the watch listening on `socketPath`. `None` when no watch
 * answers there (no socket, or a stale one); then nothing was sent. Fails
 * with `InvalidControlRequest`, before dialing, when a parameter cannot be
 * sent (a number that is not finite), and with `ControlSocketForeign` when
 * the socket or a directory it is in belongs to another user.
 */
export const delegate = (
  socketPath: string,
  name: string,
  params: IntercomToolParams
): Effect.Effect<Option.Option<ToolResult>, WatchLost | InvalidControlRequest | ControlSocketForeign> =>
  Effect.scoped(
    Effect.gen(function*() {
      const request = yield* encodeRequest(params)
      yield* foreignControl(socketPath)
      const dialed = yield* Effect.option(dialUnix(socketPath))
      if (Option.isNone(dialed)) return Option.none()
      const connection = dialed.value
      const lost = () => new WatchLost({ name })
      yield* connection.writeAll([request]).pipe(Effect.mapError(lost))
      const frames = yield* connection.read.pipe(Effect.mapError(lost))
      const response = decodeResponse(frames[0] ?? "")
      if (Option.isNone(response)) return yield* lost()
      const { text, isError, details } = response.value
      return Option.some({ text, isError, details })
    })
  )

// ---------------------------------------------------------------------------
// The watch side
// ---------------------------------------------------------------------------

/** A watch of this name already answers on its control socket. */
export class WatchAlreadyRunning extends Data.TaggedError("WatchAlreadyRunning")<{
  readonly name: string
  readonly socketPath: string
}> {
  override get message(): string {
    return `An intercom watch named "${this.name}" is already running (control socket ${this.socketPath}). Use it — commands run with --name ${
      JSON.stringify(this.name)
    } act through it — or stop it first.`
  }
}

/** The control socket could not be listened on (its directory or the socket itself). */
export class ControlListenFailed extends Data.TaggedError("ControlListenFailed")<{
  readonly socketPath: string
  readonly detail: string
}> {
  override get message(): string {
    return `Cannot listen on the watch control socket ${this.socketPath}: ${this.detail}. Check that this user may write to the intercom dir above it (or that no file is in its place), or use an agent dir of your own (--dir, ATOMIC_CODING_AGENT_DIR or PI_CODING_AGENT_DIR).`
  }
}

/** How long the watch waits for a command to hang up after the answer. */
const HANG_UP_GRACE = Duration.seconds(2)

/**
 * Serves one control connection: one request in, one result out. If the
 * command goes away while its action runs (Ctrl-C on a delegated `ask`), the
 * action is interrupted — an ask is then cancelled at the broker.
 */
const serveOne = (
  connection: Connection,
  run: (params: IntercomToolParams) => Effect.Effect<ToolResult>
): Effect.Effect<void> =>
  Effect.gen(function*() {
    const frames = yield* connection.read
    const request = yield* Effect.result(decodeRequest(frames[0] ?? ""))
    if (request._tag === "Failure") {
      return yield* connection.writeAll([encodeResponse({
        text: request.failure.message,
        isError: true,
        details: { error: request.failure._tag, problems: request.failure.problems }
      })])
    }
    // Whichever ends first: the action, or the command hanging up (which interrupts the action).
    const outcome = yield* Effect.raceFirst(
      Effect.map(run(request.success), Option.some),
      Effect.as(Effect.exit(connection.read), Option.none<ToolResult>())
    )
    if (Option.isNone(outcome)) return
    yield* connection.writeAll([encodeResponse(outcome.value)])
    yield* Effect.timeoutOption(Effect.exit(connection.read), HANG_UP_GRACE)
  }).pipe(Effect.ignore)

/**
 * Claims the control socket of `name` for as long as the current Scope is
 * open, serving each request with `run`. Fails with `WatchAlreadyRunning`
 * when another watch answers there; a stale socket file (a watch that was
 * killed) is replaced.
 */
export const serveControl = (
  location: ControlLocation,
  name: string,
  run: (params: IntercomToolParams) => Effect.Effect<ToolResult>
): Effect.Effect<void, WatchAlreadyRunning | ControlListenFailed, Scope.Scope> =>
  Effect.gen(function*() {
    const { socketPath, dir } = location
    if (location.fallback) {
      yield* prepareFallbackDir(dir, currentUid()).pipe(
        Effect.mapError((error) => new ControlListenFailed({ socketPath, detail: error.message }))
      )
    } else {
      yield* Effect.try({
        try: () => fs.mkdirSync(dir, { recursive: true, mode: 0o700 }),
        catch: (error) => new ControlListenFailed({ socketPath, detail: String(error) })
      })
    }
    // A socket file is there: a live watch answers on it; a killed watch's file does not.
    const answers = Effect.scoped(Effect.isSuccess(dialUnix(socketPath)))
    yield* listenReplacingStale(socketPath, serveUnix(socketPath, (connection) => serveOne(connection, run)), answers)
      .pipe(
        Effect.catchTags({
          ListenError: (error) => Effect.fail(new ControlListenFailed({ socketPath, detail: error.reason })),
          SocketInUse: () => Effect.fail(new WatchAlreadyRunning({ name, socketPath }))
        })
      )
  })
