/**
 * docs/client.md describes `reply-elsewhere-v1`'s client side (review revp
 * P3): the extension grew `ControlEvent` by a variant (`AnsweredElsewhere`)
 * and `AskFailure` by `AskAnsweredElsewhere`, so the `controls` row names
 * the event and the "Ask and the reply-waiter slot" section the new way an
 * ask ends. Docs describe what exists.
 */
import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"

const clientDoc = readFileSync(new URL("../../docs/client.md", import.meta.url), "utf8")

describe("docs/client.md describes reply-elsewhere-v1's client side", () => {
  it("the `controls` stream's row names the AnsweredElsewhere event", () => {
    const row = clientDoc.split("\n").find((line) => line.startsWith("| `controls` |"))
    expect(row, "no controls row in docs/client.md").toBeDefined()
    expect(row).toContain("AnsweredElsewhere")
  })

  it("the ask section names AskAnsweredElsewhere among the ways an ask ends", () => {
    const start = clientDoc.indexOf("### Ask and the reply-waiter slot")
    const end = clientDoc.indexOf("\n### ", start + 1)
    expect(start).toBeGreaterThan(-1)
    expect(clientDoc.slice(start, end)).toContain("AskAnsweredElsewhere")
  })
})
