/**
 * The lists of extensions the docs give against the code's (task lossgrant, gap 2): docs/client.md's `features` row
 * lists what every client connection asks for — `CLIENT_FEATURES` (client/RegisterHandshake.ts), said there to be
 * all of `EXTENSION_FEATURES` (protocol/features.ts) but the exceptions it names; docs/protocol.md's "Extensions and
 * negotiation" names every extension that exists, counts them in a word, says which the client does not ask for,
 * and documents each under a heading of its own or as "an extension of its own" in another's section. Each list is
 * compared both ways — a name the code has and the doc lacks, a name the doc has and the code lacks — and a failure
 * says which file to fix. Plain synchronous reads of the repository's files.
 */
import { readFileSync } from "node:fs"
import { assert, describe, it } from "@effect/vitest"
import { CLIENT_FEATURES } from "../../src/client/RegisterHandshake.ts"
import { EXTENSION_FEATURES } from "../../src/protocol/features.ts"

/** The text of `relative` (from the repository root). */
const read = (relative: string): string => readFileSync(new URL(`../../${relative}`, import.meta.url), "utf8")

/** The extension names written as code (`name-v1`) in `text`, in order. */
const namesIn = (text: string): ReadonlyArray<string> => [...text.matchAll(/`([a-z][a-z0-9-]*-v\d+)`/g)].map((m) => m[1] ?? "")

/** The English word for `n` (1 to 99), capitalised, as a sentence starts with it: 23 is "Twenty-three". */
const numberWord = (n: number): string => {
  const ones = ["", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
    "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
  const tens = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
  const word = n < 20 ? ones[n] ?? "" : `${tens[Math.floor(n / 10)] ?? ""}${n % 10 === 0 ? "" : `-${ones[n % 10] ?? ""}`}`
  return word.charAt(0).toUpperCase() + word.slice(1)
}

/**
 * What is wrong with `listed` (the names `doc` gives, `where` in it) against `expected` (the code's, `source`, defined
 * in `code`): each name missing from the doc, each the code does not have, each listed twice — with the file to fix:
 * the doc, since the docs say what exists, unless the code is what is wrong.
 */
const differences = (
  doc: string,
  where: string,
  listed: ReadonlyArray<string>,
  source: string,
  code: string,
  expected: ReadonlyArray<string>
): ReadonlyArray<string> => [
  ...expected.filter((name) => !listed.includes(name)).map((name) =>
    `missing from the docs: ${source} has ${name}, but ${doc} (${where}) does not list it — fix ${doc}: add it, unless the code is what is wrong, then fix ${code}`
  ),
  ...listed.filter((name) => !expected.includes(name)).map((name) =>
    `extra in the docs: ${doc} (${where}) lists ${name}, which ${source} does not have — fix ${doc}: remove it, unless the code is what is wrong, then fix ${code}`
  ),
  ...listed.filter((name, at) => listed.indexOf(name) !== at).map((name) =>
    `${doc} (${where}) lists ${name} twice — fix ${doc}`
  )
]

/** Fails with every difference, one a line, when there are any. */
const assertNone = (found: ReadonlyArray<string>): void => assert.deepStrictEqual(found, [], `\n${found.join("\n")}\n`)

/** docs/client.md's `features` row: the exceptions it names and the list it gives. */
const clientDoc = () => {
  const row = read("docs/client.md").split("\n").find((line) => line.startsWith("| `features` |"))
  assert.isDefined(row, "setup: docs/client.md has no `features` row in its options table")
  const said = /\(all of `EXTENSION_FEATURES` in `src\/protocol\/features\.ts` but (.*?), which [^:]*: ([^)]*)\)/.exec(row ?? "")
  assert.isNotNull(said, "setup: docs/client.md's `features` row no longer says \"(all of `EXTENSION_FEATURES` … but …: …)\"")
  return { exceptions: namesIn(said?.[1] ?? ""), listed: namesIn(said?.[2] ?? "") }
}

