/**
 * The tool adapter: `intercom(params)`, the whole `intercom` tool in one call
 * (C-TOOL-1, C-TOOL-12). It checks the parameters once, calls the action,
 * and renders the result as `{ text, isError, details }`; every failure
 * becomes an error result, never a failed Effect.
 *
 * Actions are looked up in a table, so a new concern adds its actions to the
 * table in the wiring without touching this module.
 */
import { Effect } from "effect"
import type { Attachment } from "../protocol/frames.ts"
import { type IntercomSessionError, InvalidScope, UnknownAction } from "./errors.ts"
import type { Actions } from "./Actions.ts"
import type { Asking } from "./Ask.ts"
import type { IntercomToolParams, Sent, ToolResult } from "./IntercomSession.ts"
import { isListScope, type ListScope } from "./project.ts"
import type { PendingAsk } from "./ReplyTracker.ts"
import { parseSupervisorMessage } from "./supervisorMessages.ts"
import { withoutEmptyText } from "./toolParams.ts"
import { checkOutgoing, checkReplyError, replyBody } from "./validation.ts"

/**
 * One action of the tool: the parameters in, a result (or the session error
 * that `intercom` turns into an error result) out.
 *
 * @category models
 * @since 0.1.0
 */
export type ToolAction = (params: IntercomToolParams) => Effect.Effect<ToolResult, IntercomSessionError>

const ok = (text: string, details: Record<string, unknown>): ToolResult => ({ text, isError: false, details })

/**
 * The error result of a session error: its message verbatim, `isError`, and
 * `details: { error: "<_tag>", code?, replyId?, from? }` — the error kind,
 * the broker's `E_…` code when there is one, and for a failure reply
 * (`ReplyFailed`) the reply's id and its sender's session id, so a host's
 * history names the reply it holds (`InboundJournal.handled`).
 *
 * @category rendering
 * @since 0.1.0
 */
export const errorResult = (error: IntercomSessionError): ToolResult => ({
  text: error.message,
  isError: true,
  details: {
    error: error._tag,
    ...((error._tag === "NotDelivered" || error._tag === "AskNoLongerOpen") && error.code !== undefined ? { code: error.code } : {}),
    ...(error._tag === "ReplyFailed" ? { replyId: error.reply.id, from: error.fromId } : {})
  }
})

const sentDetails = (sent: Sent): Record<string, unknown> => ({
  messageId: sent.messageId,
  delivered: sent.delivery === "socket_delivered",
  queued: sent.delivery === "queued" || sent.delivery === "staged",
  ...(sent.delivery === "staged" ? { staged: true, threadId: sent.threadId } : {}),
  ...(sent.targetId === undefined ? {} : { targetId: sent.targetId }),
  ...(sent.replyTo === undefined ? {} : { replyTo: sent.replyTo }),
  ...(sent.deliveredBeforeLoss === true ? { deliveredBeforeLoss: true } : {}),
  ...(sent.reason === undefined ? {} : { reason: sent.reason, reasonCode: sent.reasonCode, replied: sent.replied })
})

/**
 * The delivery parameters of a call (C-DLV-1…4), passed on as given: the
 * action checks them (`checkDeliveryChoice`) before anything is sent, so
 * `passive` on an ask or a reply is refused there, not dropped here.
 */
const modesOf = (params: IntercomToolParams) => ({
  delivery: params.delivery,
  queueMode: params.queueMode,
  threadId: params.threadId,
  passive: params.passive
})

/**
 * Checks an outgoing message's parameters once (a missing `to` or `message`
 * counts as empty), then runs `act` with the checked values.
 */
const checked = (
  params: IntercomToolParams,
  needsTo: boolean,
  act: (
    to: string,
    message: string,
    attachments: ReadonlyArray<Attachment> | undefined
  ) => Effect.Effect<ToolResult, IntercomSessionError>
): Effect.Effect<ToolResult, IntercomSessionError> => {
  const to = params.to ?? ""
  const message = params.message ?? ""
  return Effect.flatMap(checkOutgoing({ ...params, to, message }, needsTo), (attachments) => act(to, message, attachments))
}

/** The `scope` parameter of `list` / `status`, or the session's default (C-TOOL-16). */
const scopeOf = (params: IntercomToolParams, fallback: ListScope): Effect.Effect<ListScope, InvalidScope> => {
  const scope = params.scope
  if (scope === undefined) return Effect.succeed(fallback)
  return isListScope(scope) ? Effect.succeed(scope) : Effect.fail(new InvalidScope({ value: scope }))
}

