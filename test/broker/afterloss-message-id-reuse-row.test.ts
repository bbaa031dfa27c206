/**
 * docs/client.md's after-loss table says, for every refusal, where the broker gives it (review revcf, item R3, probe
 * 3): since helper askqkey E_MESSAGE_ID_REUSE is also given by Questions.ts's send stage, from the broker's state now
 * (a question asked, waited on, or with its edge open), not from a record of the first write, and its row names it.
 * Reads the file; nothing runs.
 */
import { assert, describe, it } from "@effect/vitest"
import { readFileSync } from "node:fs"

describe("the after-loss table's MessageIdReuse row", () => {
  it("names Questions.ts's send stage among the places E_MESSAGE_ID_REUSE is given", () => {
    const doc = readFileSync(new URL("../../docs/client.md", import.meta.url), "utf8")
    const row = doc.split("\n").find((line) => line.startsWith("  | `MessageIdReuse` (`E_MESSAGE_ID_REUSE`)"))
    assert.isDefined(row, "setup: the after-loss table has no MessageIdReuse row")
    assert.include(row, "Questions.ts", "the row does not name Questions.ts's stage")
  })
})
