/**
 * Supervisor interviews (C-INT-1…4, C-INT-8): the structured questions a
 * delegated child sends with `contact_supervisor({ reason: "interview_request" })`.
 * `validateInterview` turns the raw `interview` parameter into an `Interview`
 * or an `InvalidInterview` (never a throw); `renderInterview` is the text the
 * supervisor reads, ending with a reply example. Reading the supervisor's
 * answer is `interviewReply.ts`.
 *
 * The wording of every detail and of the reply instructions follows Atomic's
 * `intercom-utils.ts`, so an agent prompted for one behaves the same with the
 * other.
 */
import { Data, Predicate, Result } from "effect"

// ---------------------------------------------------------------------------
// Model
// ---------------------------------------------------------------------------

/**
 * The question types, in the order the error detail lists them (C-INT-2).
 *
 * @category interviews
 * @since 0.1.0
 */
export const INTERVIEW_QUESTION_TYPES = ["single", "multi", "text", "image", "info"] as const

/**
 * One of `INTERVIEW_QUESTION_TYPES`. `info` is context only and takes no answer (C-INT-8).
 *
 * @category models
 * @since 0.1.0
 */
export type InterviewQuestionType = (typeof INTERVIEW_QUESTION_TYPES)[number]

/**
 * What every question has: a trimmed unique `id`, the trimmed `question`, and
 * optional trimmed `context` (left out when blank).
 *
 * @category models
 * @since 0.1.0
 */
export interface InterviewQuestionBase {
  readonly id: string
  readonly question: string
  readonly context?: string | undefined
}

/**
 * A `single` or `multi` question: the answer is one option label, or an array of them (C-INT-3, C-INT-6).
 *
 * @category models
 * @since 0.1.0
 */
export interface ChoiceQuestion extends InterviewQuestionBase {
  readonly type: "single" | "multi"
  /** The trimmed option labels (a string option is its own label). */
  readonly options: readonly [string, ...Array<string>]
}

/**
 * A `text`, `image` or `info` question: no options (C-INT-3).
 *
 * @category models
 * @since 0.1.0
 */
export interface OpenQuestion extends InterviewQuestionBase {
  readonly type: "text" | "image" | "info"
}

/**
 * One validated interview question.
 *
 * @category models
 * @since 0.1.0
 */
export type InterviewQuestion = ChoiceQuestion | OpenQuestion

/**
 * A validated interview: trimmed `title` and `description` (left out when
 * blank) and at least one question.
 *
 * @category models
 * @since 0.1.0
 */
export interface Interview {
  readonly title?: string | undefined
  readonly description?: string | undefined
  readonly questions: readonly [InterviewQuestion, ...Array<InterviewQuestion>]
}

/**
 * The value of one answer: an option label (`single`), option labels
 * (`multi`), or a string (`text`, `image`) (C-INT-6).
 *
 * @category models
 * @since 0.1.0
 */
export type InterviewAnswer = string | ReadonlyArray<string>

/**
 * One answer of a structured reply.
 *
 * @category models
 * @since 0.1.0
 */
export interface InterviewResponse {
  readonly id: string
  readonly value: InterviewAnswer
}

/**
 * A structured reply, `{ responses: [{ id, value }] }` (C-INT-6, C-INT-7).
 *
 * @category models
 * @since 0.1.0
 */
export interface InterviewReply {
  readonly responses: ReadonlyArray<InterviewResponse>
}

/**
 * `Invalid interview request: <detail>`: the `interview` parameter breaks
 * C-INT-1…3, and nothing is sent.
 *
 * @category errors
 * @since 0.1.0
 */
export class InvalidInterview extends Data.TaggedError("InvalidInterview")<{
  /** What is wrong, e.g. `interview.questions must be a non-empty array`. */
  readonly detail: string
}> {
  override get message(): string {
    return `Invalid interview request: ${this.detail}`
  }
}

// ---------------------------------------------------------------------------
// Validation (C-INT-1…3)
// ---------------------------------------------------------------------------

const isFilledString = (value: unknown): value is string => typeof value === "string" && value.trim() !== ""

const isQuestionType = (value: unknown): value is InterviewQuestionType =>
  INTERVIEW_QUESTION_TYPES.some((type) => type === value)