/**
 * One `pending` row in `details`: who asked, which message, when it was
 * received, asked and expires (epoch ms, this session's clock); for a
 * delegated child's question (marked by the broker, C-SUP-13) also its
 * supervisor fields — run id, agent, child target and index, reason and the
 * question (C-SUP-19).
 */
const pendingDetail = (context: PendingAsk) => {
  const row = {
    from: context.from.id,
    messageId: context.message.id,
    receivedAt: context.receivedAt,
    askedAt: context.askedAt,
    expiresAt: context.expiresAt
  }
  const parsed = context.channel === "supervisor" ? parseSupervisorMessage(context.message.content.text) : undefined
  if (parsed === undefined) return row
  return {
    ...row,
    supervisor: {
      reason: parsed.reason,
      runId: parsed.runId,
      agent: parsed.agent,
      childIndex: parsed.index,
      childTarget: context.from.name?.trim() || parsed.sessionName || context.from.id,
      question: parsed.body
    }
  }
}

/**
 * The six base actions (list/send/ask/reply/pending/status) as tool actions;
 * `list` and `status` show `defaultScope` unless the call names a `scope`.
 * `send`, `ask` and `reply` check their parameters here, once, and call the
 * actions' `…Checked` variants.
 *
 * @category constructors
 * @since 0.1.0
 */
export const baseToolActions = (
  actions: Actions,
  asking: Asking,
  defaultScope: ListScope = "all"
): ReadonlyMap<string, ToolAction> =>
  new Map<string, ToolAction>([
    ["list", (params) =>
      Effect.flatMap(scopeOf(params, defaultScope), (scope) =>
        Effect.map(
          actions.listIn(scope),
          (result) => ok(result.text, { sessionId: result.self.id, sessions: result.sessions })
        ))],
    ["send", (params) =>
      checked(params, true, (to, message, attachments) =>
        Effect.map(actions.sendChecked({ to, message, replyTo: params.replyTo, ...modesOf(params) }, attachments), (result) =>
          result._tag === "Declined" ? ok(result.text, { cancelled: true }) : ok(result.text, sentDetails(result))))],
    ["ask", (params) =>
      checked(params, true, (to, message, attachments) =>
        Effect.map(asking.askChecked({ to, message, timeoutMs: params.timeoutMs, ...modesOf(params) }, attachments), (result) =>
          result._tag === "Sent"
            ? ok(result.text, sentDetails(result))
            : ok(result.text, { messageId: result.questionId, replyId: result.reply.id, from: result.from.id })))],
    ["reply", (params) => {
      // C-ASK-7: `replyError` answers the ask with a failure; its text is the body when `message` is left out.
      const invalid = checkReplyError(params.replyError)
      if (invalid !== undefined) return Effect.fail(invalid)
      const { replyError } = params
      return checked({ ...params, message: replyBody(params.message, replyError) }, false, (_to, message, attachments) =>
        Effect.map(
          actions.replyChecked({ message, to: params.to, replyTo: params.replyTo, replyError, ...modesOf(params) }, attachments),
          (result) => ok(result.text, { ...sentDetails(result), ...(replyError === undefined ? {} : { replyError: true }) })
        ))
    }],
    ["pending", () =>
      Effect.map(actions.pending, (result) =>
        ok(result.text, { asks: result.asks.map(pendingDetail) }))],
    ["status", (params) =>
      Effect.flatMap(scopeOf(params, defaultScope), (scope) =>
        Effect.map(actions.statusIn(scope), (result) =>
          ok(result.text, { connected: true, sessionId: result.sessionId, activeSessions: result.activeSessions })))]
  ])

/**
 * The `intercom` tool over a table of actions: `Unknown action: <x>` for a
 * name not in it, and every failure as an error result (`errorResult`). An
 * optional text parameter given as `""` is absent (`withoutEmptyText`), for
 * every action and every caller.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeIntercomTool = (
  table: ReadonlyMap<string, ToolAction>
): (params: IntercomToolParams) => Effect.Effect<ToolResult> =>
(written) => {
  const params = withoutEmptyText(written)
  const action = table.get(params.action)
  return (action === undefined ? Effect.fail(new UnknownAction({ action: params.action })) : action(params)).pipe(
    Effect.catch((error) => Effect.succeed(errorResult(error)))
  )
}
