/**
 * Peer-provided text the CLI prints in text mode (message bodies, topic
 * texts, names: `terminalText`) keeps its lines and tabs and shows every
 * other control character as its escape.
 *
 * Client-supplied strings on the terminal: a session name, group, status,
 * send target, code or message id full of control characters (clear screen,
 * retitle, newline) is shown by `intercom top` (text) and `intercom broker
 * stats` with no control character left and without extra lines; so is
 * one with bidirectional overrides, isolates and marks (which would reorder a
 * row) or zero-width characters (which would hide part of a name and leave a
 * column narrower on screen than its length).
 */
import fc from "fast-check"
import { assert, describe, it } from "vitest"
import { statsText } from "../../src/cli/brokerStats.ts"
import { terminalJson, terminalSafe, terminalText } from "../../src/cli/terminalText.ts"
import { cutToWidth, displayWidth, fitToWidth } from "../../src/cli/terminalWidth.ts"
import { initialSettings, render } from "../../src/cli/top/view.ts"
import type { BrokerSnapshot, SessionRow } from "../../src/observe/Snapshot.ts"
import type { BrokerStatsSnapshot } from "../../src/protocol/stats.ts"
import { sessionRow } from "../support/sessionRow.ts"

const NOW = 1_000_000
const EVIL = "evil\u001b[2J\u001b]0;PWNED\u0007\nsessions 999 FAKE"
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/

/** Bidirectional formatting characters: embeddings and overrides, isolates, marks. */
const BIDI = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\u200e", "\u200f", "\u061c"]
/** Zero-width characters: space, non-joiner, joiner, word joiner, BOM. */
const ZERO_WIDTH = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff"]
/** The line and paragraph separators, which some terminals and pagers take as a new line. */
const SEPARATORS = ["\u2028", "\u2029"]
const UNSAFE = new Set([...BIDI, ...ZERO_WIDTH, ...SEPARATORS])
const isUnsafe = (c: string): boolean => UNSAFE.has(c) || CONTROL.test(c)
const ANY_UNSAFE = new RegExp(`[${[...UNSAFE].join("")}]|${CONTROL.source}`)
/** Characters one column wide on a terminal, as top's cells assume: printable ASCII, U+FFFD and `…`, `→`, `▏`. */
const ONE_COLUMN = /^[\u0020-\u007e\ufffd…→▏]*$/

/** Client text from printable ASCII, controls, bidi and zero-width characters. */
const clientText = fc.string({
  unit: fc.oneof(
    fc.constantFrom(...BIDI, ...ZERO_WIDTH, ...SEPARATORS),
    fc.integer({ min: 0, max: 0x9f }).map((code) => String.fromCharCode(code)),
    fc.constantFrom("a", "b", " ", "-", "é")
  ),
  maxLength: 30
})

const row = (id: string, name: string, extra: Partial<SessionRow> = {}): SessionRow => sessionRow(NOW, id, name, extra)

const snapshot = (name: string, text: string): BrokerSnapshot => ({
  at: NOW,
  startedAt: NOW - 3_600_000,
  sessionCount: 2,
  sessions: [
    row("a", name, { status: text, group: text }),
    row("b", "bob")
  ],
  queues: { mailbox: 0, staged: 0, outboxChars: 0, unregistered: 0 },
  askCount: 1,
  asks: [{ messageId: text, from: { id: "b", name: "bob" }, to: { id: "a", name }, askedAt: NOW - 1_000, deadline: NOW + 60_000 }],
  totals: { delivered: 0, queued: 0, staged: 0, refused: 1, asks: 1, replies: 0 },
  rate: { windowMs: 1_000, routedPerSec: 0 },
  traffic: [],
  refusals: [{ seq: 0, at: NOW - 2_000, from: { id: "a", name }, to: text, messageId: text, code: text, reason: text }]
})

const stats = (text: string): BrokerStatsSnapshot => ({
  at: NOW,
  startedAt: NOW - 60_000,
  sessions: { live: 1, unregistered: 0, byGroupStatus: [{ scope: text, group: text, status: text, count: 1 }] },
  routed: { delivered: 0, queued: 0, staged: 0, replayed: 0, refused: 1, refusedByCode: { [text]: 1 } },
  mailbox: { depth: 0 },
  staging: { depth: 0 },
  outbox: { queuedChars: 0, backpressureWaits: 0 },
  asks: { open: 0, oldestAgeMs: null }
})

