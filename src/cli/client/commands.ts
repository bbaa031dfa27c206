/**
 * Size: about 535 lines, one concept — the client commands' command line, each a few lines
 * of flags around `runAction`; the results and questions commands added
 * here in issue 13 and the worker commands of issue 14 follow the same shape
 * (how `stop` and `result` tell their argument apart is `workerArgs.ts`). A split would spread one table of
 * commands over files.
 *
 * The client commands of `intercom` (docs/cli.md, "Client commands"):
 *
 *   intercom list    [--name <n>] [--json] [--dir <dir>] [--group <g>]
 *   intercom send    <to> <message...> [--delivery steer|queue|passive] [--queue-mode stack|replace] [--thread <id>]
 *   intercom ask     <to> <message...> [--timeout <duration|ms>] [--delivery …] [--queue-mode …] [--thread <id>]
 *   intercom reply   <message...> [--to <target>] [--reply-to <message id>] [--delivery …] [--queue-mode …] [--thread <id>]
 *   intercom pending
 *   intercom status
 *   intercom watch   [--no-stdin] [--rejoin-grace <duration|ms>]
 *   intercom publish <topic> <text...> [--event e] [--resource r] [--ownership o]
 *   intercom subscribe <topic> [--await-release]    (through a running watch)
 *   intercom unsubscribe <topic>
 *   intercom topics  [topic]
 *   intercom results [--offset n] [--limit n]
 *   intercom result  <result:UUID | run handle> [--offset n] [--limit n]
 *   intercom questions --session <id> [--offset N] [--limit N]
 *   intercom answer  <question id> <answer...> --session <id>
 *   intercom stop    <question id> --session <id>   |   intercom stop <run handle>
 *   intercom peek    <run handle>
 *   intercom steer   <run handle> <instruction...>
 *
 * Every command but `questions`, `answer`, `stop`, `peek` and `steer` (which
 * act by a supervisor session id or a run handle, not in a group) takes
 * `--group <g>`: for `list` and `status` a read-only look at group g
 * (C-GRP-5), for the others the home group of the session the command opens
 * (C-GRP-2), which send/ask/reply also pass on as the tool's `group`, so a
 * `watch` in another group refuses them (C-GRP-6).
 *
 * Only the command line is defined here; the handlers load `run.ts` /
 * `watch.ts` (the client and session runtime) when they run, so `intercom
 * broker` never loads them. A plain `send` usually never reaches this file:
 * main.ts runs it through the fast path (clientArgv.ts, clientEntry.ts),
 * which maps its flags with the same `sendToolParams`.
 */
import * as Argument from "effect/cli/Argument"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { IntercomToolParams } from "../../session/IntercomSession.ts"
import { checkListLimit, checkListOffset, checkPageLimit, checkPageOffset } from "../../protocol/results.ts"
import { checkPage, InvalidQuestionPage } from "../../store/questionModel.ts"
import { sendToolParams } from "../clientArgv.ts"
import { parseRejoinGrace, parseTimeout, rejoinGraceProblem } from "./duration.ts"
import { nameProblem } from "./identity.ts"
import { resultTarget, stopTarget } from "./workerArgs.ts"
import type { CommonInput } from "./session.ts"
import { cliTelemetry } from "../telemetry.ts"

const nameFlag = Flag.String("name").pipe(
  Flag.withDescription(
    "The session name to act as (default: cli-<user>). While `intercom watch --name <n>` runs, commands with the same name act through it."
  ),
  Flag.filter((name) => nameProblem(name) === undefined, (name) => nameProblem(name) ?? "bad --name"),
  Flag.optional
)

const jsonFlag = Flag.Boolean("json").pipe(
  Flag.withDescription("Machine-readable output: one JSON object per result (per event for watch)."),
  Flag.withDefault(false)
)

const dirFlag = Flag.String("dir").pipe(
  Flag.withDescription(
    "Agent directory (default: $ATOMIC_CODING_AGENT_DIR, else $PI_CODING_AGENT_DIR, else ~/.pi/agent)."
  ),
  Flag.filter((dir) => dir.trim().length > 0, () => "--dir must not be empty"),
  Flag.optional
)

const common = { name: nameFlag, json: jsonFlag, dir: dirFlag }

/** `--group` of the commands that send or stay: the home group of their session. */
const homeGroupFlag = Flag.String("group").pipe(
  Flag.withDescription(
    "The intercom group of this command's session (default: $ATOMIC_INTERCOM_GROUP, else $PI_INTERCOM_GROUP, else config group, else default). Only sessions of the same group can be reached."
  ),
  Flag.filter((group) => group.trim().length > 0, () => "--group must not be empty"),
  Flag.optional
)

