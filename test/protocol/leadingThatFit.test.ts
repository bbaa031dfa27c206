/**
 * `leadingThatFit` (framing.ts), the cut of a listed frame to the frame limit shared by `question_list` pages
 * (QuestionPages.ts) and `stats_result` rows (Stats.ts): checked against the JSON array text itself — the items it
 * keeps fit `room` as an array's elements, and one more would not.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { leadingThatFit } from "../../src/protocol/framing.ts"

/** The bytes of `items` as a JSON array's elements: the array's text without its brackets. */
const elementBytes = (items: ReadonlyArray<unknown>): number => Buffer.byteLength(JSON.stringify(items), "utf8") - 2

describe("leadingThatFit", () => {
  it("keeps the longest leading run of items whose JSON elements fit the room, any characters", () => {
    const item = fc.record({ name: fc.string({ unit: "grapheme" }), count: fc.nat() })
    fc.assert(
      fc.property(fc.array(item, { maxLength: 20 }), fc.integer({ min: 0, max: 400 }), (items, room) => {
        const kept = leadingThatFit(items, room)
        assert.isAtMost(elementBytes(items.slice(0, kept)), room)
        if (kept < items.length) assert.isAbove(elementBytes(items.slice(0, kept + 1)), room)
      }),
      { seed: 69, numRuns: 500 }
    )
  })
})
