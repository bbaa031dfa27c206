/**
 * C-INT-1…9 and open question 10: interview validation (every detail text),
 * the supervisor's rendering, and reading the reply — with properties that
 * render, answer and parse generated interviews, and that no input throws.
 */
import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import fc from "fast-check"
import {
  answerableQuestions,
  firstJsonFence,
  type Interview,
  type InterviewAnswer,
  type InterviewQuestion,
  interviewReplyDetails,
  interviewReplyExample,
  type InterviewReplyOutcome,
  parseInterviewReply,
  renderInterview,
  replyCandidate,
  validateInterview
} from "../../src/session/index.ts"

const validInterview = (raw: unknown): Interview => {
  const result = validateInterview(raw)
  if (Result.isFailure(result)) return assert.fail(result.failure.message)
  return result.success
}

const failureOf = (raw: unknown): string => {
  const result = validateInterview(raw)
  return Result.isFailure(result) ? result.failure.message : "valid"
}

const migration = validInterview({
  title: "API migration choices",
  questions: [
    { id: "api", type: "single", question: "Which API should I target?", options: ["Stable API", "Experimental API"] },
    { id: "constraints", type: "text", question: "What constraints should I preserve?" }
  ]
})

const everyType = validInterview({
  title: "  Release  ",
  description: " Before the 2.0 tag. ",
  questions: [
    { id: " why ", type: "info", question: "The old client breaks.", context: "  See #42.  " },
    { id: "api", type: "single", question: " Which API? ", options: [" Stable API ", { label: " Experimental API ", hint: "x" }] },
    { id: "targets", type: "multi", question: "Which targets?", options: ["linux", "macos", "windows"], context: "   " },
    { id: "notes", type: "text", question: "Anything else?" },
    { id: "shot", type: "image", question: "What should it look like?" }
  ]
})

// ---------------------------------------------------------------------------
// Generated interviews
// ---------------------------------------------------------------------------

const filled = (text: fc.Arbitrary<string>) => text.filter((value) => value.trim() !== "")
const padded = (text: string) => fc.tuple(fc.constantFrom("", " ", "  \t"), fc.constantFrom("", " ", "\t ")).map(([a, b]) => `${a}${text}${b}`)

/** A raw interview a child could send: trimmed-unique ids, every type, padded texts, string and object options. */
const rawInterview = (text: fc.Arbitrary<string>) =>
  fc.uniqueArray(filled(text), { minLength: 1, maxLength: 6, selector: (id) => id.trim() }).chain((ids) =>
    fc.record({
      title: fc.option(text, { nil: undefined }),
      description: fc.option(text, { nil: undefined }),
      questions: fc.tuple(...ids.map((id) =>
        fc.record({
          id: fc.constant(id),
          type: fc.constantFrom("single", "multi", "text", "image", "info"),
          question: filled(text),
          context: fc.option(text, { nil: undefined }),
          options: fc.array(
            filled(text).chain((label) => fc.oneof(padded(label), padded(label).map((padding) => ({ label: padding })))),
            { minLength: 1, maxLength: 4 }
          )
        }).map(({ options, ...question }) =>
          question.type === "single" || question.type === "multi" ? { ...question, options } : question
        )
      ))
    }, { requiredKeys: ["questions"] })
  )

/** A valid answer to `question`, as a supervisor might write it (labels padded). */
const answer = (question: InterviewQuestion): fc.Arbitrary<{ readonly written: unknown; readonly value: InterviewAnswer }> => {
  switch (question.type) {
    case "single":
      return fc.constantFrom(...question.options).chain((label) => padded(label).map((written) => ({ written, value: label })))
    case "multi":
      return fc.subarray([...question.options]).chain((labels) =>
        fc.tuple(...labels.map(padded)).map((written) => ({ written, value: labels }))
      )
    default:
      return fc.string().map((text) => ({ written: text, value: text }))
  }
}

