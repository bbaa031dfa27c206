/**
 * The short-lived client commands (`list`, `send`, `ask`, `reply`, `pending`,
 * `status`): one action, one result, one exit code.
 *
 * The action runs in the `intercom watch` of the same name when one is
 * running (its session is the one that was asked and holds the reply
 * tracker; see control.ts), else in a session of its own: registered with a
 * fresh random id, connected (spawning the broker if needed), and
 * unregistered when the command ends.
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import { randomUUID } from "node:crypto"
import { headless } from "../../session/Host.ts"
import type { IntercomToolParams, ToolResult } from "../../session/IntercomSession.ts"
import { EXIT_FAILURE, ExitCode } from "../exit.ts"
import { terminalJson, terminalText } from "../terminalText.ts"
import { delegate } from "./control.ts"
import { errorResult, exitCodeOf, inboundJson, inboundText, printResult, unprintedResultText } from "./output.ts"
import { type CliContext, type CommonInput, openSession, resolveContext, withCommandReplyCalls } from "./session.ts"

/**
 * The session's contract texts, with what the command line adds to them:
 * after `Missing 'to' or 'message' parameter` (C-TOOL-2) for a command line
 * that did give `<to>`, that the message is what is empty; after `Reply peer
 * disconnected before answering: <id>` (C-ASK-9), the name the ask went to.
 */
const withCliHints = (params: IntercomToolParams, result: ToolResult): ToolResult => {
  const to = params.to?.trim() ?? ""
  if (to === "") return result
  switch (result.details["error"]) {
    case "MissingParameter":
      return { ...result, text: `${result.text}: the message after "${to}" is empty; give its text.` }
    case "ReplyPeerDisconnected":
      return { ...result, text: `${result.text}. "${to}" left the intercom before it answered.` }
    default:
      return result
  }
}

/**
 * Ends the command: prints `result` and exits with its code; exit 1, with
 * why on stderr, when stdout did not take the result.
 */
const finish = (
  input: CommonInput,
  params: IntercomToolParams,
  result: ToolResult,
  via: "session" | "watch"
): Effect.Effect<void, ExitCode> =>
  Effect.gen(function*() {
    const shown = withCliHints(params, result)
    yield* printResult(input.json, params, shown, via).pipe(
      Effect.catchTag("StdoutWriteFailed", (error) =>
        Console.error(unprintedResultText(params, shown, error)).pipe(
          Effect.andThen(Effect.fail(new ExitCode({ code: EXIT_FAILURE })))
        ))
    )
    const code = exitCodeOf(shown)
    if (code !== 0) return yield* new ExitCode({ code })
  })

/**
 * Why a command that ran through a watch may not message the target: the
 * watch is the session that acts, and the target is that session itself
 * (typically a default-name watch, `cli-<user>`, and a default-name `send
 * cli-<user> …` from another terminal).
 */
const throughOwnWatchHint = (name: string, input: CommonInput, params: IntercomToolParams): string =>
  `This command ran through the running \`intercom watch\` named "${name}" (${
    Option.isSome(input.name) ? "its --name" : "the default name of this user"
  }), so it acts as that session, and ${
    params.to === undefined ? "its target" : `"${params.to}"`
  } is that session itself. To message the watch, pass --name with another name: \`intercom ${params.action} --name <another name> …\`.`

/**
 * One action in a session of this process. Messages that reach it meanwhile
 * (say, while `ask` waits) are shown on stderr rather than dropped.
 */
const runInOwnSession = (context: CliContext, params: IntercomToolParams, json: boolean): Effect.Effect<ToolResult> =>
  Effect.scoped(
    Effect.gen(function*() {
      const host = headless(context.identity, (inbound) =>
        Console.error(
          json
            ? terminalJson(inboundJson(inbound))
            : terminalText(inboundText(inbound.from, inbound.message, inbound.expectsReply))
        ))
      const { session } = yield* openSession(context, { sessionId: randomUUID(), host, inboundTrigger: "never", ephemeral: true })
      return yield* session.intercom(params)
    })
  )

/** Runs one client action as `intercom <action>` does. */
export const runAction = (
  input: CommonInput,
  params: IntercomToolParams
): Effect.Effect<void, ExitCode, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const context = yield* Effect.result(resolveContext(input))
    if (context._tag === "Failure") {
      return yield* finish(input, params, errorResult(context.failure._tag, context.failure.message), "session")
    }
    if (Option.isSome(context.success.control)) {
      const delegated = yield* Effect.result(delegate(context.success.control.value.socketPath, context.success.name, params))
      if (delegated._tag === "Failure") {
        return yield* finish(input, params, errorResult(delegated.failure._tag, delegated.failure.message), "watch")
      }
      if (Option.isSome(delegated.success)) {
        const result = delegated.success.value
        // `pending`'s reply lines as this command would write them (its --dir), not as the watch did.
        const shown = params.action === "pending" && !result.isError
          ? { ...result, text: withCommandReplyCalls(result.text, context.success) }
          : result.details["error"] === "SelfTargetRefused"
          ? { ...result, text: `${result.text}. ${throughOwnWatchHint(context.success.name, input, params)}` }
          : result
        return yield* finish(input, params, shown, "watch")
      }
    }
    const result = yield* runInOwnSession(context.success, params, input.json)
    return yield* finish(input, params, result, "session")
  })
