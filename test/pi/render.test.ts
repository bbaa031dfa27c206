/**
 * What the extension draws in pi's TUI (src/pi/render.ts): pi's `Text`
 * passes escape sequences through, so a peer's name, cwd and text are drawn
 * through `terminalText` — whatever a broker relayed, nothing it sent can
 * move the cursor, clear the screen or retitle the terminal.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { RECEIVED_ENTRY, SENT_ENTRY } from "../../src/pi/entries.ts"
import { historyLine, inboundDisplay } from "../../src/pi/render.ts"

/** What a terminal acts on: C0 but TAB and LF, DEL, C1, bidi embeddings, overrides and isolates, line separators. */
const ACTIVE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028-\u202e\u2066-\u2069]/

describe("pi rendering of peer-provided text", () => {
  it("an inbound message's sender, cwd and body are drawn with their escapes shown, lines kept", () => {
    const content = "**From evil\u001b]0;owned\u0007** (/w\u009b2J)\n\nhi\u001b[2J\tthere"
    assert.strictEqual(
      inboundDisplay(content),
      "**From evil\\u001b]0;owned\\u0007** (/w\\u009b2J)\n\nhi\\u001b[2J\tthere"
    )
    assert.strictEqual(inboundDisplay([{ type: "text", text: "a\u001bb" }, { type: "image" }]), "a\\u001bb")
  })

  it("history lines show a peer's name and text escaped", () => {
    assert.strictEqual(
      historyLine(RECEIVED_ENTRY, { from: "evil\u001b[31m", message: { text: "x\u0007y" } }),
      "intercom ← evil\\u001b[31m: x\\u0007y"
    )
    assert.strictEqual(
      historyLine(SENT_ENTRY, { to: "peer\u0085", message: { text: "ok" } }),
      "intercom → peer\\u0085: ok"
    )
  })

  it("nothing a peer sends reaches the terminal as a control character", () => {
    const unit = fc.oneof(
      fc.integer({ min: 0, max: 0x9f }).map((code) => String.fromCharCode(code)),
      fc.constantFrom("\u202e", "\u2066", "\u2028", "a", "é")
    )
    fc.assert(fc.property(fc.string({ unit }), fc.string({ unit }), (name, text) => {
      assert.notMatch(inboundDisplay(`**From ${name}**\n\n${text}`), ACTIVE)
      assert.notMatch(historyLine(RECEIVED_ENTRY, { from: name, message: { text } }) ?? "", ACTIVE)
    }), { numRuns: 500 })
  })
})
