/**
 * `intercom top`'s screen and keys as pure functions: what a snapshot
 * renders to under each sort and filter, the stuck-ask mark, the cut to the
 * terminal's size, and the key steps (sort cycle, filter editing, quit).
 */
import { assert, describe, it } from "vitest"
import { step } from "../../src/cli/top/keys.ts"
import { formatAge, initialSettings, render, STUCK_ASK_MS, type ViewSettings } from "../../src/cli/top/view.ts"
import type { BrokerSnapshot, SessionRow } from "../../src/observe/Snapshot.ts"
import { sessionRow } from "../support/sessionRow.ts"

const NOW = 1_000_000

const row = (id: string, name: string, extra: Partial<SessionRow> = {}): SessionRow => sessionRow(NOW, id, name, extra)

const snapshot = (extra: Partial<BrokerSnapshot> = {}): BrokerSnapshot => ({
  at: NOW,
  startedAt: NOW - 3_600_000,
  sessionCount: 3,
  sessions: [
    row("a", "alice", { lastActivity: NOW - 1_000, status: "busy", pendingAsks: 1 }),
    row("b", "bob", { lastActivity: NOW - 9_000, ratePerSec: 2.5, waitingAsks: 1 }),
    row("c", "carol", { lastActivity: NOW - 3_000, group: "review", acceptsAsks: false })
  ],
  queues: { mailbox: 2, staged: 1, outboxChars: 2048, unregistered: 0 },
  askCount: 1,
  asks: [{ messageId: "q1", from: { id: "b", name: "bob" }, to: { id: "a", name: "alice" }, askedAt: NOW - STUCK_ASK_MS - 1_000, deadline: NOW + 60_000 }],
  totals: { delivered: 10, queued: 2, staged: 1, refused: 1, asks: 1, replies: 0 },
  rate: { windowMs: 1_000, routedPerSec: 3 },
  traffic: [],
  refusals: [{ seq: 0, at: NOW - 2_000, from: { id: "a", name: "alice" }, to: "nobody", messageId: "m9", code: "E_TARGET_NOT_FOUND", reason: "Session not found" }],
  ...extra
})

const SIZE = { columns: 160, rows: 60 }

const tableNames = (lines: ReadonlyArray<string>): ReadonlyArray<string> => {
  const header = lines.findIndex((line) => line.startsWith("NAME"))
  const end = lines.findIndex((line, i) => i > header && line === "")
  return lines.slice(header + 1, end).map((line) => line.split(" ")[0]!)
}

const settings = (extra: Partial<ViewSettings>): ViewSettings => ({ ...initialSettings, ...extra })

