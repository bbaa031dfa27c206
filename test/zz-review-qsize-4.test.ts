/**
 * Review revqsize, probe 4 (LOW, docs): docs/architecture.md's walk of a message's way lists what each send stage's
 * `check` refuses; for `Questions.stage` it still gives only the send under a durable question's id
 * (`E_MESSAGE_ID_REUSE`). Since the merge the same check also refuses the notified supervisor's reply that would be a
 * question's answer too large with it (`Questions.replyTooLarge`, `E_MESSAGE_TOO_LARGE`, one lookup of the reply key
 * in the notices) — a refusal on the way of a message the walk does not name. Read as text: the walk's `Questions.stage`
 * entry (up to the next stage's, `Receipts.supersedes`) names it.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import { fileURLToPath } from "node:url"

const doc = fs.readFileSync(fileURLToPath(new URL("../docs/architecture.md", import.meta.url)), "utf8")

describe("review revqsize 4: docs/architecture.md's message way", () => {
  it("names the live reply's size refusal in the Questions.stage check", () => {
    const start = doc.indexOf("`Questions.stage` (a send")
    const end = doc.indexOf("`Receipts.supersedes` (a", start)
    assert.isAbove(start, -1, "precondition: the walk's Questions.stage entry")
    assert.isAbove(end, start, "precondition: the next stage's entry")
    const entry = doc.slice(start, end)
    assert.include(entry, "replyTooLarge", entry)
  })
})
