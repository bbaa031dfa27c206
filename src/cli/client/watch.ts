/**
 * `intercom watch`: stay registered as a name, print what arrives, answer
 * asks from the keyboard.
 *
 * - Registers under the name's stable session id (identity.ts), after
 *   claiming the name's control socket, so that two watches of one name never
 *   take each other's session over (P16).
 * - Prints inbound messages and asks (with their message ids) and membership
 *   events (joined, left, renamed, status changes); in text mode through
 *   `terminalText`, so no peer text puts an escape sequence on the terminal.
 *   Those its client learnt after a reconnect (the sessions that left or
 *   joined while the watch was not connected) end with `(while disconnected)`.
 * - A line on stdin answers the pending ask; `@<name or message id> <text>`
 *   picks one when several are pending.
 * - Runs the actions of short-lived commands with the same name (`intercom
 *   reply --name planner …` from another terminal) in this session.
 * - End of stdin, Ctrl-C, SIGTERM or SIGHUP (exit.ts `hangupAsTerminate`) leave
 *   cleanly: the session unregisters.
 * - Stdout gone (`intercom watch | head -1`): it leaves quietly (exit 0), and
 *   the message whose line could not be written is not confirmed, so it comes
 *   again to the next watch of the name (`runWatch`).
 * - Taken over (another process registered the same session id, `taken_over`):
 *   it says so in one line — that process's pid, and how to take the session
 *   back — and exits with EXIT_FAILURE, rather than stay up receiving nothing.
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import * as path from "node:path"
import * as readline from "node:readline"
import type { SessionInfo } from "../../protocol/frames.ts"
import * as HandledLog from "../../session/HandledLog.ts"
import { headless, HostOutputGone, type Inbound } from "../../session/Host.ts"
import type { IntercomToolParams, ToolResult } from "../../session/IntercomSession.ts"
import { EXIT_FAILURE, EXIT_USAGE, ExitCode } from "../exit.ts"
import { terminalJson, terminalText } from "../terminalText.ts"
import { ControlPathTooLong, serveControl } from "./control.ts"
import { watchSessionId } from "./identity.ts"
import { actionJson, actionText, errorResult, inboundJson, inboundText, presenceOutput, sessionLabel } from "./output.ts"
import { type CommonInput, openSession, type OpenSessionOptions, resolveContext } from "./session.ts"

/** The flags of `intercom watch`. */
export interface WatchInput extends CommonInput {
  /** Read replies from stdin (and leave at its end); `--no-stdin` runs until a signal. */
  readonly stdin: boolean
  /**
   * `--rejoin-grace`: the client's `rejoinGraceMs` (how long after a reconnect
   * a session may take to come back before the watch shows it as left); `None`
   * for the client's default, 10 s.
   */
  readonly rejoinGrace: Option.Option<number>
}

/**
 * How a watch's session is opened, beyond its id and host: it never starts a
 * model turn, it is not ephemeral (people address it by name), its client
 * waits `--rejoin-grace` after a reconnect before it reconciles membership
 * (the client's default without the flag), and a takeover says how to take
 * the session back.
 */
export const watchSessionOptions = (
  input: Pick<WatchInput, "rejoinGrace">,
  name: string
): Omit<OpenSessionOptions, "sessionId" | "host"> => ({
  inboundTrigger: "never",
  ephemeral: false,
  rejoinGraceMs: Option.getOrUndefined(input.rejoinGrace),
  takenOverHint: `Run "intercom watch --name ${name}" again to take it back.`
})

/** Lines of stdin until it ends. `terminal: false`: Ctrl-C stays a signal, not a readline event. */
const stdinLines: Stream.Stream<string> = Stream.callback<string>((queue) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const lines = readline.createInterface({ input: process.stdin, terminal: false, crlfDelay: Infinity })
      lines.on("line", (line) => Queue.offerUnsafe(queue, line))
      lines.on("close", () => Queue.endUnsafe(queue))
      return lines
    }),
    (lines) =>
      Effect.sync(() => {
        lines.close()
        process.stdin.destroy() // nothing may keep the process alive after the watch ends
      })
  )
)

const HELP =
  `Type a line to answer the pending ask; "@<name or message id> <text>" picks one when several are pending. Ctrl-D or Ctrl-C leaves.`

