/**
 * Reading a supervisor's answer to an interview (C-INT-5…9, open question 10).
 * `parseInterviewReply` finds the candidate text — the first fenced block
 * tagged `json` or untagged, else the whole reply — and, when it starts with
 * `{` or `[`, checks it against the interview. The outcome is data, never a
 * throw; `interviewReplyDetails` turns it into the tool result's `details`.
 *
 * Error wording follows Atomic's `intercom-utils.ts`.
 */
import { Predicate, Result } from "effect"
import {
  answerableQuestions,
  type Interview,
  type InterviewQuestion,
  type InterviewReply,
  type InterviewResponse
} from "./interview.ts"

// ---------------------------------------------------------------------------
// The candidate text (C-INT-5)
// ---------------------------------------------------------------------------

/** An opening fence at the start of a line: three or more backticks, then an info string without backticks. */
const OPENING_FENCE = /^[ \t]*(`{3,})[ \t]*([^\s`]*)[^`]*$/

const isClosingFence = (line: string, length: number): boolean => {
  const match = /^[ \t]*(`{3,})[ \t]*$/.exec(line)
  return match !== null && (match[1]?.length ?? 0) >= length
}

/**
 * The content of the first fenced block whose info string is `json` (any
 * case) or empty, or `undefined` when there is none. A fence opens and closes
 * at the start of a line (after any indentation), as in Markdown; a closing
 * fence has at least as many backticks as its opening one; an unclosed block
 * runs to the end. Blocks in other languages are skipped (open question 10).
 *
 * @category interviews
 * @since 0.1.0
 */
export const firstJsonFence = (text: string): string | undefined => {
  const lines = text.split(/\r?\n/)
  let index = 0
  while (index < lines.length) {
    const opening = OPENING_FENCE.exec(lines[index] ?? "")
    index++
    if (opening === null) continue
    const fenceLength = opening[1]?.length ?? 3
    const body: Array<string> = []
    for (; index < lines.length; index++) {
      const line = lines[index] ?? ""
      if (isClosingFence(line, fenceLength)) break
      body.push(line)
    }
    index++
    const info = (opening[2] ?? "").toLowerCase()
    if (info === "" || info === "json") return body.join("\n")
  }
  return undefined
}

/**
 * The text a reply is parsed from: the first `json` or untagged fenced block,
 * else the whole reply, trimmed (C-INT-5).
 *
 * @category interviews
 * @since 0.1.0
 */
export const replyCandidate = (reply: string): string => (firstJsonFence(reply) ?? reply).trim()

// ---------------------------------------------------------------------------
// Checking the responses (C-INT-6, C-INT-8, C-INT-9)
// ---------------------------------------------------------------------------

const isStringArray = (value: unknown): value is ReadonlyArray<string> =>
  Array.isArray(value) && value.every((item) => typeof item === "string")

/** The normalized value of one response to `question`, or why it is wrong. */
const answerValue = (at: string, question: InterviewQuestion, value: unknown): Result.Result<InterviewResponse["value"], string> => {
  switch (question.type) {
    case "single": {
      if (typeof value !== "string") return Result.fail(`${at}.value must be a string for single questions`)
      const label = value.trim()
      return question.options.includes(label)
        ? Result.succeed(label)
        : Result.fail(`${at}.value must match one of the question options`)
    }
    case "multi": {
      if (!isStringArray(value)) return Result.fail(`${at}.value must be an array of strings for multi questions`)
      const labels = value.map((item) => item.trim())
      const stray = labels.find((label) => !question.options.includes(label))
      return stray === undefined
        ? Result.succeed(labels)
        : Result.fail(`${at}.value contains an option that is not in the question options: ${stray}`)
    }
    default:
      return typeof value === "string"
        ? Result.succeed(value)
        : Result.fail(`${at}.value must be a string for ${question.type} questions`)
  }
}

/**
 * Checks parsed reply JSON against the interview (C-INT-6, C-INT-8): an
 * object with a `responses` array; each response an object whose trimmed `id`
 * names a non-`info` question, at most once, with a `value` of the right
 * shape. Values come back normalized (option labels trimmed). Not every
 * question needs an answer (C-INT-9). The first violation is the error.
 *
 * @category interviews
 * @since 0.1.0
 */
