/**
 * Client-supplied strings on the terminal: a session name, group, status,
 * send target, code or message id full of control characters (clear screen,
 * retitle, newline) is shown by `intercom top` (text) and `intercom broker
 * stats` with no control character left and without extra lines.
 */
import { assert, describe, it } from "vitest"
import { statsText } from "../../src/cli/brokerStats.ts"
import { terminalSafe } from "../../src/cli/terminalText.ts"
import { initialSettings, render } from "../../src/cli/top/view.ts"
import type { BrokerSnapshot, SessionRow } from "../../src/observe/Snapshot.ts"
import type { BrokerStatsSnapshot } from "../../src/protocol/stats.ts"

const NOW = 1_000_000
const EVIL = "evil\u001b[2J\u001b]0;PWNED\u0007\nsessions 999 FAKE"
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/

const row = (id: string, name: string, extra: Partial<SessionRow> = {}): SessionRow => ({
  id,
  name,
  group: "default",
  lastSeen: NOW,
  lastActivity: NOW - 5_000,
  pendingAsks: 0,
  waitingAsks: 0,
  messagesOut: 0,
  messagesIn: 0,
  outboxChars: 0,
  ratePerSec: 0,
  registeredAt: NOW - 60_000,
  ...extra
})

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
