/**
 * `intercom broker stats`'s text (`statsText`): after the rows by group and status the broker's answer kept, a line
 * says how many rows and sessions it left out to fit one frame (`byGroupStatusOmitted`, `stats-rows-cut-v1`); with
 * nothing left out, or from a broker that does not say, there is no such line. Plain synchronous calls on snapshots
 * built here.
 */
import { assert, describe, it } from "@effect/vitest"
import { statsText } from "../../src/cli/brokerStats.ts"
import type { BrokerStatsSnapshot, RowsOmitted } from "../../src/protocol/stats.ts"

/** A snapshot of 7 live sessions, two rows of them shown, and `omitted` when given. */
const snapshot = (omitted: RowsOmitted | undefined): BrokerStatsSnapshot => ({
  at: 61_000,
  startedAt: 1_000,
  sessions: {
    live: 7,
    unregistered: 0,
    byGroupStatus: [
      { scope: "", group: "default", status: "busy", count: 3 },
      { scope: "", group: "ops", status: "", count: 2 }
    ],
    ...(omitted === undefined ? {} : { byGroupStatusOmitted: omitted })
  },
  routed: { delivered: 0, queued: 0, staged: 0, replayed: 0, refused: 0, refusedByCode: {} },
  mailbox: { depth: 0 },
  staging: { depth: 0 },
  outbox: { queuedChars: 0, backpressureWaits: 0 },
  asks: { open: 0, oldestAgeMs: null }
})

/** The lines of the sessions part: from the `sessions:` line to the `routed:` one. */
const sessionLines = (text: string): ReadonlyArray<string> => {
  const lines = text.split("\n")
  return lines.slice(lines.findIndex((line) => line.startsWith("  sessions:")), lines.findIndex((line) => line.startsWith("  routed:")))
}

describe("intercom broker stats: the rows left out", () => {
  it("rows left out are told after the rows shown: \"… and N more rows (M sessions)\"", () => {
    assert.deepStrictEqual(sessionLines(statsText(snapshot({ rows: 2, sessions: 2 }))), [
      "  sessions:   7 live",
      "    group default, status busy: 3",
      "    group ops, status (none): 2",
      "    … and 2 more rows (2 sessions)"
    ])
  })

  it("one row of one session left out is told in the singular", () => {
    assert.include(statsText(snapshot({ rows: 1, sessions: 1 })), "    … and 1 more row (1 session)")
  })

  it("nothing left out, or no byGroupStatusOmitted at all, adds no line", () => {
    for (const omitted of [{ rows: 0, sessions: 0 }, undefined]) {
      assert.deepStrictEqual(sessionLines(statsText(snapshot(omitted))), [
        "  sessions:   7 live",
        "    group default, status busy: 3",
        "    group ops, status (none): 2"
      ])
    }
  })
})