/** A valid reply to `interview` (some answerable questions, in any order), the parse it should give, and its wrapping. */
const replyTo = (interview: Interview) =>
  fc.shuffledSubarray([...answerableQuestions(interview)]).chain((questions) =>
    fc.record({
      answers: fc.tuple(...questions.map((question) => answer(question).map((a) => ({ id: question.id, ...a })))),
      spacedId: fc.boolean(),
      wrap: fc.constantFrom<(json: string) => string>(
        (json) => json,
        (json) => `\n  ${json}\n`,
        (json) => "```json\n" + json + "\n```",
        (json) => "Here you go:\n\n```JSON\n" + json + "\n```\nThanks.",
        (json) => "```\n" + json + "\n```",
        (json) => "````json\n" + json + "\n````",
        (json) => "Use this:\n```ts\nconst x = 1\n```\nand:\n```json\n" + json + "\n```"
      )
    })
  )

const withInterview = <A>(text: fc.Arbitrary<string>, then: (interview: Interview) => fc.Arbitrary<A>) =>
  rawInterview(text).map(validInterview).chain((interview) => then(interview).map((extra) => ({ interview, extra })))

describe("C-INT-1…3 validation", () => {
  it("normalizes: ids, questions, titles and option labels trimmed; object options reduced to their label; blank texts left out", () => {
    assert.deepStrictEqual(everyType, {
      title: "Release",
      description: "Before the 2.0 tag.",
      questions: [
        { id: "why", type: "info", question: "The old client breaks.", context: "See #42." },
        { id: "api", type: "single", question: "Which API?", context: undefined, options: ["Stable API", "Experimental API"] },
        { id: "targets", type: "multi", question: "Which targets?", context: undefined, options: ["linux", "macos", "windows"] },
        { id: "notes", type: "text", question: "Anything else?", context: undefined },
        { id: "shot", type: "image", question: "What should it look like?", context: undefined }
      ]
    })
    assert.deepStrictEqual(validInterview({ title: " ", questions: [{ id: "q", type: "text", question: "Q" }] }).title, undefined)
  })

  it("the interview: an object, string title and description, a non-empty questions array (C-INT-1)", () => {
    const shape = "Invalid interview request: interview must be an object with a questions array"
    assert.strictEqual(failureOf(undefined), shape)
    assert.strictEqual(failureOf(null), shape)
    assert.strictEqual(failureOf([]), shape)
    assert.strictEqual(failureOf("questions"), shape)
    assert.strictEqual(failureOf({ title: 1, questions: [] }), "Invalid interview request: interview.title must be a string when provided")
    assert.strictEqual(
      failureOf({ description: null, questions: [] }),
      "Invalid interview request: interview.description must be a string when provided"
    )
    assert.strictEqual(failureOf({}), "Invalid interview request: interview.questions must be a non-empty array")
    assert.strictEqual(failureOf({ questions: [] }), "Invalid interview request: interview.questions must be a non-empty array")
    assert.strictEqual(failureOf({ questions: {} }), "Invalid interview request: interview.questions must be a non-empty array")
  })

  it("each question: object, id, unique id, type, question, context (C-INT-2)", () => {
    const text = { id: "a", type: "text", question: "Q" }
    const one = (question: unknown) => failureOf({ questions: [text, question] })
    assert.strictEqual(one("q"), "Invalid interview request: interview.questions[1] must be an object")
    assert.strictEqual(one({ ...text, id: "  " }), "Invalid interview request: interview.questions[1].id must be a non-empty string")
    assert.strictEqual(one({ ...text, id: 7 }), "Invalid interview request: interview.questions[1].id must be a non-empty string")
    assert.strictEqual(one({ ...text, id: " a " }), "Invalid interview request: interview question id must be unique: a")
    assert.strictEqual(
      one({ ...text, id: "b", type: "choice" }),
      "Invalid interview request: interview.questions[1].type must be one of: single, multi, text, image, info"
    )
    assert.strictEqual(
      one({ ...text, id: "b", question: " " }),
      "Invalid interview request: interview.questions[1].question must be a non-empty string"
    )
    assert.strictEqual(
      one({ ...text, id: "b", context: 3 }),
      "Invalid interview request: interview.questions[1].context must be a string when provided"
    )
  })

  it("options: required and non-empty for single/multi, forbidden otherwise, each a label (C-INT-3)", () => {
    const question = (fields: object) => failureOf({ questions: [{ id: "q", question: "Q", ...fields }] })
    assert.strictEqual(
      question({ type: "single" }),
      "Invalid interview request: interview.questions[0].options must be a non-empty array for single questions"
    )
    assert.strictEqual(
      question({ type: "multi", options: [] }),
      "Invalid interview request: interview.questions[0].options must be a non-empty array for multi questions"
    )
    assert.strictEqual(
      question({ type: "single", options: "a, b" }),
      "Invalid interview request: interview.questions[0].options must be an array when provided"
    )
    assert.strictEqual(
      question({ type: "single", options: ["a", "  "] }),
      "Invalid interview request: interview.questions[0].options[1] must not be empty"
    )
    const badOption =
      "Invalid interview request: interview.questions[0].options[0] must be a non-empty string or an object with a non-empty label"
    assert.strictEqual(question({ type: "multi", options: [{ label: " " }] }), badOption)
    assert.strictEqual(question({ type: "multi", options: [{ name: "a" }] }), badOption)
    assert.strictEqual(question({ type: "multi", options: [3] }), badOption)
    assert.strictEqual(question({ type: "multi", options: [["a"]] }), badOption)
    const notHere = "Invalid interview request: interview.questions[0].options is only valid for single and multi questions"
    for (const type of ["text", "image", "info"]) {
      assert.strictEqual(question({ type, options: ["a"] }), notHere)
      assert.strictEqual(question({ type, options: [] }), notHere)
    }
    assert.strictEqual(question({ type: "text", options: undefined }), "valid")
  })

  it("property: a well-formed interview validates, with every id trimmed and in order", () => {
    fc.assert(fc.property(rawInterview(fc.string({ maxLength: 10 })), (raw) => {
      const result = validateInterview(raw)
      assert.isTrue(Result.isSuccess(result))
      if (Result.isSuccess(result)) {
        assert.deepStrictEqual(result.success.questions.map(({ id }) => id), raw.questions.map(({ id }) => id.trim()))
      }
    }))
  })

  it("property: any input gives an interview or an InvalidInterview, never a throw", () => {
    fc.assert(fc.property(fc.anything({ withNullPrototype: true, withObjectString: true }), (input) => {
      const result = validateInterview(input)
      if (Result.isFailure(result)) assert.match(result.failure.message, /^Invalid interview request: \S/)
    }))
  })
})