const isChoiceType = (type: InterviewQuestionType): type is ChoiceQuestion["type"] =>
  type === "single" || type === "multi"

const isNonEmpty = <A>(items: ReadonlyArray<A>): items is readonly [A, ...Array<A>] => items.length > 0

const trimmedOrUndefined = (value: string | undefined): string | undefined => {
  const trimmed = value?.trim()
  return trimmed === undefined || trimmed === "" ? undefined : trimmed
}

const invalid = (detail: string) => Result.fail(new InvalidInterview({ detail }))

/** The trimmed labels of `options`, or the detail of the first bad one. */
const optionLabels = (at: string, options: unknown): Result.Result<ReadonlyArray<string>, InvalidInterview> => {
  if (!Array.isArray(options)) return invalid(`${at}.options must be an array when provided`)
  const labels: Array<string> = []
  for (const [index, option] of options.entries()) {
    if (typeof option === "string") {
      if (option.trim() === "") return invalid(`${at}.options[${index}] must not be empty`)
      labels.push(option.trim())
    } else if (Predicate.isReadonlyObject(option) && isFilledString(option["label"])) {
      labels.push(option["label"].trim())
    } else {
      return invalid(`${at}.options[${index}] must be a non-empty string or an object with a non-empty label`)
    }
  }
  return Result.succeed(labels)
}

const validateQuestion = (
  index: number,
  input: unknown,
  seen: ReadonlySet<string>
): Result.Result<InterviewQuestion, InvalidInterview> => {
  const at = `interview.questions[${index}]`
  if (!Predicate.isReadonlyObject(input)) return invalid(`${at} must be an object`)
  const { id, type, question, context, options } = input
  if (!isFilledString(id)) return invalid(`${at}.id must be a non-empty string`)
  if (seen.has(id.trim())) return invalid(`interview question id must be unique: ${id.trim()}`)
  if (!isQuestionType(type)) return invalid(`${at}.type must be one of: ${INTERVIEW_QUESTION_TYPES.join(", ")}`)
  if (!isFilledString(question)) return invalid(`${at}.question must be a non-empty string`)
  if (context !== undefined && typeof context !== "string") return invalid(`${at}.context must be a string when provided`)
  const labels = options === undefined ? undefined : optionLabels(at, options)
  if (labels !== undefined && Result.isFailure(labels)) return Result.fail(labels.failure)
  const base = { id: id.trim(), question: question.trim(), context: trimmedOrUndefined(context) }
  if (isChoiceType(type)) {
    if (labels === undefined || !isNonEmpty(labels.success)) {
      return invalid(`${at}.options must be a non-empty array for ${type} questions`)
    }
    return Result.succeed({ ...base, type, options: labels.success })
  }
  if (labels !== undefined) return invalid(`${at}.options is only valid for single and multi questions`)
  return Result.succeed({ ...base, type })
}

/**
 * Checks the raw `interview` parameter (C-INT-1…3) and normalizes it: ids,
 * questions, titles and option labels trimmed; object options reduced to
 * their label; blank optional texts left out. The first violation is the
 * error, as in Atomic.
 *
 * @example
 * ```ts
 * import { validateInterview } from "effect-intercom/session"
 *
 * validateInterview({ questions: [{ id: " api ", type: "single", question: "Which API?", options: ["Stable"] }] })
 * // Success: { questions: [{ id: "api", type: "single", question: "Which API?", options: ["Stable"] }] }
 * validateInterview({ questions: [] })
 * // Failure: Invalid interview request: interview.questions must be a non-empty array
 * ```
 *
 * @category interviews
 * @since 0.1.0
 */
export const validateInterview = (input: unknown): Result.Result<Interview, InvalidInterview> => {
  if (!Predicate.isReadonlyObject(input)) return invalid("interview must be an object with a questions array")
  const { title, description, questions } = input
  if (title !== undefined && typeof title !== "string") return invalid("interview.title must be a string when provided")
  if (description !== undefined && typeof description !== "string") {
    return invalid("interview.description must be a string when provided")
  }
  if (!Array.isArray(questions) || questions.length === 0) return invalid("interview.questions must be a non-empty array")
  const seen = new Set<string>()
  const validated: Array<InterviewQuestion> = []
  for (const [index, question] of questions.entries()) {
    const result = validateQuestion(index, question, seen)
    if (Result.isFailure(result)) return Result.fail(result.failure)
    seen.add(result.success.id)
    validated.push(result.success)
  }
  // Cannot fail (questions is non-empty); it narrows `validated` to a non-empty tuple without a cast.
  if (!isNonEmpty(validated)) return invalid("interview.questions must be a non-empty array")
  return Result.succeed({
    title: trimmedOrUndefined(title),
    description: trimmedOrUndefined(description),
    questions: validated
  })
}

