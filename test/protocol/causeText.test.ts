/**
 * `causeText`: a message chained after another's colon reads as one
 * sentence — an ordinary first word is lower-cased, and nothing else is
 * touched (codes, acronyms, names, paths, quoted values). A table of the
 * cases the module header names, properties over generated texts, and the
 * chained errors of a spawn failure as a user reads them.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { IntercomNotConnected } from "../../src/client/errors.ts"
import { BrokerSpawnFailed } from "../../src/client/spawn.ts"
import { causeText } from "../../src/protocol/causeText.ts"

describe("causeText", () => {
  it("lower-cases an ordinary first word, and leaves codes, acronyms, names, paths and quoted values", () => {
    const table: ReadonlyArray<readonly [string, string]> = [
      ["Broker failed to start: the broker exited", "broker failed to start: the broker exited"],
      ["Cannot use the intercom directory /a/intercom: it is not a directory.", "cannot use the intercom directory /a/intercom: it is not a directory."],
      ["The intercom broker (pid 7) is running", "the intercom broker (pid 7) is running"],
      ["A file is in the way", "a file is in the way"],
      ["Broker's lock is held", "broker's lock is held"],
      ["Read-only file system", "read-only file system"],
      ["Connection closed by peer", "connection closed by peer"],
      ["Failed: again", "failed: again"],
      ["EACCES: permission denied, open '/a'", "EACCES: permission denied, open '/a'"],
      ["E_TARGET_NOT_FOUND: no such session", "E_TARGET_NOT_FOUND: no such session"],
      ["JSON at position 3 is bad", "JSON at position 3 is bad"],
      ["SQLite could not open the file", "SQLite could not open the file"],
      ["IntercomClient option instanceId is too long", "IntercomClient option instanceId is too long"],
      ["V8 ran out of memory", "V8 ran out of memory"],
      ["Node.js 22.19 or newer is required", "Node.js 22.19 or newer is required"],
      ["Node 22.19 or newer is required", "Node 22.19 or newer is required"],
      ["Unix sockets only", "Unix sockets only"],
      ["I cannot", "I cannot"],
      ["X marks it", "X marks it"],
      ["C:\\agents is not a directory", "C:\\agents is not a directory"],
      ["/tmp/agent is owned by uid 0", "/tmp/agent is owned by uid 0"],
      ["~/agent does not exist", "~/agent does not exist"],
      ["\"Planner\" is not connected", "\"Planner\" is not connected"],
      ["`Planner` is not connected", "`Planner` is not connected"],
      ["already lower-case", "already lower-case"],
      ["", ""],
      [" Leading space", " Leading space"]
    ]
    for (const [text, expected] of table) assert.strictEqual(causeText(text), expected, JSON.stringify(text))
  })

  it("changes at most the first character, only to its lower case, and is idempotent", () => {
    fc.assert(fc.property(fc.string(), (text) => {
      const out = causeText(text)
      assert.strictEqual(out.length, text.length)
      assert.strictEqual(out.slice(1), text.slice(1))
      assert.isTrue(out === text || out.charAt(0) === text.charAt(0).toLowerCase())
      assert.strictEqual(causeText(out), out)
    }))
  })

  it("never touches a text whose first word has a second capital, a digit, an underscore or a dot", () => {
    const word = fc.stringMatching(/^[A-Z][A-Za-z0-9_.]*([A-Z0-9_.])[A-Za-z0-9_.]*$/)
    fc.assert(fc.property(word, fc.constantFrom("", " is wrong", ": detail", ", then"), (first, rest) => {
      assert.strictEqual(causeText(first + rest), first + rest)
    }))
  })

  it("a spawn failure inside a connection failure reads as one sentence", () => {
    const spawn = new BrokerSpawnFailed({ detail: "Cannot use the intercom directory /a/intercom: it is not a directory." })
    assert.strictEqual(
      new IntercomNotConnected({ reason: spawn.message }).message,
      "Intercom not connected: broker failed to start: cannot use the intercom directory /a/intercom: it is not a directory."
    )
    assert.strictEqual(
      new IntercomNotConnected({ reason: "EACCES: permission denied" }).message,
      "Intercom not connected: EACCES: permission denied"
    )
  })
})
