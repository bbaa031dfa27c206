/**
 * docs/protocol.md's `questions-v1` "Cost and ownership" paragraph says what a send pays in Questions.stage. Since
 * helper oneid2 the stage checks every send, not only one with `expectsReply` (review revdb DB3 found the paragraph
 * still saying "one field read per send"); since review revdb DB1 it first looks the sender's key up in `liveBy`.
 * Reads the two files only.
 */
import { readFileSync } from "node:fs"
import { assert, describe, it } from "@effect/vitest"

const read = (path: string) => readFileSync(new URL(path, import.meta.url), "utf8")

/** The paragraph, whitespace folded: from its bold title to the next section. */
const costParagraph = (): string => {
  const protocol = read("../../docs/protocol.md").replace(/\s+/g, " ")
  const start = protocol.indexOf("**Cost and ownership.** The Router's `Questions` module")
  assert.isAtLeast(start, 0, "setup: the questions-v1 cost paragraph is gone")
  return protocol.slice(start, protocol.indexOf("### ", start))
}

describe("docs/protocol.md's cost of durable questions on the send path", () => {
  it("names the per-sender lookup Questions.stage's check makes (liveBy), not one field read per send", () => {
    const source = read("../../src/broker/Questions.ts")
    const check = source.slice(source.indexOf("readonly stage: SendStage"), source.indexOf("delivered: (attempt, mail)"))
    assert.include(check, "this.liveBy.has(sender)", "setup: the stage no longer looks the sender up in liveBy")
    assert.notInclude(check, "expectsReply", "setup: the stage reads expectsReply again")
    const paragraph = costParagraph()
    assert.notInclude(paragraph, "one field read per send (`expectsReply`)")
    assert.include(paragraph, "one lookup by the sender's session key (`liveBy`")
  })
})