/** `--group` of `list` and `status`: another group to look at, read-only. */
const peekGroupFlag = (what: string) =>
  Flag.String("group").pipe(
    Flag.withDescription(
      `${what} Read-only: this session stays in its own group (ATOMIC_INTERCOM_GROUP / config) and cannot send there.`
    ),
    Flag.filter((group) => group.trim().length > 0, () => "--group must not be empty"),
    Flag.optional
  )

/** The tool's `group` parameter from a `--group` flag. */
const groupParam = (group: Option.Option<string>): { readonly group?: string } =>
  Option.match(group, { onNone: () => ({}), onSome: (value) => ({ group: value }) })

const toArgument = Argument.String("to").pipe(
  Argument.withDescription("Target session: exact id, name (ignoring case), or unique id prefix.")
)

const messageArgument = Argument.String("message").pipe(
  Argument.withDescription("The message; several words are joined with spaces. Use -- before a message that starts with -."),
  Argument.atLeast(1)
)

const joined = (words: ReadonlyArray<string>): string => words.join(" ")

/**
 * `--delivery`, `--queue-mode` and `--thread` (`delivery-v1`, C-DLV-1…4): the
 * tool's `delivery`, `queueMode` and `threadId`. Combinations are checked by
 * the session runtime, with the same rules and texts as the tool: a bad one
 * is an error and exit 1, and nothing is sent.
 */
const deliveryFlags = {
  delivery: Flag.Literals("delivery", ["steer", "queue", "passive"]).pipe(
    Flag.withDescription(
      "How the message reaches a busy session: steer (default; at its next tool boundary), queue (after its current work) or passive (shown, never wakes its model; not for ask)."
    ),
    Flag.optional
  ),
  queueMode: Flag.Literals("queue-mode", ["stack", "replace"]).pipe(
    Flag.withDescription(
      "With --delivery queue: stack (every message) or replace (only the latest message of --thread is delivered, after the broker's coalescing window)."
    ),
    Flag.optional
  ),
  thread: Flag.String("thread").pipe(
    Flag.withDescription("With --queue-mode replace: the thread whose latest message replaces earlier ones."),
    Flag.optional
  )
}

/** The tool's delivery parameters from the delivery flags. */
const deliveryParams = (input: {
  readonly delivery: Option.Option<string>
  readonly queueMode: Option.Option<string>
  readonly thread: Option.Option<string>
}): Pick<IntercomToolParams, "delivery" | "queueMode" | "threadId"> => ({
  ...Option.match(input.delivery, { onNone: () => ({}), onSome: (delivery) => ({ delivery }) }),
  ...Option.match(input.queueMode, { onNone: () => ({}), onSome: (queueMode) => ({ queueMode }) }),
  ...Option.match(input.thread, { onNone: () => ({}), onSome: (threadId) => ({ threadId }) })
})

const runAction = (input: CommonInput, params: IntercomToolParams) =>
  Effect.flatMap(Effect.promise(() => import("./run.ts")), (run) => run.runAction(input, params))

const list = Command.make(
  "list",
  { ...common, group: peekGroupFlag("Peek at the sessions of this group instead of your own.") },
  ({ group, ...input }) => runAction(input, { action: "list", ...groupParam(group) })
).pipe(
  Command.withDescription("List the sessions on the intercom: this one, then the others (of this session's group).")
)

const send = Command.make(
  "send",
  { ...common, ...deliveryFlags, group: homeGroupFlag, to: toArgument, message: messageArgument },
  (input) =>
    runAction(
      input,
      sendToolParams({
        to: input.to,
        words: input.message,
        delivery: Option.getOrUndefined(input.delivery),
        queueMode: Option.getOrUndefined(input.queueMode),
        thread: Option.getOrUndefined(input.thread),
        group: Option.getOrUndefined(input.group)
      })
    )
).pipe(
  Command.withDescription(
    "Send a message. Exits 0 once the broker accepted it (or staged it, with --queue-mode replace), not when it was read; 1 if it was not delivered."
  )
)

const timeoutFlag = Flag.String("timeout").pipe(
  Flag.withDescription("How long to wait for the reply: milliseconds (90000) or a duration (30s, 2m, 1h). Default: the config's askTimeoutMs (10 minutes)."),
  Flag.filterMap(
    (text) => Option.fromUndefinedOr(parseTimeout(text)),
    (text) => `--timeout must be a positive duration such as 30s, 2m or 90000 (milliseconds), got ${JSON.stringify(text)}`
  ),
  Flag.optional
)

