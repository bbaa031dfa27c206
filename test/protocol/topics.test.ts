/**
 * Topic validation (C-TOP-1, C-TOP-2, C-TOP-4, and C-TOOL-6 for the text) and the topic frames'
 * codec: properties over generated publications, plus the named cases.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { decodeBrokerFrameText, decodeClientFrame, isFrameDecodeError } from "../../src/protocol/decode.ts"
import { checkPublish, checkTopic, type PublishInput } from "../../src/protocol/topics.ts"

const label = fc.string({ minLength: 1, maxLength: 40 }).filter((s) => checkTopic(s) === undefined)
const maybe = <A>(arb: fc.Arbitrary<A>) => fc.option(arb, { nil: undefined })
const input: fc.Arbitrary<PublishInput> = fc.record({
  topic: fc.oneof(label, fc.constantFrom("", " ", "a\nb", "a*", "x\u0000")),
  text: fc.oneof(
    fc.string({ maxLength: 20 }),
    fc.constantFrom("  ", "a\tb\r\nc", "ok\u001b[2J", "bell\u0007", "nel\u0085", "del\u007f", "nul\u0000")
  ),
  event: maybe(fc.constantFrom("update", "blocker", "decision", "release", "loud")),
  resource: maybe(fc.oneof(label, fc.constant(""))),
  ownership: maybe(fc.constantFrom("held", "released", "mine"))
})

/** The rules of C-TOP-4, stated independently of the implementation. */
const allowed = (i: PublishInput): boolean => {
  if (checkTopic(i.topic) !== undefined || i.text.trim() === "") return false
  // C-TOOL-6: a text may hold TAB, LF and CR, and no other C0, DEL or C1 control.
  if ([...i.text].some((c) => c !== "\t" && c !== "\n" && c !== "\r" && (c < " " || (c >= "\u007f" && c <= "\u009f")))) {
    return false
  }
  if (i.event !== undefined && !["update", "blocker", "decision", "release"].includes(i.event)) return false
  if (i.ownership !== undefined && !["held", "released"].includes(i.ownership)) return false
  if (i.resource !== undefined && i.resource.trim() === "") return false
  if (i.ownership !== undefined && i.resource === undefined) return false
  const event = i.event ?? (i.ownership === "released" ? "release" : "update")
  if (i.ownership === "released" && event !== "release") return false
  if (event === "release" && (i.resource === undefined || i.ownership !== "released")) return false
  return true
}

describe("topic validation", () => {
  it("accepts exactly the publications C-TOP-4 allows, and decides the event", () => {
    fc.assert(fc.property(input, (i) => {
      const checked = checkPublish(i)
      assert.strictEqual(typeof checked !== "string", allowed(i), JSON.stringify(i))
      if (typeof checked !== "string") {
        assert.strictEqual(checked.event, i.event ?? (i.ownership === "released" ? "release" : "update"))
      }
    }), { numRuns: 2000 })
  })

  it("a checked publication, numbered, decodes as a topic_publish frame and round-trips through JSON", () => {
    fc.assert(fc.property(input, fc.integer({ min: 1, max: 1e6 }), (i, revision) => {
      const checked = checkPublish(i)
      if (typeof checked === "string") return
      const frame = { type: "topic_publish" as const, requestId: "r", record: { ...checked, revision, updatedAt: 5 } }
      const decoded = decodeClientFrame.topic_publish(JSON.parse(JSON.stringify(frame)))
      assert.deepStrictEqual(decoded, frame)
    }))
  })

  it("names what is wrong", () => {
    assert.match(String(checkPublish({ topic: "t", text: "x", ownership: "held" })), /ownership needs a resource/)
    assert.match(String(checkPublish({ topic: "t", text: "x", resource: "r", ownership: "released", event: "update" })), /released" goes only with event "release"/)
    assert.match(String(checkPublish({ topic: "t", text: "x", event: "release", resource: "r" })), /needs a resource and ownership "released"/)
    assert.match(String(checkPublish({ topic: "", text: "x" })), /topic is empty/)
    assert.match(String(checkPublish({ topic: "a*", text: "x" })), /no wildcards/)
    assert.match(String(checkPublish({ topic: "t", text: " " })), /text is empty/)
    assert.strictEqual(
      checkPublish({ topic: "t", text: "build ok\u001b]0;owned\u0007" }),
      "text contains the control character U+001B at position 9: only TAB, LF and CR are allowed in a text, remove it (or describe it in words) and publish again"
    )
    assert.match(String(checkPublish({ topic: "t", text: "a\u0085" })), /U\+0085 at position 2/)
    assert.isObject(checkPublish({ topic: "t", text: "line 1\r\n\tline 2" }))
    assert.strictEqual(checkTopic("browser/shared-profile/tab-4"), undefined)
  })

  it("a revision below 1 or a fractional one does not decode; a broker topic_record does", () => {
    const bad = decodeClientFrame.topic_publish({ type: "topic_publish", requestId: "r", record: { topic: "t", text: "x", event: "update", revision: 0, updatedAt: 1 } })
    assert.isTrue(isFrameDecodeError(bad))
    const half = decodeClientFrame.topic_publish({ type: "topic_publish", requestId: "r", record: { topic: "t", text: "x", event: "update", revision: 1.5, updatedAt: 1 } })
    assert.isTrue(isFrameDecodeError(half))
    const frame = decodeBrokerFrameText(JSON.stringify({
      type: "topic_record",
      entry: { from: { id: "a" }, record: { topic: "t", text: "x", event: "blocker", revision: 2, updatedAt: 3 }, available: true }
    }))
    assert.isFalse(isFrameDecodeError(frame))
  })
})