describe("client-supplied strings on the terminal", () => {
  it("terminalSafe replaces C0, DEL and C1 one for one and keeps the rest", () => {
    assert.strictEqual(terminalSafe("a\u0000b\tc\u007fd\u0085e\u009bf é→"), "a\uFFFDb\uFFFDc\uFFFDd\uFFFDe\uFFFDf é→")
    assert.strictEqual(terminalSafe(EVIL).length, EVIL.length)
  })

  it("terminalSafe replaces every bidi, zero-width and line-separator character one for one (property)", () => {
    assert.strictEqual(terminalSafe("admin\u202egnp.exe\u200b"), "admin\uFFFDgnp.exe\uFFFD")
    fc.assert(fc.property(clientText, (text) => {
      const safe = terminalSafe(text)
      assert.strictEqual(safe.length, text.length, "one for one: a cut to a width stays exact")
      for (let i = 0; i < text.length; i++) {
        assert.strictEqual(safe[i], isUnsafe(text[i]!) ? "\uFFFD" : text[i], `at ${i}`)
      }
    }))
  })

  it("top's and broker stats' text has no bidi, zero-width, separator or control character, and top's table rows keep their width (property)", () => {
    const size = { columns: 400, rows: 60 }
    fc.assert(fc.property(clientText, clientText, (name, text) => {
      const lines = render(snapshot(name, text), initialSettings, size, "intercom top")
      for (const line of lines) if (ANY_UNSAFE.test(line)) assert.fail(`an unsafe character in ${JSON.stringify(line)}`)
      // Every character of a session row is one column wide, so its length is its width on screen.
      const header = lines.findIndex((line) => line.startsWith("NAME"))
      for (const line of lines.slice(header + 1, header + 3)) {
        assert.match(line.replaceAll("é", "e"), ONE_COLUMN)
        assert.strictEqual(line.length, lines[header]!.length)
      }
      for (const line of statsText(stats(text)).split("\n")) {
        if (ANY_UNSAFE.test(line)) assert.fail(`an unsafe character in ${JSON.stringify(line)}`)
      }
    }), { numRuns: 200 })
  })

  it("top's text view has no control character and no extra line", () => {
    const size = { columns: 200, rows: 60 }
    const clean = render(snapshot("plain", "x"), initialSettings, size, "intercom top")
    const evil = render(snapshot(EVIL, EVIL), initialSettings, size, "intercom top")
    for (const line of evil) assert.notMatch(line, CONTROL)
    assert.strictEqual(evil.join("\n").split("\n").length, clean.join("\n").split("\n").length)
    assert.include(evil.join("\n"), "evil\uFFFD[2J\uFFFD]0;PWNED\uFFFD\uFFFDsessions 999 FAKE")
    // A cut cell ends in "…" after replaced characters, never inside an escape sequence.
    assert.isTrue(evil.some((line) => line.startsWith("evil\uFFFD[2J\uFFFD]0;PWNED… ")))
  })

  it("broker stats has no control character and no extra line", () => {
    const clean = statsText(stats("x"))
    const evil = statsText(stats(EVIL))
    assert.notMatch(evil, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/)
    assert.strictEqual(evil.split("\n").length, clean.split("\n").length)
    assert.include(evil, "group evil\uFFFD[2J")
  })
})

/** What `terminalText` leaves: any C0 or C1 control but TAB and LF, and the bidi embeddings, overrides, isolates and separators. */
const NOT_IN_TEXT = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028-\u202e\u2066-\u2069]/

/** Peer text: any UTF-16 unit from C0, C1 and the formatting characters, lines, tabs, CRLF, printable text and emoji. */
const peerText = fc.string({
  unit: fc.oneof(
    fc.integer({ min: 0, max: 0x9f }).map((code) => String.fromCharCode(code)),
    fc.constantFrom(...BIDI, ...ZERO_WIDTH, ...SEPARATORS, "\r\n", "\n", "\t", "é", "→", "👨\u200d👩"),
    fc.string()
  ),
  maxLength: 40
})

describe("peer text printed by the CLI (terminalText)", () => {
  it("never holds a control character but LF and TAB, nor a bidi override, isolate or separator (property)", () => {
    fc.assert(fc.property(peerText, (text) => {
      const shown = terminalText(text)
      assert.notMatch(shown, NOT_IN_TEXT, JSON.stringify(shown))
      assert.strictEqual(terminalText(shown), shown)
    }))
  })

  it("leaves text without such characters unchanged: lines, tabs, marks, joiners, emoji (property)", () => {
    const safe = fc.string({
      unit: fc.oneof(
        fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code)),
        fc.constantFrom("\n", "\t", "é", "中", "\u200d", "\u200e", "👍")
      )
    })
    fc.assert(fc.property(safe, (text) => assert.strictEqual(terminalText(text), text)))
  })

  it("shows each control character as its escape, a CRLF as LF, and keeps the number of lines", () => {
    assert.strictEqual(
      terminalText("build ok\u001b]0;owned\u0007\r\nnext\rover\u009b2J\u202eeht"),
      "build ok\\u001b]0;owned\\u0007\nnext\\u000dover\\u009b2J\\u202eeht"
    )
  })
})