export const validateInterviewReply = (json: unknown, interview: Interview): Result.Result<InterviewReply, string> => {
  if (!Predicate.isReadonlyObject(json)) return Result.fail("reply JSON must be an object with a responses array")
  const input = json["responses"]
  if (!Array.isArray(input)) return Result.fail("reply JSON must include a responses array")
  const answerable = new Map(answerableQuestions(interview).map((question) => [question.id, question]))
  const seen = new Set<string>()
  const responses: Array<InterviewResponse> = []
  for (const [index, response] of input.entries()) {
    const at = `responses[${index}]`
    if (!Predicate.isReadonlyObject(response)) return Result.fail(`${at} must be an object`)
    const rawId = response["id"]
    if (typeof rawId !== "string" || rawId.trim() === "") return Result.fail(`${at}.id must be a non-empty string`)
    const id = rawId.trim()
    const question = answerable.get(id)
    if (question === undefined) return Result.fail(`${at}.id must match a non-info interview question id`)
    if (seen.has(id)) return Result.fail(`${at}.id is duplicated: ${id}`)
    seen.add(id)
    if (!Object.hasOwn(response, "value")) return Result.fail(`${at}.value is required`)
    const value = answerValue(at, question, response["value"])
    if (Result.isFailure(value)) return Result.fail(value.failure)
    responses.push({ id, value: value.success })
  }
  return Result.succeed({ responses })
}

// ---------------------------------------------------------------------------
// The outcome and the tool details (C-INT-7, open question 10)
// ---------------------------------------------------------------------------

/**
 * What a reply to an interview is:
 * - `Unstructured` — the candidate does not start with `{` or `[`: plain prose, no error (C-INT-5);
 * - `Answered` — a valid reply, with the non-`info` ids it leaves unanswered, in question order (C-INT-9);
 * - `Invalid` — it looks like JSON but is not a valid reply; `reason` says why.
 *
 * @category models
 * @since 0.1.0
 */
export type InterviewReplyOutcome =
  | { readonly _tag: "Unstructured" }
  | { readonly _tag: "Answered"; readonly reply: InterviewReply; readonly unansweredIds: ReadonlyArray<string> }
  | { readonly _tag: "Invalid"; readonly reason: string }

const parseJson = (candidate: string): Result.Result<unknown, string> =>
  Result.try({
    try: (): unknown => JSON.parse(candidate),
    catch: (error) => `reply is not valid JSON: ${error instanceof Error ? error.message : String(error)}`
  })

/**
 * Parses the supervisor's reply text against the interview it answers (C-INT-5…9).
 *
 * @example
 * ```ts
 * import { parseInterviewReply } from "effect-intercom/session"
 *
 * // interview: [api] (single) with options "Stable API", "Experimental API"; [notes] (text)
 * parseInterviewReply('```json\n{ "responses": [{ "id": "api", "value": " Stable API " }] }\n```', interview)
 * // { _tag: "Answered", reply: { responses: [{ id: "api", value: "Stable API" }] }, unansweredIds: ["notes"] }
 * parseInterviewReply("Use the stable one.", interview) // { _tag: "Unstructured" }
 * ```
 *
 * @category interviews
 * @since 0.1.0
 */
export const parseInterviewReply = (reply: string, interview: Interview): InterviewReplyOutcome => {
  const candidate = replyCandidate(reply)
  if (!candidate.startsWith("{") && !candidate.startsWith("[")) return { _tag: "Unstructured" }
  const json = parseJson(candidate)
  const checked = Result.isSuccess(json) ? validateInterviewReply(json.success, interview) : Result.fail(json.failure)
  if (Result.isFailure(checked)) return { _tag: "Invalid", reason: checked.failure }
  const answered = new Set(checked.success.responses.map((response) => response.id))
  return {
    _tag: "Answered",
    reply: checked.success,
    unansweredIds: answerableQuestions(interview).map((question) => question.id).filter((id) => !answered.has(id))
  }
}

/**
 * The `details` an interview reply adds to the child's tool result (C-INT-7):
 * nothing for prose; `structuredReply` (plus `unansweredIds` when some
 * non-`info` questions went unanswered, open question 10); or
 * `structuredReplyParseError`. The visible text stays the raw reply.
 *
 * @category models
 * @since 0.1.0
 */
export interface InterviewReplyDetails {
  readonly structuredReply?: InterviewReply
  readonly unansweredIds?: ReadonlyArray<string>
  readonly structuredReplyParseError?: string
}

/**
 * The tool-result `details` for an outcome (C-INT-7).
 *
 * @category interviews
 * @since 0.1.0
 */
export const interviewReplyDetails = (outcome: InterviewReplyOutcome): InterviewReplyDetails => {
  switch (outcome._tag) {
    case "Unstructured":
      return {}
    case "Invalid":
      return { structuredReplyParseError: outcome.reason }
    case "Answered":
      return outcome.unansweredIds.length === 0
        ? { structuredReply: outcome.reply }
        : { structuredReply: outcome.reply, unansweredIds: outcome.unansweredIds }
  }
}