// ---------------------------------------------------------------------------
// Rendering (C-INT-4)
// ---------------------------------------------------------------------------

const INSTRUCTIONS =
  "Reply with plain JSON or a fenced ```json block using this stable shape. Use the question ids exactly. " +
  "Info questions are context-only and do not need responses. For single questions, value is one option label. " +
  "For multi questions, value is an array of option labels. For text/image questions, value is a string."

describe("C-INT-4 rendering", () => {
  it("the seed example, with the child's note", () => {
    assert.strictEqual(
      renderInterview(migration, "  Please answer these before I continue the migration. "),
      [
        "Interview: API migration choices",
        "Child note: Please answer these before I continue the migration.",
        "",
        "Questions:",
        "1. [api] (single) Which API should I target?",
        "   Options:",
        "   - Stable API",
        "   - Experimental API",
        "2. [constraints] (text) What constraints should I preserve?",
        "",
        "Supervisor reply instructions:",
        INSTRUCTIONS,
        "",
        "```json",
        "{",
        `  "responses": [`,
        "    {",
        `      "id": "api",`,
        `      "value": "Stable API"`,
        "    },",
        "    {",
        `      "id": "constraints",`,
        `      "value": "answer text"`,
        "    }",
        "  ]",
        "}",
        "```"
      ].join("\n")
    )
  })

  it("description, context, every type; the example leaves out info and takes two multi options", () => {
    assert.strictEqual(
      renderInterview(everyType),
      [
        "Interview: Release",
        "Before the 2.0 tag.",
        "",
        "Questions:",
        "1. [why] (info) The old client breaks.",
        "   Context: See #42.",
        "2. [api] (single) Which API?",
        "   Options:",
        "   - Stable API",
        "   - Experimental API",
        "3. [targets] (multi) Which targets?",
        "   Options:",
        "   - linux",
        "   - macos",
        "   - windows",
        "4. [notes] (text) Anything else?",
        "5. [shot] (image) What should it look like?",
        "",
        "Supervisor reply instructions:",
        INSTRUCTIONS,
        "",
        "```json",
        JSON.stringify({
          responses: [
            { id: "api", value: "Stable API" },
            { id: "targets", value: ["linux", "macos"] },
            { id: "notes", value: "answer text" },
            { id: "shot", value: "image/file reference or description" }
          ]
        }, null, 2),
        "```"
      ].join("\n")
    )
  })

  it("no title, description or note: the text starts with the questions; a blank note is left out", () => {
    const bare = validInterview({ questions: [{ id: "i", type: "info", question: "FYI" }] })
    assert.strictEqual(
      renderInterview(bare, "   "),
      `Questions:\n1. [i] (info) FYI\n\nSupervisor reply instructions:\n${INSTRUCTIONS}\n\n\`\`\`json\n{\n  "responses": []\n}\n\`\`\``
    )
  })

  it("property: the rendered interview, sent back as the reply, parses as its own example — a complete answer", () => {
    const noBackticks = fc.string({ maxLength: 12 }).filter((text) => !text.includes("`"))
    fc.assert(fc.property(withInterview(noBackticks, () => fc.option(noBackticks, { nil: undefined })), ({ interview, extra: note }) => {
      const rendered = renderInterview(interview, note)
      assert.deepStrictEqual(parseInterviewReply(rendered, interview), {
        _tag: "Answered",
        reply: interviewReplyExample(interview),
        unansweredIds: []
      })
    }))
  })
})