/** docs/protocol.md's "Extensions and negotiation": its list, count word, the client's exceptions and each extension's documentation. */
const protocolDoc = () => {
  const text = read("docs/protocol.md")
  const start = text.indexOf("\n## Extensions and negotiation\n")
  assert.isAtLeast(start, 0, "setup: docs/protocol.md has no \"Extensions and negotiation\" section")
  const section = text.slice(start)
  const next = section.indexOf("\n## ", 1)
  const body = next < 0 ? section : section.slice(0, next)
  const intro = body.slice(0, body.indexOf("\n### ")).replace(/\s+/g, " ")
  const list = /([A-Z][a-z]+(?:-[a-z]+)?) extensions exist today: (.*?) \(below\)/.exec(intro)
  assert.isNotNull(list, "setup: docs/protocol.md no longer says \"<Number> extensions exist today: … (below)\"")
  const exceptions = /`IntercomClient` always asks for all of them but (.*?) and handles them itself/.exec(intro)
  assert.isNotNull(exceptions, "setup: docs/protocol.md no longer says which extensions `IntercomClient` does not ask for")
  const headings = [...body.matchAll(/^### `([a-z][a-z0-9-]*-v\d+)`/gm)].map((m) => m[1] ?? "")
  const ofTheirOwn = [...body.replace(/\s+/g, " ").matchAll(/`([a-z][a-z0-9-]*-v\d+)`, an extension of its own/g)].map((m) => m[1] ?? "")
  return {
    count: list?.[1] ?? "",
    listed: namesIn(list?.[2] ?? ""),
    exceptions: namesIn(exceptions?.[1] ?? ""),
    documented: [...headings, ...ofTheirOwn],
    headings
  }
}

/** The code's extensions `IntercomClient` does not ask for. */
const notAskedFor = EXTENSION_FEATURES.filter((name) => !CLIENT_FEATURES.includes(name))

describe("the docs' lists of extensions are the code's, both ways", () => {
  it("docs/client.md's `features` row lists exactly what the client asks for (CLIENT_FEATURES)", () => {
    const { listed } = clientDoc()
    assertNone(differences("docs/client.md", "the `features` row's list", listed, "CLIENT_FEATURES", "src/client/RegisterHandshake.ts", CLIENT_FEATURES))
  })

  it("docs/client.md's `features` row names as exceptions exactly the extensions of EXTENSION_FEATURES the client does not ask for", () => {
    const { exceptions } = clientDoc()
    assertNone(differences(
      "docs/client.md",
      "the `features` row's \"but …\"",
      exceptions,
      "EXTENSION_FEATURES less CLIENT_FEATURES",
      "src/protocol/features.ts or src/client/RegisterHandshake.ts",
      notAskedFor
    ))
  })

  it("docs/protocol.md's \"Extensions and negotiation\" lists exactly EXTENSION_FEATURES, and counts them right", () => {
    const { count, listed } = protocolDoc()
    assertNone(differences("docs/protocol.md", "\"… extensions exist today: …\"", listed, "EXTENSION_FEATURES", "src/protocol/features.ts", EXTENSION_FEATURES))
    assert.strictEqual(
      count,
      numberWord(EXTENSION_FEATURES.length),
      `docs/protocol.md says "${count} extensions exist today", EXTENSION_FEATURES has ${EXTENSION_FEATURES.length} — fix docs/protocol.md`
    )
  })

  it("docs/protocol.md names as the client's exceptions exactly the extensions it does not ask for", () => {
    const { exceptions } = protocolDoc()
    assertNone(differences(
      "docs/protocol.md",
      "\"`IntercomClient` always asks for all of them but …\"",
      exceptions,
      "EXTENSION_FEATURES less CLIENT_FEATURES",
      "src/protocol/features.ts or src/client/RegisterHandshake.ts",
      notAskedFor
    ))
  })

  it("docs/protocol.md documents each extension of EXTENSION_FEATURES once, and no other, under a heading or as \"an extension of its own\"", () => {
    const { documented } = protocolDoc()
    assertNone(differences(
      "docs/protocol.md",
      "its \"### `name`\" headings and \"`name`, an extension of its own\"",
      documented,
      "EXTENSION_FEATURES",
      "src/protocol/features.ts",
      EXTENSION_FEATURES
    ))
  })

  it("the count word is English: 23 is Twenty-three, 20 Twenty, 7 Seven", () => {
    assert.deepStrictEqual([numberWord(23), numberWord(20), numberWord(7)], ["Twenty-three", "Twenty", "Seven"])
  })
})