const ask = Command.make(
  "ask",
  { ...common, ...deliveryFlags, group: homeGroupFlag, to: toArgument, message: messageArgument, timeout: timeoutFlag },
  (input) =>
    runAction(input, {
      action: "ask",
      to: input.to,
      message: joined(input.message),
      timeoutMs: Option.getOrUndefined(input.timeout),
      ...deliveryParams(input),
      ...groupParam(input.group)
    })
).pipe(
  Command.withDescription("Ask and wait for the reply; prints **Reply from <to>:** and the answer. Exits 1 on timeout or if the target leaves.")
)

const reply = Command.make(
  "reply",
  {
    ...common,
    ...deliveryFlags,
    group: homeGroupFlag,
    message: Argument.String("message").pipe(
      Argument.withDescription(
        "The reply; several words are joined with spaces. May be left out with --error. Use -- before a reply that starts with -."
      ),
      Argument.atLeast(0)
    ),
    error: Flag.String("error").pipe(
      Flag.withDescription(
        "Answer the ask with a failure: the asker's ask ends as an error whose text is exactly this (reply-error-v1)."
      ),
      Flag.filter(
        (text) => text.trim().length > 0,
        () => "--error must not be empty: give the failure text the asker is to get"
      ),
      Flag.optional
    ),
    to: Flag.String("to").pipe(
      Flag.withDescription("Answer the pending ask from this sender (when several are pending)."),
      Flag.optional
    ),
    replyTo: Flag.String("reply-to").pipe(
      Flag.withDescription("Answer exactly this ask (its message id, as watch and pending show it)."),
      Flag.optional
    )
  },
  (input) =>
    runAction(input, {
      action: "reply",
      message: joined(input.message),
      replyError: Option.getOrUndefined(input.error),
      to: Option.getOrUndefined(input.to),
      replyTo: Option.getOrUndefined(input.replyTo),
      ...deliveryParams(input),
      ...groupParam(input.group)
    })
).pipe(
  Command.withDescription(
    "Answer an ask made to the session of --name. Works while `intercom watch` of that name runs (a fresh session has nothing to answer)."
  )
)

const pending = Command.make(
  "pending",
  { ...common, group: homeGroupFlag },
  (input) => runAction(input, { action: "pending" })
).pipe(
  Command.withDescription("List the unanswered asks made to the session of --name (the watch of that name, if one runs).")
)

const status = Command.make(
  "status",
  { ...common, group: peekGroupFlag("Also count the sessions of this group.") },
  ({ group, ...input }) => runAction(input, { action: "status", ...groupParam(group) })
).pipe(
  Command.withDescription("Connected?, the session id, its group, and how many sessions are active in it.")
)

const watch = Command.make(
  "watch",
  {
    ...common,
    group: homeGroupFlag,
    stdin: Flag.Boolean("stdin").pipe(
      Flag.withDescription("Read replies from stdin and leave when it ends (default). --no-stdin: ignore stdin, run until Ctrl-C/SIGTERM."),
      Flag.withDefault(true)
    ),
    rejoinGrace: Flag.String("rejoin-grace").pipe(
      Flag.withDescription(
        "After a reconnect, how long a session may take to come back before it is shown as [left] (while disconnected): 0 to 10m, milliseconds (3000) or a duration (3s, 500ms). Default: 10s."
      ),
      Flag.filterMap((text) => Option.fromUndefinedOr(parseRejoinGrace(text)), rejoinGraceProblem),
      Flag.optional
    )
  },
  (input) => Effect.flatMap(Effect.promise(() => import("./watch.ts")), (watch) => watch.runWatch(input))
).pipe(
  Command.withDescription(
    "Stay registered as --name: print messages, asks and joins/leaves/status changes as they arrive, and answer asks typed on stdin."
  )
)

const topicArgument = Argument.String("topic").pipe(Argument.withDescription("The exact topic (no wildcards)."))

const optionalText = (name: string, description: string) =>
  Flag.String(name).pipe(Flag.withDescription(description), Flag.optional)

