/**
 * Review revm M6 (probe): docs the two merges left untrue. docs/architecture.md's
 * module table has no row for WithdrawnCopies.ts or KeptControls.ts, and its
 * MailDelivery.ts row still says a control goes only with its message
 * (`giveBack`), which ctlback's `keepAlone` changed; WithdrawnCopies.ts's
 * header and JSDoc still name a weak set and `readerOf`, which wdcopy
 * replaced with a weak map and `readersOf`.
 */
import { readFileSync } from "node:fs"
import { assert, describe, it } from "@effect/vitest"

const read = (path: string): string => readFileSync(new URL(`../../${path}`, import.meta.url), "utf8")

describe("revm M6: docs of wdcopy and ctlback", () => {
  it("architecture.md's module table lists WithdrawnCopies.ts and KeptControls.ts", () => {
    const rows = read("docs/architecture.md").split("\n").filter((line) => line.startsWith("| "))
    assert.ok(rows.some((row) => row.includes("WithdrawnCopies.ts")), "no row names WithdrawnCopies.ts")
    assert.ok(rows.some((row) => row.includes("KeptControls.ts")), "no row names KeptControls.ts")
  })

  it("architecture.md's MailDelivery row no longer says a control goes only with its message", () => {
    const row = read("docs/architecture.md").split("\n").find((line) => line.startsWith("| MailDelivery.ts"))
    assert.ok(row !== undefined)
    assert.notInclude(row, "a control frame goes only with its message (`giveBack`)")
  })

  it("WithdrawnCopies.ts names no weak set and no `readerOf`", () => {
    const text = read("src/broker/WithdrawnCopies.ts")
    assert.notInclude(text, "in a weak set")
    assert.notInclude(text, "`readerOf`")
  })
})
