/**
 * Review revqsize, probe 3 (LOW, docs): the merge gave `E_MESSAGE_TOO_LARGE` a third reason from our broker — a
 * supervisor's live reply too large to be a durable question's answer, "Reply is too large to answer durable question
 * <id>: …" (`QuestionText.replyTooLarge`) — but the two tables that list every reason of each delivery code still give
 * only "Message is too large to deliver: …" (and the client's own "… to send"): docs/protocol.md "Delivery codes" and
 * docs/client.md's table of `delivery_failed` error classes ("reason (from our broker)"). Read as text: each table's
 * row for the code names the reply's reason.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import { fileURLToPath } from "node:url"

const rowOf = (doc: string, start: string): string => {
  const text = fs.readFileSync(fileURLToPath(new URL(`../docs/${doc}`, import.meta.url)), "utf8")
  const row = text.split("\n").find((line) => line.startsWith(start))
  if (row === undefined) return assert.fail(`no row starting ${start} in docs/${doc}`)
  return row
}

describe("review revqsize 3: the reason tables of E_MESSAGE_TOO_LARGE", () => {
  it("docs/protocol.md's Delivery codes row names the live reply's reason", () => {
    assert.include(rowOf("protocol.md", "| `E_MESSAGE_TOO_LARGE` |"), "Reply is too large to answer durable question")
  })

  it("docs/client.md's MessageTooLarge row names the live reply's reason", () => {
    assert.include(rowOf("client.md", "| `MessageTooLarge` | `E_MESSAGE_TOO_LARGE` |"), "Reply is too large to answer durable question")
  })
})
