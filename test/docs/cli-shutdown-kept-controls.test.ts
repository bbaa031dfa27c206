/**
 * cli.md's Shutdown paragraph on what a durable broker's next start
 * restores: held mail and owed notices, not the kept controls and cancelled
 * copies, which are memory only on either durability (KeptControls.ts,
 * WithdrawnCopies.ts, protocol.md "Mailbox").
 */
import { readFileSync } from "node:fs"
import { assert, describe, it } from "@effect/vitest"

describe("cli.md Shutdown: what a durable broker's next start restores", () => {
  it("does not say kept controls are restored, and says they are memory only", () => {
    const text = readFileSync(new URL("../../docs/cli.md", import.meta.url), "utf8")
    const start = text.indexOf("**Shutdown.**")
    const paragraph = text.slice(start, text.indexOf("\n\n", start)).replace(/\s+/g, " ")
    assert.include(paragraph, "cancel or supersede kept for a client", "setup: the paragraph no longer lists kept controls")
    assert.notMatch(paragraph, /its next start restores them\.$/, "cli.md says a durable broker's next start restores kept controls")
    assert.include(paragraph, "not the kept controls or cancelled copies, which are memory only")
  })
})
