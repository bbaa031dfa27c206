/**
 * The docs name the refusal of a supervisor's live reply too large to be a durable question's answer (helper qsize:
 * `Questions.replyTooLarge`, `E_MESSAGE_TOO_LARGE`, "Reply is too large to answer durable question <id>: …") where
 * they list reasons and checks (reviews revqsize 3 and 4, helper fixqs): the row for the code in docs/protocol.md's
 * "Delivery codes" table and in docs/client.md's table of `delivery_failed` error classes, which list every reason
 * of each code, and the `Questions.replySize` entry of docs/architecture.md's walk of a message's way (the stage that
 * makes the check since helper qs moved it out of `Questions.stage`; up to the next step of the walk, the store-failure
 * refusal, "in durable mode"). Reads the files; nothing runs.
 */
import { assert, describe, it } from "@effect/vitest"
import { readFileSync } from "node:fs"

const read = (doc: string): string => readFileSync(new URL(`../../docs/${doc}`, import.meta.url), "utf8")

/** The table row of `doc` starting `start`. */
const rowOf = (doc: string, start: string): string => {
  const row = read(doc).split("\n").find((line) => line.startsWith(start))
  if (row === undefined) return assert.fail(`setup: no row starting ${start} in docs/${doc}`)
  return row
}

const REASON = "Reply is too large to answer durable question"

describe("the docs name the live reply's size refusal", () => {
  it("docs/protocol.md's Delivery codes row for E_MESSAGE_TOO_LARGE lists the reply's reason", () => {
    assert.include(rowOf("protocol.md", "| `E_MESSAGE_TOO_LARGE` |"), REASON)
  })

  it("docs/client.md's MessageTooLarge error-class row lists the reply's reason", () => {
    assert.include(rowOf("client.md", "| `MessageTooLarge` | `E_MESSAGE_TOO_LARGE` |"), REASON)
  })

  it("docs/architecture.md's walk names Questions.replyTooLarge and E_MESSAGE_TOO_LARGE in the Questions.replySize check", () => {
    const doc = read("architecture.md")
    const start = doc.indexOf("`Questions.replySize` (for a reply")
    const end = doc.indexOf("in durable mode, while the store's last commit failed", start)
    assert.isAbove(start, -1, "setup: the walk's Questions.replySize entry is gone")
    assert.isAbove(end, start, "setup: the next stage's entry is gone")
    const entry = doc.slice(start, end)
    assert.include(entry, "`Questions.replyTooLarge`", entry)
    assert.include(entry, "`E_MESSAGE_TOO_LARGE`", entry)
  })
})
