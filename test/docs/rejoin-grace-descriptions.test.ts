/**
 * What the `rejoinGraceMs` option is said to bound, in each of its three descriptions: docs/client.md's options table,
 * its JSDoc in src/client/options.ts, docs/testing.md's timings table. Besides a "not found" (and a reply's "no
 * pending ask") just after a reconnect, the grace bounds how long a send lost with its connection on the way is
 * retried on every refusal src/client/afterLoss.ts classes `retried` ("target disconnected" among them); and the
 * retries come after 25, 50, 100, 200, then every 250 ms (Resending.ts `sendRejoining`). Review revca probe 1 found
 * all three naming only the not-found retry, and the JSDoc saying "every 250 ms".
 */
import { readFileSync } from "node:fs"
import { assert, describe, it } from "@effect/vitest"

/** The text of `relative` (from the repository root). */
const read = (relative: string): string => readFileSync(new URL(`../../${relative}`, import.meta.url), "utf8")

/** The one line of `text` (a Markdown table row) that starts with `head`. */
const row = (text: string, head: string): string => {
  const line = text.split("\n").find((candidate) => candidate.startsWith(head))
  assert.isDefined(line, `setup: no row starting ${head}`)
  return line ?? ""
}

/** Checks that `description` names the not-found retry, and the after-a-loss class by its rule and an example. */
const namesWhatTheGraceBounds = (description: string): void => {
  assert.include(description, "not found", "setup: the description no longer names the not-found retry")
  assert.include(description, "lost with a connection on the way", `no word of a send lost on the way: ${description}`)
  assert.include(description, "afterLoss.ts", `no pointer to the rule that classes the refusals: ${description}`)
  assert.include(description, "target disconnected", `no example of a refusal retried after a loss: ${description}`)
}

describe("the rejoinGraceMs option's descriptions say what the grace bounds", () => {
  it("docs/client.md's options table: the rejoinGraceMs row", () => {
    namesWhatTheGraceBounds(row(read("docs/client.md"), "| `rejoinGraceMs` | `10000` |"))
  })

  it("src/client/options.ts: the rejoinGraceMs JSDoc, with the back-off as it is", () => {
    const text = read("src/client/options.ts").replace(/\s*\n\s*\*?\s*/g, " ")
    const end = text.indexOf("readonly rejoinGraceMs?: number")
    assert.isAtLeast(end, 0, "setup: no rejoinGraceMs option")
    const doc = text.slice(text.lastIndexOf("/**", end), end)
    namesWhatTheGraceBounds(doc)
    assert.include(doc, "after 25, 50, 100, 200, then every 250 ms", `the back-off is not said as it is: ${doc}`)
  })

  it("docs/testing.md's timings table: the rejoin grace row", () => {
    const line = row(read("docs/testing.md"), "| rejoin grace (`rejoinGraceMs`:")
    namesWhatTheGraceBounds(line.slice(0, line.indexOf(" | ", 2)))
  })
})