/** What a typed line means: a reply, a reply to a chosen ask or sender, or a mistake. */
export const parseReplyLine = (
  line: string,
  pendingIds: ReadonlyArray<string>
): IntercomToolParams | { readonly problem: string } | undefined => {
  const text = line.trim()
  if (text === "") return undefined
  if (!text.startsWith("@")) return { action: "reply", message: text }
  const match = /^@(\S+)\s+([\s\S]+)$/.exec(text)
  if (match === null) return { problem: `Nothing to send: type "@<name or message id> <text>".` }
  const [, target = "", message = ""] = match
  // A message id (or a prefix of 8+ characters of exactly one) picks that ask; anything else names its sender.
  const byId = pendingIds.filter((id) => id === target || (target.length >= 8 && id.startsWith(target)))
  const [only] = byId
  return byId.length === 1 && only !== undefined
    ? { action: "reply", replyTo: only, message }
    : { action: "reply", to: target, message }
}

/**
 * Writes a message's line (`text` and a newline) to stdout, as the watch
 * host's `deliver`; completes once the stream took it (for a pipe, once it
 * was flushed). If it could not (stdout closed or full), it fails with
 * `HostOutputGone`: the message was not shown, so it is neither logged nor
 * confirmed, and the session's hand-off neither retries it nor hands over
 * any later one. The same error reaches `stdoutFailure`, which ends the
 * watch. A stdout that neither takes the line nor fails (a pipe whose reader
 * stopped reading) never completes it: the watch's `show` lets an
 * interruption cut it short.
 */
const writeOut = (text: string): Effect.Effect<void, HostOutputGone> =>
  Effect.callback<void, HostOutputGone>((resume) => {
    process.stdout.write(`${text}\n`, (error) => {
      resume(error === null || error === undefined ? Effect.void : Effect.fail(new HostOutputGone({ detail: error.message })))
    })
  })

/**
 * Completes with the first error of stdout (a pipe whose reader went away:
 * EPIPE; a full disk: ENOSPC). Until then it is what listens for
 * stdout's 'error' events, without which such an error would crash the
 * process with a stack trace. The listener stays once it fired: the stream
 * is dead, and a write still in flight may report the same error again.
 */
const stdoutFailure: Effect.Effect<NodeJS.ErrnoException> = Effect.callback<NodeJS.ErrnoException>((resume) => {
  const onError = (error: NodeJS.ErrnoException) => resume(Effect.succeed(error))
  process.stdout.on("error", onError)
  return Effect.sync(() => process.stdout.off("error", onError))
})

/**
 * Runs `intercom watch` until stdin ends (unless `--no-stdin`), Ctrl-C or
 * SIGTERM, or stdout fails; see the module header. Fails with `ExitCode`
 * after printing why.
 *
 * Stdout gone (EPIPE: `intercom watch | head -1` once `head` has exited) ends
 * the watch quietly with exit 0, as a pipeline's reader may, whether the line
 * that met it was a message's or a presence line; another stdout error
 * (ENOSPC) is said on stderr, exit 1. Either way the session leaves, and the
 * message whose line stdout could not take is not confirmed (nor logged as
 * shown): the broker hands it to the next watch of the name (`writeOut`).
 */
export const runWatch = (input: WatchInput): Effect.Effect<void, ExitCode, FileSystem.FileSystem> =>
  Effect.raceFirst(
    watchSession(input),
    Effect.flatMap(stdoutFailure, (error) =>
      error.code === "EPIPE"
        ? Effect.void
        : Console.error(
          `intercom watch stopped: cannot write to stdout (${error.message}); the message it could not show will come again to the next watch of this name. Free space or fix stdout, and run it again.`
        ).pipe(Effect.andThen(Effect.fail(new ExitCode({ code: EXIT_FAILURE })))))
  )