// ---------------------------------------------------------------------------
// Reply parsing (C-INT-5…9, open question 10)
// ---------------------------------------------------------------------------

const parse = (reply: string, interview: Interview = everyType): InterviewReplyOutcome => parseInterviewReply(reply, interview)
const parseReason = (reply: string): string => {
  const outcome = parse(reply)
  return outcome._tag === "Invalid" ? outcome.reason : outcome._tag
}
const reasonOf = (json: unknown): string => parseReason(JSON.stringify(json))

describe("C-INT-5 the candidate text", () => {
  it("the first fenced block tagged json (any case) or untagged, else the whole reply, trimmed", () => {
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["  {\"a\": 1}  ", "{\"a\": 1}"],
      ["Sure:\n```json\n  {\"a\": 1}\n```\nmore", "{\"a\": 1}"],
      ["```JSON title\n[1]\n```", "[1]"],
      ["```\n{}\n```\n```json\n[2]\n```", "{}"],
      ["  ```json\n{}\n  ```", "{}"],
      ["````json\n```\n{}\n````", "```\n{}"],
      ["```json\n{\"open\": true}", "{\"open\": true}"]
    ]
    for (const [reply, candidate] of cases) assert.strictEqual(replyCandidate(reply), candidate, reply)
  })

  it("fences in other languages are skipped; a fence mentioned inside a line is no fence (open question 10)", () => {
    assert.strictEqual(replyCandidate("```ts\n{ a: 1 }\n```\n```json\n{}\n```"), "{}")
    assert.strictEqual(firstJsonFence("```jsonc\n{}\n```\n```python\n[]\n```"), undefined)
    assert.strictEqual(replyCandidate("Use a fenced ```json block.\n{}"), "Use a fenced ```json block.\n{}")
    assert.strictEqual(firstJsonFence("no fences"), undefined)
    assert.strictEqual(firstJsonFence("```json\r\n[]\r\n```"), "[]")
  })

  it("a candidate not starting with { or [ is prose: no structured result and no error", () => {
    assert.deepStrictEqual(parse("Stable API, and keep the error shape."), { _tag: "Unstructured" })
    assert.deepStrictEqual(parse("```json\nresponses: none\n```"), { _tag: "Unstructured" })
    assert.deepStrictEqual(parse("```python\n{}\n```"), { _tag: "Unstructured" })
    assert.deepStrictEqual(interviewReplyDetails({ _tag: "Unstructured" }), {})
  })

  it("property: any reply gives an outcome, never a throw; prose exactly when the candidate does not start with { or [", () => {
    const replies = fc.oneof(
      fc.string(),
      fc.string({ unit: "binary" }),
      fc.jsonValue().map((json) => JSON.stringify(json)),
      fc.tuple(fc.string(), fc.jsonValue()).map(([prose, json]) => `${prose}\n\`\`\`json\n${JSON.stringify(json)}\n\`\`\``)
    )
    fc.assert(fc.property(replies, (reply) => {
      const outcome = parse(reply)
      const candidate = replyCandidate(reply)
      assert.strictEqual(outcome._tag === "Unstructured", !candidate.startsWith("{") && !candidate.startsWith("["))
      if (outcome._tag === "Invalid") assert.isTrue(outcome.reason.length > 0)
    }))
  })
})