const publish = Command.make(
  "publish",
  {
    ...common,
    group: homeGroupFlag,
    topic: topicArgument,
    message: messageArgument,
    event: Flag.Literals("event", ["update", "blocker", "decision", "release"]).pipe(
      Flag.withDescription("update (default: quiet), blocker or decision (steer subscribers), release (with --ownership released)."),
      Flag.optional
    ),
    resource: optionalText("resource", "The resource this state is about."),
    ownership: Flag.Literals("ownership", ["held", "released"]).pipe(
      Flag.withDescription("Advisory ownership of --resource (not a lock)."),
      Flag.optional
    )
  },
  (input) =>
    runAction(input, {
      action: "publish",
      topic: input.topic,
      message: joined(input.message),
      event: Option.getOrUndefined(input.event),
      resource: Option.getOrUndefined(input.resource),
      ownership: Option.getOrUndefined(input.ownership),
      ...groupParam(input.group)
    })
).pipe(
  Command.withDescription(
    "Publish the current state of a topic as the session of --name. Exits 0 once the broker saved it. Without a running `intercom watch --name <n>` the command's own session leaves when it exits, and its record then shows as unavailable."
  )
)

const subscribe = Command.make(
  "subscribe",
  {
    ...common,
    group: homeGroupFlag,
    topic: topicArgument,
    awaitRelease: Flag.Boolean("await-release").pipe(
      Flag.withDescription("Also be interrupted (shown by the watch) when the resource is released."),
      Flag.withDefault(false)
    )
  },
  (input) =>
    runAction(input, { action: "subscribe", topic: input.topic, awaitRelease: input.awaitRelease, ...groupParam(input.group) })
).pipe(
  Command.withDescription(
    "Subscribe the `intercom watch` of --name to a topic and print its current state; the watch then prints blocker, decision (and with --await-release, release) records."
  )
)

const unsubscribe = Command.make(
  "unsubscribe",
  { ...common, group: homeGroupFlag, topic: topicArgument },
  (input) => runAction(input, { action: "unsubscribe", topic: input.topic, ...groupParam(input.group) })
).pipe(Command.withDescription("End a subscription of the `intercom watch` of --name."))

const topics = Command.make(
  "topics",
  {
    ...common,
    group: homeGroupFlag,
    topic: Argument.String("topic").pipe(Argument.withDescription("Only this topic."), Argument.optional)
  },
  (input) => runAction(input, { action: "topics", topic: Option.getOrUndefined(input.topic), ...groupParam(input.group) })
).pipe(Command.withDescription("Print the current topic records of this session's group, and the subscriptions of --name."))

/**
 * An optional whole-number flag whose range `check` gives (why a value is out
 * of it, or undefined): a value out of range is a bad flag value like one
 * that is no number (exit 2), not a refusal by the session after parsing.
 */
const pageFlag = (name: "offset" | "limit", description: string, check: (n: number) => string | undefined) =>
  Flag.Int(name).pipe(
    Flag.withDescription(description),
    Flag.filter((n) => check(n) === undefined, (n) => `--${check(n) ?? name}`),
    Flag.optional
  )

/** Why a question listing's `offset` or `limit` is out of range (C-DQ-13), or undefined. */
const questionPageProblem = (name: "offset" | "limit") => (n: number): string | undefined => {
  const checked = checkPage({ [name]: n })
  return checked instanceof InvalidQuestionPage ? checked.detail : undefined
}

const results = Command.make(
  "results",
  {
    ...common,
    group: homeGroupFlag,
    offset: pageFlag("offset", "Skip this many of the newest reports (default 0).", checkListOffset),
    limit: pageFlag("limit", "Reports to list, 1 to 50 (default 20).", checkListLimit)
  },
  (input) =>
    runAction(input, {
      action: "results",
      offset: Option.getOrUndefined(input.offset),
      limit: Option.getOrUndefined(input.limit),
      ...groupParam(input.group)
    })
).pipe(
  Command.withDescription(
    "List the archived terminal reports this session may read (its group's, and its children's as a supervisor), newest first, and whether the archive is durable or memory-only."
  )
)

const result = Command.make(
  "result",
  {
    ...common,
    group: homeGroupFlag,
    ref: Argument.String("ref").pipe(
      Argument.withDescription(
        "The report's address, result:<UUID> (see intercom results); or a worker's run handle (run-3) for its live result."
      )
    ),
    offset: pageFlag("offset", "The first UTF-16 code unit of the page, zero-based (default 0).", checkPageOffset),
    limit: pageFlag("limit", "UTF-16 code units in the page, 2 to 100000 (default 20000).", checkPageLimit)
  },
  (input) =>
    runAction(input, {
      action: "result",
      ...resultTarget(input.ref),
      offset: Option.getOrUndefined(input.offset),
      limit: Option.getOrUndefined(input.limit),
      ...groupParam(input.group)
    })
).pipe(
  Command.withDescription(
    "Print one page of an archived report (result:<UUID>): units [offset, offset+limit) of the stored text, its total, and the offset of the next page while text remains. Given a run handle (run-3) instead, print that worker's live output or final result, from the session that supervises it."
  )
)

