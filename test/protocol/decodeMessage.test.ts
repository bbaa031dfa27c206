/**
 * `decodeMessage` has a fast path for the common shape of a send's message
 * (src/protocol/decode.ts); it must return exactly what the `Message` schema
 * returns — the same fields, in the same key order, unknown keys left out —
 * and leave every failure to the schema, so error messages stay the schema's.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { decodeMessage, decodeMessageWithSchema, isFrameDecodeError } from "../../src/protocol/decode.ts"
import { MAX_ID_LENGTH } from "../../src/protocol/limits.ts"

/** Both results as comparable text: the JSON (key order included), or the error's message. */
const shown = (result: unknown): string =>
  isFrameDecodeError(result) ? `error: ${result.message}` : `ok: ${JSON.stringify(result)}`

/** A field value of any type, including what JSON cannot hold (Infinity, NaN, undefined). */
const anyValue = fc.oneof(
  fc.jsonValue(),
  fc.constantFrom(Number.POSITIVE_INFINITY, Number.NaN, -0, null, "", true, false, undefined)
)
/** Mostly well-typed values, so the fast path is taken often; sometimes anything. */
const wellTypedOr = <A>(value: fc.Arbitrary<A>) =>
  fc.oneof({ weight: 8, arbitrary: value }, { weight: 1, arbitrary: anyValue })
const id = wellTypedOr(fc.oneof(
  { weight: 8, arbitrary: fc.string({ maxLength: 8 }) },
  { weight: 1, arbitrary: fc.constantFrom("x".repeat(MAX_ID_LENGTH), "x".repeat(MAX_ID_LENGTH + 1)) }
))
const finite = wellTypedOr(fc.oneof(
  { weight: 8, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.double() }
))

const content = fc.oneof(
  { weight: 8, arbitrary: fc.record({ text: wellTypedOr(fc.string()) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      text: fc.string(),
      attachments: fc.oneof(
        fc.constant([]),
        fc.constant([{ type: "file", name: "a.ts", content: "x", extra: 1 }]),
        anyValue
      )
    })
  },
  { weight: 1, arbitrary: fc.record({ text: fc.string(), extra: anyValue }) },
  { weight: 1, arbitrary: anyValue }
)

/** A message-like object: the schema's keys in a random order, some missing, some of the wrong type, plus extras. */
const messageLike = fc.record({
  id,
  timestamp: finite,
  content,
  senderSequence: finite,
  brokerReceivedAt: finite,
  brokerDeliveredAt: finite,
  receiverReceivedAt: finite,
  injectedAt: finite,
  supersedes: id,
  retryOf: id,
  replyTo: id,
  expectsReply: wellTypedOr(fc.boolean()),
  extra: anyValue
}, { requiredKeys: ["id", "timestamp", "content"] }).chain((fields) =>
  fc.shuffledSubarray(Object.keys(fields), { minLength: Object.keys(fields).length }).map((order) => {
    const out: Record<string, unknown> = {}
    for (const key of order) out[key] = fields[key as keyof typeof fields]
    return out
  })
)

describe("decodeMessage", () => {
  it("property: returns what the Message schema returns, key order included, for JSON input", () => {
    fc.assert(
      fc.property(messageLike, (value) => {
        // Through JSON, as a send arrives (JSON drops keys holding undefined and turns Infinity into null).
        const input: unknown = JSON.parse(JSON.stringify(value))
        assert.strictEqual(shown(decodeMessage(input)), shown(decodeMessageWithSchema(input)))
      }),
      { numRuns: 2000 }
    )
  })

  it("property: returns what the Message schema returns for objects JSON cannot produce", () => {
    fc.assert(
      fc.property(messageLike, (input) => {
        // Keys holding undefined, Infinity and NaN reach the decoder as they are here.
        assert.strictEqual(shown(decodeMessage(input)), shown(decodeMessageWithSchema(input)))
      }),
      { numRuns: 2000 }
    )
  })

  it("leaves out unknown keys and keeps the schema's key order", () => {
    const input = JSON.parse(
      `{"expectsReply":true,"extra":1,"content":{"q":2,"text":"hi"},"timestamp":5,"senderSequence":3,"id":"m1"}`
    )
    const decoded = decodeMessage(input)
    assert.strictEqual(
      JSON.stringify(decoded),
      `{"id":"m1","timestamp":5,"content":{"text":"hi"},"senderSequence":3,"expectsReply":true}`
    )
  })

  it("a wrong field is refused with the schema's message", () => {
    const decoded = decodeMessage({ id: "m1", timestamp: 1, content: { text: "hi" }, replyTo: 7 })
    assert.isTrue(isFrameDecodeError(decoded))
    assert.strictEqual(shown(decoded), shown(decodeMessageWithSchema({ id: "m1", timestamp: 1, content: { text: "hi" }, replyTo: 7 })))
    assert.include(shown(decoded), `"replyTo"`)
  })

  it("an inherited field counts, as it does for the schema", () => {
    const input: Record<string, unknown> = Object.create({ senderSequence: 4 })
    input.id = "m1"
    input.timestamp = 1
    input.content = { text: "hi" }
    assert.strictEqual(shown(decodeMessage(input)), shown(decodeMessageWithSchema(input)))
  })
})
