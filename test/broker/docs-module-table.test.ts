/**
 * docs/architecture.md's module table names every module of src/broker
 * that owns a concern, so a new module does not go undocumented (review
 * revm M6 found KeptControls.ts and WithdrawnCopies.ts missing, and the
 * MailDelivery.ts row still saying a control goes only with its message).
 * The wiring and shared-type modules are described in the prose around the
 * table instead (`DESCRIBED_ELSEWHERE`).
 */
import { readdirSync, readFileSync } from "node:fs"
import { assert, describe, it } from "@effect/vitest"

const root = new URL("../../", import.meta.url)

/** Modules the table leaves to the prose: the Router's wiring, the peer's type, the barrel, options, errors. */
const DESCRIBED_ELSEWHERE = new Set(["Router.ts", "Peer.ts", "index.ts", "options.ts", "errors.ts"])

const tableRows = (): ReadonlyArray<string> =>
  readFileSync(new URL("docs/architecture.md", root), "utf8").split("\n").filter((line) => line.startsWith("| "))

describe("docs/architecture.md's broker module table", () => {
  it("has a row naming each module of src/broker that owns a concern", () => {
    const rows = tableRows()
    const modules = readdirSync(new URL("src/broker/", root)).filter((name) => name.endsWith(".ts"))
    const missing = modules.filter((name) =>
      !DESCRIBED_ELSEWHERE.has(name) && !rows.some((row) => row.includes(name))
    )
    assert.deepStrictEqual(missing, [])
  })

  it("says of MailDelivery.ts that a control given back alone is kept, not that it goes only with its message", () => {
    const row = tableRows().find((line) => line.startsWith("| MailDelivery.ts"))
    assert.ok(row !== undefined, "no MailDelivery.ts row")
    assert.include(row, "KeptControls.ts")
    assert.notInclude(row, "a control frame goes only with its message")
  })
})