describe("C-INT-6 / C-INT-8 reply validation", () => {
  it("a valid reply: ids trimmed, single and multi labels trimmed, text and image kept as written", () => {
    const outcome = parse(
      "```json\n" + JSON.stringify({
        responses: [
          { id: " targets ", value: [" linux", "windows "] },
          { id: "api", value: " Experimental API " },
          { id: "notes", value: "  keep it  " },
          { id: "shot", value: "" }
        ]
      }) + "\n```"
    )
    const reply = {
      responses: [
        { id: "targets", value: ["linux", "windows"] },
        { id: "api", value: "Experimental API" },
        { id: "notes", value: "  keep it  " },
        { id: "shot", value: "" }
      ]
    }
    assert.deepStrictEqual(outcome, { _tag: "Answered", reply, unansweredIds: [] })
    assert.deepStrictEqual(interviewReplyDetails(outcome), { structuredReply: reply })
  })

  it("the shape: an object with a responses array of objects", () => {
    assert.strictEqual(reasonOf([]), "reply JSON must be an object with a responses array")
    assert.strictEqual(reasonOf([{ responses: [] }]), "reply JSON must be an object with a responses array")
    assert.strictEqual(reasonOf(null), "Unstructured")
    assert.strictEqual(reasonOf({}), "reply JSON must include a responses array")
    assert.strictEqual(reasonOf({ responses: { api: "Stable API" } }), "reply JSON must include a responses array")
    assert.strictEqual(reasonOf({ responses: ["api"] }), "responses[0] must be an object")
    assert.match(parseReason("{ responses: [] }"), /^reply is not valid JSON: \S/)
    assert.match(parseReason("[1, 2"), /^reply is not valid JSON: \S/)
  })

  it("ids: a non-empty string naming a non-info question, at most once (C-INT-8)", () => {
    const ok = { id: "api", value: "Stable API" }
    assert.strictEqual(reasonOf({ responses: [ok, { id: " ", value: "x" }] }), "responses[1].id must be a non-empty string")
    assert.strictEqual(reasonOf({ responses: [{ id: 3, value: "x" }] }), "responses[0].id must be a non-empty string")
    assert.strictEqual(reasonOf({ responses: [{ id: "nope", value: "x" }] }), "responses[0].id must match a non-info interview question id")
    assert.strictEqual(reasonOf({ responses: [{ id: "why", value: "x" }] }), "responses[0].id must match a non-info interview question id")
    assert.strictEqual(reasonOf({ responses: [ok, { ...ok, id: " api" }] }), "responses[1].id is duplicated: api")
  })

  it("values: present, and of the question's shape", () => {
    assert.strictEqual(reasonOf({ responses: [{ id: "api" }] }), "responses[0].value is required")
    assert.strictEqual(reasonOf({ responses: [{ id: "api", value: ["Stable API"] }] }), "responses[0].value must be a string for single questions")
    assert.strictEqual(reasonOf({ responses: [{ id: "api", value: "Beta API" }] }), "responses[0].value must match one of the question options")
    assert.strictEqual(
      reasonOf({ responses: [{ id: "targets", value: "linux" }] }),
      "responses[0].value must be an array of strings for multi questions"
    )
    assert.strictEqual(
      reasonOf({ responses: [{ id: "targets", value: ["linux", 1] }] }),
      "responses[0].value must be an array of strings for multi questions"
    )
    assert.strictEqual(
      reasonOf({ responses: [{ id: "targets", value: ["linux", "bsd"] }] }),
      "responses[0].value contains an option that is not in the question options: bsd"
    )
    assert.strictEqual(
      reasonOf({ responses: [{ id: "targets", value: ["  "] }] }),
      "responses[0].value contains an option that is not in the question options: "
    )
    assert.strictEqual(reasonOf({ responses: [{ id: "notes", value: null }] }), "responses[0].value must be a string for text questions")
    assert.strictEqual(reasonOf({ responses: [{ id: "shot", value: { url: "x" } }] }), "responses[0].value must be a string for image questions")
    assert.deepStrictEqual(interviewReplyDetails({ _tag: "Invalid", reason: "responses[0].value is required" }), {
      structuredReplyParseError: "responses[0].value is required"
    })
  })

  it("C-INT-9 / open question 10: a partial reply is accepted and its unanswered non-info ids reported in question order", () => {
    const outcome = parse(JSON.stringify({ responses: [{ id: "notes", value: "none" }] }))
    assert.deepStrictEqual(outcome, {
      _tag: "Answered",
      reply: { responses: [{ id: "notes", value: "none" }] },
      unansweredIds: ["api", "targets", "shot"]
    })
    assert.deepStrictEqual(interviewReplyDetails(outcome), {
      structuredReply: { responses: [{ id: "notes", value: "none" }] },
      unansweredIds: ["api", "targets", "shot"]
    })
    assert.deepStrictEqual(parse(`{"responses": []}`, migration), {
      _tag: "Answered",
      reply: { responses: [] },
      unansweredIds: ["api", "constraints"]
    })
  })

  it("property: a generated valid reply, in any wrapping, parses to its normalized answers and the ids it left out", () => {
    fc.assert(fc.property(withInterview(fc.string({ maxLength: 10 }), replyTo), ({ interview, extra }) => {
      const json = JSON.stringify({
        responses: extra.answers.map(({ id, written }) => ({ id: extra.spacedId ? ` ${id} ` : id, value: written }))
      }, null, 2)
      const answered = new Set(extra.answers.map(({ id }) => id))
      assert.deepStrictEqual(parseInterviewReply(extra.wrap(json), interview), {
        _tag: "Answered",
        reply: { responses: extra.answers.map(({ id, value }) => ({ id, value })) },
        unansweredIds: answerableQuestions(interview).map(({ id }) => id).filter((id) => !answered.has(id))
      })
    }))
  })

  it("property: breaking a valid reply in any one way gives a parse error, never a throw or a result", () => {
    type Responses = Array<Record<string, unknown>>
    const breakages: ReadonlyArray<(responses: Responses, interview: Interview) => unknown> = [
      (responses) => responses,
      (responses) => ({ responses: Object.fromEntries(responses.entries()) }),
      (responses) => ({ answers: responses }),
      (responses) => ({ responses: [...responses, "answer"] }),
      (responses, interview) => ({ responses: [...responses, { id: `${interview.questions.map((q) => q.id).join("")}x`, value: "" }] }),
      (responses) => ({ responses: [...responses, ...responses.slice(0, 1)] }),
      (responses) => ({ responses: responses.map(({ value: _value, ...rest }) => rest) }),
      (responses) => ({ responses: responses.map((response) => ({ ...response, value: 42 })) }),
      (responses, interview) => ({
        responses: [...responses, ...interview.questions.filter((q) => q.type === "info").map((q) => ({ id: q.id, value: "" }))]
      })
    ]
    fc.assert(fc.property(
      withInterview(fc.string({ maxLength: 10 }), replyTo),
      fc.nat(breakages.length - 1),
      ({ interview, extra }, which) => {
        const responses: Responses = extra.answers.map(({ id, written }) => ({ id, value: written }))
        const broken = breakages[which]?.(responses, interview)
        const unchanged = JSON.stringify(broken) === JSON.stringify({ responses })
        fc.pre(!unchanged)
        const outcome = parseInterviewReply(JSON.stringify(broken), interview)
        assert.strictEqual(outcome._tag, "Invalid")
      }
    ))
  })
})
