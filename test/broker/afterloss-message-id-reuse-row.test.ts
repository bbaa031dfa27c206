/**
 * docs/client.md's after-loss table says, for every refusal, where the broker gives it (review revcf, item R3, probe
 * 3): since helper askqkey E_MESSAGE_ID_REUSE is also given by Questions.ts's send stage, from the broker's state now
 * (a question asked, waited on, or with its edge open), not from a record of the first write, and a row names it
 * (since helper afterloss3 the table has one MessageIdReuse row per reason). Reads the file; nothing runs.
 */
import { assert, describe, it } from "@effect/vitest"
import { readFileSync } from "node:fs"

describe("the after-loss table's MessageIdReuse rows", () => {
  it("name Questions.ts's send stage among the places E_MESSAGE_ID_REUSE is given", () => {
    const doc = readFileSync(new URL("../../docs/client.md", import.meta.url), "utf8")
    const rows = doc.split("\n").filter((line) => line.startsWith("  | `MessageIdReuse` (`E_MESSAGE_ID_REUSE`)"))
    assert.isAbove(rows.length, 0, "setup: the after-loss table has no MessageIdReuse row")
    assert.isTrue(rows.some((row) => row.includes("Questions.ts")), "no MessageIdReuse row names Questions.ts's stage")
  })
})
