/**
 * The supervisor's side of durable questions in the `intercom` tool
 * (`questions-v1`, C-DQ-4…5, 10…15): `questions` (one page, unresolved
 * first), `question` (one in full: where pi's files had questionPath and
 * answerPath), `answer` and `stop`. Every receipt says whether the broker's
 * store is durable or memory-only, and an answer to an exited child hands its
 * revival to the `QuestionReviver` port when this call claimed it (C-DQ-10),
 * else prints the exact call to recover it (C-DQ-12).
 */
import { Effect, Option } from "effect"
import type { QuestionOwner } from "../client/ClientQuestions.ts"
import type { IntercomClientService } from "../client/models.ts"
import type { QuestionPageWire, QuestionReceiptWire, QuestionRecordWire, QuestionSummaryWire } from "../protocol/questions.ts"
import { MissingQuestionParam } from "./errors.ts"
import type { ToolAction } from "./IntercomTool.ts"
import type { IntercomToolParams, ToolResult } from "./models.ts"
import { QuestionReviver, type Revival } from "./QuestionReviver.ts"

const ok = (text: string, details: Record<string, unknown>): ToolResult => ({ text, isError: false, details })

const ownerOf = (params: IntercomToolParams): QuestionOwner => params.owner === undefined ? {} : { owner: params.owner }

const at = (ms: number): string => new Date(ms).toISOString()

const memoryNote = (durable: boolean): string => durable ? "" : " (memory-only: the broker keeps no database; lost if it restarts)"

const firstLine = (text: string): string => {
  const body = text.split("\n\n").slice(1).join(" ").trim() || text
  const line = body.replace(/\s+/g, " ")
  return line.length > 160 ? `${line.slice(0, 160)}…` : line
}

/**
 * One row of a listing.
 *
 * @category rendering
 * @since 0.1.0
 */
export const renderSummary = (q: QuestionSummaryWire): string =>
  [
    `- ${q.id} · ${q.state} · ${q.reason} · ${q.childName} · ${at(q.createdAt)}`,
    `  ${firstLine(q.message)}${q.messageTruncated ? " (preview cut; read it whole with action question)" : ""}`,
    ...(q.answer === undefined ? [] : [`  answer: ${firstLine(q.answer)}${q.answerTruncated === true ? " (cut)" : ""}`])
  ].join("\n")

/**
 * A page of questions as text (C-DQ-13).
 *
 * @category rendering
 * @since 0.1.0
 */
export const renderPage = (page: QuestionPageWire): string => {
  if (page.total === 0) return "No questions."
  if (page.questions.length === 0) return `No questions at offset ${page.offset} (${page.total} in all).`
  const range = `${page.offset + 1}–${page.offset + page.questions.length} of ${page.total}`
  const more = page.nextOffset === undefined ? "" : ` (more: offset ${page.nextOffset})`
  return [`Questions ${range}${more}:`, ...page.questions.map(renderSummary)].join("\n")
}

/**
 * One question in full.
 *
 * @category rendering
 * @since 0.1.0
 */
export const renderQuestion = (q: QuestionRecordWire): string =>
  [
    `Question ${q.id} · ${q.state} · ${q.reason} · from ${q.childName} (${q.childId}) · ${at(q.createdAt)}`,
    "",
    q.message,
    ...(q.answer === undefined ? [] : ["", `Answer (${at(q.answeredAt ?? q.createdAt)}):`, q.answer])
  ].join("\n")

/** The text of an answer receipt, after any revival was handed on. */
const answerText = (receipt: QuestionReceiptWire, revived: string | undefined): string => {
  const q = receipt.question
  const note = memoryNote(receipt.durable)
  if (!receipt.saved) {
    return `Question ${q.id} already has this answer (saved ${at(q.answeredAt ?? q.createdAt)}); nothing changed${note}.` +
      (revived === undefined ? "" : ` ${revived}`)
  }
  if (receipt.sentToChild) {
    return `Answer saved for question ${q.id} and sent to ${q.childName}; it counts as answered once the child confirms${note}.`
  }
  if (revived !== undefined) return `Answer saved for question ${q.id}${note}. ${revived}`
  return `Answer saved for question ${q.id}${note}; ${q.childName} is not connected and gets it when it asks again.`
}