// Durable supervisor questions (`questions-v1`): the supervisor session they belong to is named with --session.

const ownerFlag = Flag.String("session").pipe(
  Flag.withDescription(
    "The supervisor session id the questions belong to (shown in each question's notice). Questions of other sessions are not listed or changed."
  ),
  Flag.filter((id) => id.trim().length > 0, () => "--session must not be empty")
)

const questionIdArgument = Argument.String("question").pipe(Argument.withDescription("The question id (from `intercom questions` or the notice)."))

const questionsCommand = Command.make(
  "questions",
  {
    ...common,
    owner: ownerFlag,
    offset: pageFlag("offset", "Where the page starts (default 0).", questionPageProblem("offset")),
    limit: pageFlag("limit", "How many questions a page shows, 1–100 (default 20).", questionPageProblem("limit"))
  },
  (input) =>
    runAction(input, {
      action: "questions",
      owner: input.owner.trim(),
      offset: Option.getOrUndefined(input.offset),
      limit: Option.getOrUndefined(input.limit)
    })
).pipe(
  Command.withDescription(
    "List a supervisor session's durable questions, unresolved first (awaiting_input, answer_pending), with previews of at most 2,048 characters."
  )
)

const answerCommand = Command.make(
  "answer",
  { ...common, owner: ownerFlag, question: questionIdArgument, message: messageArgument },
  (input) => runAction(input, { action: "answer", owner: input.owner.trim(), questionId: input.question, message: joined(input.message) })
).pipe(
  Command.withDescription(
    "Save the answer to a durable question and send it to the waiting child. The same answer again changes nothing; a different one is refused. If the child has exited, the answer claims its revival once and prints how to start it."
  )
)

const stopCommand = Command.make(
  "stop",
  {
    ...common,
    owner: Flag.optional(ownerFlag),
    question: Argument.String("question").pipe(
      Argument.withDescription("With --session: the question id (from `intercom questions` or the notice). Without: a worker's run handle (run-3).")
    )
  },
  (input) => runAction(input, { action: "stop", ...stopTarget(input.question, input.owner) })
).pipe(
  Command.withDescription(
    "With --session: cancel a durable question; a child waiting on it stops waiting (Cancelled, never an answer). Without --session: stop the worker of a run handle (run-3)."
  )
)

// Supervised workers (C-WKR-2…10): addressed by the run handle from the delegation receipt, acted on by the
// session that supervises them (the watch of --name, whose host supplies the workers).

const runArgument = Argument.String("run").pipe(
  Argument.withDescription("The worker's run handle from the delegation receipt (run-3); not a bus handle from list.")
)

const peekCommand = Command.make(
  "peek",
  { ...common, run: runArgument },
  (input) => runAction(input, { action: "peek", run: input.run })
).pipe(Command.withDescription("Show a worker's state and current uncertainty without changing anything."))

const steerCommand = Command.make(
  "steer",
  { ...common, run: runArgument, message: messageArgument },
  (input) => runAction(input, { action: "steer", run: input.run, message: joined(input.message) })
).pipe(
  Command.withDescription(
    "Queue an instruction for a running worker. The receipt proves it was accepted, not that the worker acted on it; a settled worker cannot be steered."
  )
)

/** The client subcommands, for the `intercom` root command (program.ts) to add beside `broker`. */
export const clientCommands = [
  list.pipe(Command.provide(cliTelemetry)),
  send.pipe(Command.provide(cliTelemetry)),
  ask.pipe(Command.provide(cliTelemetry)),
  reply.pipe(Command.provide(cliTelemetry)),
  pending.pipe(Command.provide(cliTelemetry)),
  status.pipe(Command.provide(cliTelemetry)),
  watch.pipe(Command.provide(cliTelemetry)),
  publish.pipe(Command.provide(cliTelemetry)),
  subscribe.pipe(Command.provide(cliTelemetry)),
  unsubscribe.pipe(Command.provide(cliTelemetry)),
  topics.pipe(Command.provide(cliTelemetry)),
  results.pipe(Command.provide(cliTelemetry)),
  result.pipe(Command.provide(cliTelemetry)),
  questionsCommand.pipe(Command.provide(cliTelemetry)),
  answerCommand.pipe(Command.provide(cliTelemetry)),
  stopCommand.pipe(Command.provide(cliTelemetry)),
  peekCommand.pipe(Command.provide(cliTelemetry)),
  steerCommand.pipe(Command.provide(cliTelemetry))
] as const