describe("intercom top: the screen", () => {
  it("with silentForMs starts with a line saying the broker is not answering, above its last update", () => {
    const lines = render(snapshot(), initialSettings, SIZE, "intercom top", 12_500)
    assert.strictEqual(lines[0], "!! NOT ANSWERING: no update from the broker for 12s (stopped, hung or overloaded?); below is its last update")
    assert.isTrue(lines[1]?.startsWith("intercom top  up"))
    assert.notInclude(render(snapshot(), initialSettings, SIZE, "intercom top").join("\n"), "NOT ANSWERING")
  })

  it("shows totals, queues, each session's health, the stuck ask and the refusal with its code", () => {
    const text = render(snapshot(), initialSettings, SIZE, "intercom top").join("\n")
    assert.include(text, "intercom top  up 1h00m")
    assert.include(text, "routed 13 (3.0/s)  delivered 10  queued 2  staged 1  refused 1  open asks 1")
    assert.include(text, "queues: mailbox 2  staged 1  outbox 2.0 KB  unregistered 0")
    assert.match(text, /\ncarol\s+review\s+-\s+no-asks\s/)
    assert.include(text, "! bob → alice  q1  age 1m01s  closes in 1m00s  STUCK")
    assert.include(text, "2s ago  alice → nobody  E_TARGET_NOT_FOUND  m9")
  })

  it("sorts by last activity, then by each column s selects", () => {
    const names = (sort: ViewSettings["sort"]) => tableNames(render(snapshot(), settings({ sort }), SIZE, "t"))
    assert.deepStrictEqual(names("activity"), ["alice", "carol", "bob"])
    assert.deepStrictEqual(names("name"), ["alice", "bob", "carol"])
    assert.deepStrictEqual(names("group"), ["alice", "bob", "carol"])
    assert.deepStrictEqual(names("asks"), ["alice", "bob", "carol"])
    assert.deepStrictEqual(names("rate"), ["bob", "alice", "carol"])
  })

  it("a filter keeps matching sessions (name, id, group, status; any case) and the asks and refusals naming one", () => {
    const lines = render(snapshot(), settings({ filter: "REVIEW" }), SIZE, "t")
    assert.deepStrictEqual(tableNames(lines), ["carol"])
    assert.include(lines.join("\n"), "OPEN ASKS (1)\n  none")
    const bob = render(snapshot(), settings({ filter: "bob" }), SIZE, "t").join("\n")
    assert.include(bob, "bob → alice  q1")
    assert.include(bob, "RECENT REFUSALS (1 in all)\n  none")
  })

  it("fits the terminal: no line wider than it, no more lines than it has", () => {
    const many = snapshot({
      sessionCount: 50,
      sessions: Array.from({ length: 50 }, (_, i) => row(`s${i}`, `session-${i}-with-a-rather-long-name`))
    })
    const lines = render(many, initialSettings, { columns: 60, rows: 24 }, "t")
    assert.isAtMost(lines.length, 24)
    for (const line of lines) assert.isAtMost(line.length, 60)
    assert.include(lines.join("\n"), "OPEN ASKS (1)")
    assert.include(lines.at(-1)!, "keys: s sort")
  })

  it("wide and combining characters: rows stay aligned, no line is wider than the terminal, no character is split", () => {
    // Columns as a terminal shows these test strings: CJK and emoji take two, a combining accent none.
    const columns = (line: string): number => {
      let n = 0
      for (const char of line) {
        const code = char.codePointAt(0)!
        n += code >= 0x0300 && code <= 0x036f ? 0 : (code >= 0x4e00 && code <= 0x9fff) || code >= 0x1f300 ? 2 : 1
      }
      return n
    }
    const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/
    const emoji = "\u{1f600}".repeat(30)
    const wide = snapshot({
      sessionCount: 4,
      sessions: [
        row("a", "数据分析员数据分析员数据分析员"),
        row("b", "bob"),
        row("c", "cafe\u0301-cafe\u0301-cafe\u0301"),
        row("d", emoji, { group: "数据" })
      ],
      asks: [{ messageId: "q1", from: { id: "d", name: emoji }, to: { id: "a", name: emoji }, askedAt: NOW - 1_000, deadline: NOW + 60_000 }]
    })
    for (const size of [{ columns: 100, rows: 40 }, { columns: 41, rows: 40 }]) {
      const lines = render(wide, initialSettings, size, "intercom top")
      for (const line of lines) {
        assert.isAtMost(columns(line), size.columns, `wider than ${size.columns} columns: ${line}`)
        assert.notMatch(line, loneSurrogate, `a character split: ${JSON.stringify(line)}`)
      }
      if (size.columns < 100) continue
      const header = lines.findIndex((line) => line.startsWith("NAME"))
      const rows = lines.slice(header + 1, header + 5)
      assert.strictEqual(rows.length, 4)
      for (const line of rows) assert.strictEqual(columns(line), columns(lines[header]!), `misaligned: ${line}`)
      assert.include(rows.join("\n"), "数据分析员数据分… ", "cut to 17 columns and the ellipsis, one column padded")
      assert.include(rows.join("\n"), "cafe\u0301-cafe\u0301-cafe\u0301     default", "14 columns padded to 18")
    }
  })

  it("says how many less active sessions a snapshot left out", () => {
    const text = render(snapshot({ sessionCount: 350 }), initialSettings, SIZE, "t").join("\n")
    assert.include(text, "(347 less active sessions not shown)")
  })

  it("ages read as a person would", () => {
    assert.deepStrictEqual([0, 12_000, 185_000, 3_720_000, 200_000_000].map(formatAge), ["0s", "12s", "3m05s", "1h02m", "2d"])
  })
})

describe("intercom top: the keys", () => {
  const key = (input: string | undefined, name = input ?? "", ctrl = false) => ({ input, name, ctrl })

  it("s cycles the sort column and wraps around", () => {
    let current: ViewSettings = initialSettings
    const seen: Array<string> = []
    for (let i = 0; i < 7; i++) {
      const next = step(current, key("s"))
      assert.notStrictEqual(next, "quit")
      if (next === "quit") return
      current = next
      seen.push(current.sort)
    }
    assert.deepStrictEqual(seen, ["name", "group", "status", "asks", "rate", "activity", "name"])
  })

  it("/ edits a filter: typing, backspace, Enter keeps it, Esc clears it; q inside the filter is text", () => {
    const apply = (keys: ReadonlyArray<ReturnType<typeof key>>) =>
      keys.reduce<ViewSettings | "quit">((s, k) => s === "quit" ? s : step(s, k), initialSettings)
    assert.deepInclude(apply([key("/"), key("b"), key("q"), key(undefined, "backspace"), key("o"), key("\r", "return")]), {
      filter: "bo",
      editing: undefined
    })
    assert.deepInclude(apply([key("/"), key("x"), key(undefined, "escape")]), { filter: "", editing: undefined })
    assert.deepInclude(apply([key("/"), key("x"), key("\r", "return"), key(undefined, "escape")]), { filter: "" })
  })

  it("q, Ctrl+C and Ctrl+D quit", () => {
    assert.strictEqual(step(initialSettings, key("q")), "quit")
    assert.strictEqual(step(initialSettings, key("c", "c", true)), "quit")
    assert.strictEqual(step(settings({ editing: "x" }), key("d", "d", true)), "quit")
  })
})