/**
 * The question tool actions over a client; `reviver` launches a claimed
 * revival (none: the result says how to recover by hand).
 *
 * @category constructors
 * @since 0.1.0
 */
export const questionToolActions = (
  client: IntercomClientService,
  reviver: Option.Option<QuestionReviver["Service"]>
): ReadonlyMap<string, ToolAction> => {
  const questionIdOf = (params: IntercomToolParams) =>
    params.questionId === undefined || params.questionId.trim() === ""
      ? Effect.fail(new MissingQuestionParam({ action: params.action, param: "questionId" }))
      : Effect.succeed(params.questionId.trim())

  /** C-DQ-10/12: launch only what this answer claimed; otherwise say how to recover. */
  const revive = (receipt: QuestionReceiptWire): Effect.Effect<string | undefined> => {
    const revival = receipt.revival
    if (revival === undefined) return Effect.succeed(undefined)
    if (!revival.claimed) {
      return Effect.succeed(
        `${receipt.question.childName} had exited; its revival ${revival.runId} was claimed before and is not launched again. ` +
          `If it did not start, recover it with: ${revival.recover}`
      )
    }
    const request: Revival = {
      runId: revival.runId,
      questionId: receipt.question.id,
      childId: revival.childId,
      childName: revival.childName,
      answer: receipt.question.answer ?? ""
    }
    return Option.match(reviver, {
      onNone: () =>
        Effect.succeed(
          `${revival.childName} had exited; revival ${revival.runId} is claimed, but this host has no launcher. ` +
            `Start it with: ${revival.recover}`
        ),
      onSome: (launcher) =>
        launcher.revive(request).pipe(
          Effect.as(`${revival.childName} had exited; revival ${revival.runId} was handed to the launcher.`),
          Effect.catch((error) => Effect.succeed(`${error.message}. Recover it with: ${revival.recover}`))
        )
    })
  }

  return new Map<string, ToolAction>([
    ["questions", (params) =>
      Effect.map(
        client.listQuestions({ offset: params.offset, limit: params.limit, ...ownerOf(params) }),
        (page) => ok(renderPage(page), { ...page })
      )],
    ["question", (params) =>
      Effect.flatMap(questionIdOf(params), (questionId) =>
        Effect.map(client.getQuestion(questionId, ownerOf(params)), (question) => ok(renderQuestion(question), { question })))],
    ["answer", (params) =>
      Effect.gen(function*() {
        const questionId = yield* questionIdOf(params)
        const text = params.message ?? ""
        if (text.trim() === "") return yield* new MissingQuestionParam({ action: "answer", param: "message" })
        const receipt = yield* client.answerQuestion(questionId, text, ownerOf(params))
        const revived = yield* revive(receipt)
        return ok(answerText(receipt, revived), { ...receipt })
      })],
    ["stop", (params) =>
      Effect.gen(function*() {
        const questionId = yield* questionIdOf(params)
        const receipt = yield* client.stopQuestion(questionId, ownerOf(params))
        const text = receipt.saved
          ? `Question ${questionId} cancelled${receipt.sentToChild ? `; ${receipt.question.childName}'s wait was stopped` : ""}${
            memoryNote(receipt.durable)
          }.`
          : `Question ${questionId} was already cancelled.`
        return ok(text, { ...receipt })
      })]
  ])
}

/**
 * The question tool actions, with the `QuestionReviver` the host supplied, if any.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeQuestionToolActions = (
  client: IntercomClientService
): Effect.Effect<ReadonlyMap<string, ToolAction>> =>
  Effect.map(Effect.serviceOption(QuestionReviver), (reviver) => questionToolActions(client, reviver))