const watchSession = (input: WatchInput): Effect.Effect<void, ExitCode, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fail = (kind: string, message: string) =>
      (input.json
        ? Console.log(terminalJson({ event: "error", ...errorResult(kind, message) }))
        : Console.error(terminalText(message))).pipe(
          // A --dir that names no directory is a bad invocation, as for the other client commands.
          Effect.andThen(Effect.fail(new ExitCode({ code: kind === "NoSuchAgentDir" ? EXIT_USAGE : EXIT_FAILURE })))
        )

    const context = yield* resolveContext(input).pipe(Effect.catch((error) => fail(error._tag, error.message)))
    if (Option.isNone(context.control)) {
      const error = new ControlPathTooLong({ path: context.paths.intercomDir })
      return yield* fail(error._tag, error.message)
    }
    const sessionId = watchSessionId(context.name, context.settings.scopeId)
    const emit = (text: string, json: Record<string, unknown>) =>
      Console.log(input.json ? terminalJson(json) : terminalText(text))
    const emitError = (text: string, json: Record<string, unknown>) =>
      input.json ? Console.log(terminalJson(json)) : Console.error(terminalText(text))

    // What this watch knows about the others, for membership lines.
    const known = new Map<string, SessionInfo>()

    // A message line's write waits interruptibly, though the hand-off's attempt is not: a stdout whose reader
    // stopped reading (a full pipe, not a closed one) never completes it, and Ctrl-C or SIGTERM must still end
    // the watch. A write cut short so ends the hand-off: every later attempt — the close's last one for the
    // same message too — fails as output gone, so nothing is written twice or warned about, and the line cut
    // short is not logged as shown (the next watch of the name shows it).
    let stopping = false
    const show = (text: string): Effect.Effect<void, HostOutputGone> =>
      Effect.suspend(() =>
        stopping
          ? Effect.fail(new HostOutputGone({ detail: "the watch is stopping" }))
          : Effect.interruptible(writeOut(text)).pipe(Effect.onInterrupt(() => Effect.sync(() => (stopping = true))))
      )

    // What this watch showed is logged, so a restarted watch of the same name does not show a message again
    // that the broker sends a second time (one read and never confirmed before the restart: known issue 6).
    const shown = HandledLog.make(path.join(context.paths.intercomDir, "watch", `${sessionId}.handled.jsonl`))
    // A message counts as shown once stdout took its line (a pipe's write completes later than `console.log`
    // returns): only then is it logged.
    const host = HandledLog.withHandledLog(
      headless(context.identity, (inbound: Inbound) =>
        show(
          input.json
            ? terminalJson(inboundJson(inbound))
            : terminalText(inboundText(inbound.from, inbound.message, inbound.expectsReply, inbound.delivery))
        )),
      shown
    )
    const { client, session } = yield* openSession(context, { sessionId, host, ...watchSessionOptions(input, context.name) })

    const act = (params: IntercomToolParams, source: "stdin" | "command"): Effect.Effect<ToolResult> =>
      Effect.tap(session.intercom(params), (result) => {
        // Queries run for another terminal print there only.
        if (source === "command" && (params.action === "list" || params.action === "status" || params.action === "pending")) {
          return Effect.void
        }
        const text = actionText(params, result, source)
        const json = actionJson(params, result, source)
        return result.isError ? emitError(text, json) : emit(text, json)
      })

    // Claim the name before registering under its id: a second watch stops here.
    yield* serveControl(context.control.value, context.name, (params) => act(params, "command")).pipe(
      Effect.catch((error) => fail(error._tag, error.message))
    )

    yield* Effect.forkScoped(
      Stream.runForEach(client.presenceEvents, (event) => {
        const id = event._tag === "Left" ? event.sessionId : event.session.id
        const before = known.get(id)
        if (event._tag === "Left") known.delete(id)
        else known.set(id, event.session)
        const shown = presenceOutput(event, before)
        return shown === undefined ? Effect.void : emit(shown.text, shown.json)
      }),
      { startImmediately: true }
    )

    // First action: spawn the broker if needed, register, list.
    const listing = yield* session.list.pipe(Effect.catch((error) => fail(error._tag, error.message)))
    const others = listing.sessions.filter((other) => other.id !== sessionId)
    for (const other of others) known.set(other.id, other)
    const othersText = others.length === 0
      ? "No other sessions connected."
      : `Other sessions: ${others.map(sessionLabel).join(", ")}`
    yield* emit(
      `Watching as ${context.name} (session ${sessionId}). ${othersText}\n${input.stdin ? HELP : "Ctrl-C leaves."}`,
      { event: "ready", name: context.name, sessionId, sessions: others }
    )
    const sameName = others.filter((other) => other.name?.trim().toLowerCase() === context.name.toLowerCase())
    if (sameName.length > 0) {
      yield* Console.error(terminalText(
        `Warning: another session is also named "${context.name}" (${
          sameName.map((other) => other.id).join(", ")
        }); asks to that name are ambiguous until one of them leaves.`
      ))
    }

    // Taken over: nothing reaches this watch any more; it says why and exits (1), not stay up silent.
    const takenOver = client.whenTakenOver.pipe(
      Effect.catch((error) => fail("TakenOver", `intercom watch stopped: ${error.reason}`))
    )
    if (!input.stdin) return yield* takenOver

    const replies = Stream.runForEach(stdinLines, (line) =>
      Effect.gen(function*() {
        const pending = yield* Effect.option(session.pending)
        const ids = Option.match(pending, {
          onNone: () => [],
          onSome: (result) => result.asks.map((ask) => ask.message.id)
        })
        const parsed = parseReplyLine(line, ids)
        if (parsed === undefined) return
        if ("problem" in parsed) {
          return yield* emitError(`[error] ${parsed.problem}`, { event: "error", text: parsed.problem })
        }
        yield* act(parsed, "stdin")
      }))
    yield* Effect.raceFirst(replies, takenOver)
  }).pipe(Effect.scoped)