// ---------------------------------------------------------------------------
// Rendering (C-INT-4)
// ---------------------------------------------------------------------------

/**
 * The paragraph that tells the supervisor how to answer (C-INT-4).
 *
 * @category interviews
 * @since 0.1.0
 */
export const INTERVIEW_REPLY_INSTRUCTIONS =
  "Reply with plain JSON or a fenced ```json block using this stable shape. Use the question ids exactly. " +
  "Info questions are context-only and do not need responses. For single questions, value is one option label. " +
  "For multi questions, value is an array of option labels. For text/image questions, value is a string."

const exampleValue = (question: InterviewQuestion): InterviewAnswer => {
  switch (question.type) {
    case "single":
      return question.options[0]
    case "multi":
      return question.options.slice(0, 2)
    case "image":
      return "image/file reference or description"
    default:
      return "answer text"
  }
}

/**
 * The questions that take an answer: every question but `info`, in order (C-INT-8).
 *
 * @category interviews
 * @since 0.1.0
 */
export const answerableQuestions = (interview: Interview): ReadonlyArray<InterviewQuestion> =>
  interview.questions.filter((question) => question.type !== "info")

/**
 * The reply example shown to the supervisor: one response per non-`info`
 * question, in order — the first option for `single`, the first two for
 * `multi`, a placeholder string otherwise (C-INT-4). It is itself a valid,
 * complete reply.
 *
 * @category interviews
 * @since 0.1.0
 */
export const interviewReplyExample = (interview: Interview): InterviewReply => ({
  responses: answerableQuestions(interview).map((question) => ({ id: question.id, value: exampleValue(question) }))
})

/**
 * The interview as the supervisor reads it (C-INT-4): `Interview: <title>`,
 * the description, `Child note: <note>` (each only when not blank), then
 * `Questions:` numbered `N. [id] (type) question` with indented `Context:`
 * and `Options:`, then `Supervisor reply instructions:` and a fenced `json`
 * example from `interviewReplyExample`.
 *
 * @example
 * ```ts
 * import { renderInterview, validateInterview } from "effect-intercom/session"
 * import { Result } from "effect"
 *
 * const interview = validateInterview({ title: "API", questions: [{ id: "q", type: "text", question: "Why?" }] })
 * if (Result.isSuccess(interview)) renderInterview(interview.success, "before I migrate")
 * // Interview: API
 * // Child note: before I migrate
 * //
 * // Questions:
 * // 1. [q] (text) Why?
 * // …
 * ```
 *
 * @category interviews
 * @since 0.1.0
 */
export const renderInterview = (interview: Interview, note?: string): string => {
  const lines: Array<string> = []
  if (interview.title !== undefined) lines.push(`Interview: ${interview.title}`)
  if (interview.description !== undefined) lines.push(interview.description)
  const childNote = trimmedOrUndefined(note)
  if (childNote !== undefined) lines.push(`Child note: ${childNote}`)
  if (lines.length > 0) lines.push("")
  lines.push("Questions:")
  for (const [index, question] of interview.questions.entries()) {
    lines.push(`${index + 1}. [${question.id}] (${question.type}) ${question.question}`)
    if (question.context !== undefined) lines.push(`   Context: ${question.context}`)
    if (question.type === "single" || question.type === "multi") {
      lines.push("   Options:", ...question.options.map((label) => `   - ${label}`))
    }
  }
  lines.push(
    "",
    "Supervisor reply instructions:",
    INTERVIEW_REPLY_INSTRUCTIONS,
    "",
    "```json",
    JSON.stringify(interviewReplyExample(interview), null, 2),
    "```"
  )
  return lines.join("\n")
}