describe("terminalJson: the CLI's --json lines", () => {
  /** What a terminal acts on although JSON.stringify leaves it raw: DEL, C1, bidi embeddings/overrides/isolates, U+2028/9. */
  const RAW_IN_JSON = /[\u0000-\u001f\u007f-\u009f\u2028-\u202e\u2066-\u2069]/

  it("holds no control, C1, bidirectional override or isolate, or separator, and parses back to the same value", () => {
    fc.assert(
      fc.property(fc.dictionary(clientText, fc.oneof(clientText, fc.array(clientText), fc.integer())), (value) => {
        const line = terminalJson(value)
        assert.notMatch(line, RAW_IN_JSON)
        assert.deepStrictEqual(JSON.parse(line), value)
      })
    )
  })

  it("writes a C1 CSI and a right-to-left override as escapes", () => {
    assert.strictEqual(terminalJson({ name: "x\u009b2J\u202e" }), String.raw`{"name":"x\u009b2J\u202e"}`)
  })
})

describe("terminal columns (displayWidth, cutToWidth, fitToWidth)", () => {
  it("an emoji drawn as one picture takes two columns: with U+FE0F, a flag, a joined sequence", () => {
    assert.strictEqual(displayWidth("\u2764\ufe0f"), 2)
    assert.strictEqual(displayWidth("\u{1f1fa}\u{1f1f8}"), 2)
    assert.strictEqual(displayWidth("\u{1f468}\u200d\u{1f469}\u200d\u{1f467}"), 2)
    assert.strictEqual(fitToWidth("ab\u{1f1fa}\u{1f1f8}", 6), "ab\u{1f1fa}\u{1f1f8}  ")
    // Cut between clusters: never inside the flag or the family.
    assert.strictEqual(cutToWidth("ab\u{1f1fa}\u{1f1f8}cd", 3), "ab")
    assert.strictEqual(cutToWidth("\u{1f468}\u200d\u{1f469}\u200d\u{1f467}x", 2), "\u{1f468}\u200d\u{1f469}\u200d\u{1f467}")
    // Plain text and a lone surrogate as before.
    assert.strictEqual(displayWidth("bob-1 ~/x"), 9)
    assert.strictEqual(displayWidth("a\ud800b"), 3)
  })

  it("counts East Asian wide and fullwidth characters and emoji as two columns, combining marks as none", () => {
    assert.strictEqual(displayWidth("bob"), 3)
    assert.strictEqual(displayWidth("数据"), 4)
    assert.strictEqual(displayWidth("한국어"), 6)
    assert.strictEqual(displayWidth("ＡＢ"), 4)
    assert.strictEqual(displayWidth("cafe\u0301"), 4)
    assert.strictEqual(displayWidth("\u{1f600}"), 2)
    assert.strictEqual(displayWidth("a\u{20000}b"), 4)
  })

  it("cuts between code points, keeping a last character's marks and leaving out a wide one that would straddle the edge", () => {
    assert.strictEqual(cutToWidth("数据分析", 5), "数据")
    assert.strictEqual(cutToWidth("ab\u{1f600}c", 3), "ab")
    assert.strictEqual(cutToWidth("cafe\u0301s", 4), "cafe\u0301")
    assert.strictEqual(cutToWidth("abc", 0), "")
  })

  it("fits to exactly the columns asked, with an ellipsis when cut (property)", () => {
    const char = fc.constantFrom("a", "é", "e\u0301", "数", "한", "\u{1f600}", "\u{20000}", "Ｚ")
    fc.assert(fc.property(fc.array(char, { maxLength: 30 }), fc.integer({ min: 1, max: 40 }), (chars, columns) => {
      const text = chars.join("")
      const fitted = fitToWidth(text, columns)
      assert.strictEqual(displayWidth(fitted), columns)
      assert.notMatch(fitted, /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/)
      if (displayWidth(text) > columns) assert.include(fitted, "…")
      else assert.isTrue(fitted.startsWith(text))
    }))
  })
})
