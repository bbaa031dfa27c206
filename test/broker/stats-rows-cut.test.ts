/**
 * A `stats_result` fits one frame (task statscap). Its `byGroupStatus` has a row per distinct (scope, group, status)
 * of the live sessions, so with every session in a scope of its own and scope, group and status of 256 "€" (about
 * 2.3 KB a row) some 450 sessions make a snapshot over 1 MiB, which the writer's guard dropped: `stats` was never
 * answered. The broker now keeps the rows that fit, most sessions first (ties by key), and tells a client granted
 * `stats-rows-cut-v1` how many rows and sessions it left out; a `stats-v1`-only client gets the same rows without the
 * field. Each test builds such a broker — 460 single-session rows and three rows of several sessions whose scopes
 * sort after every other — and checks the answer's bytes, rows and counts against the rows the test registered.
 * A `list` sent after `stats` on the same connection (answered in order) is the barrier: an answer dropped is missing
 * once the list is answered. On a broker over the in-memory network under `patientClock` (a step carries a megabyte);
 * no time passes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_FRAME_BYTES } from "../../src/protocol/constants.ts"
import { GROUPS_V1, STATS_ROWS_CUT_V1, STATS_V1 } from "../../src/protocol/features.ts"
import { frameBytes } from "../../src/protocol/framing.ts"
import type { BrokerStatsSnapshot, SessionCount } from "../../src/protocol/stats.ts"
import { patientClock, withMemoryBroker } from "../support/memory.ts"
import type { WireClient } from "../support/wire.ts"

/** 256 units: `tag`, then "€" (three bytes each). */
const euros = (tag: string): string => `${tag}${"€".repeat(256 - tag.length)}`

/** The group and status every built session has: 256 "€" each. */
const GROUP = euros("")
const STATUS = euros("")

/** A row's key as the broker orders ties: scope, group, status. */
const keyOf = (row: SessionCount): string => JSON.stringify([row.scope, row.group, row.status])

/** Rows most sessions first, ties by key: the order the broker answers in. */
const ordered = (rows: ReadonlyArray<SessionCount>): ReadonlyArray<SessionCount> =>
  [...rows].sort((a, b) => b.count - a.count || (keyOf(a) < keyOf(b) ? -1 : keyOf(a) > keyOf(b) ? 1 : 0))

/** Sessions counted by the rows. */
const sessionsIn = (rows: ReadonlyArray<SessionCount>): number => rows.reduce((sum, row) => sum + row.count, 0)

/**
 * A broker holding `singles` sessions each in a scope of its own ("a…", sorting first), and rows of 3, 2 and 2
 * sessions in scopes "z3…", "z2a…", "z2b…" (sorting last), every one in group GROUP with status STATUS; and an asker
 * granted `features`. Returns the asker and every row the broker should count, the asker's own included.
 */
const built = (singles: number, features: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const broker = yield* withMemoryBroker({ idleExit: null })
    const rows: Array<SessionCount> = []
    const joinRow = (scope: string, count: number) =>
      Effect.gen(function*() {
        for (let i = 0; i < count; i++) {
          yield* broker.session({
            sessionId: `s-${i}`,
            scopeId: scope,
            status: STATUS,
            frame: { features: [GROUPS_V1], group: GROUP }
          })
        }
        rows.push({ scope, group: GROUP, status: STATUS, count })
      })
    for (let i = 0; i < singles; i++) yield* joinRow(euros(`a${String(i).padStart(4, "0")}`), 1)
    yield* joinRow(euros("z3"), 3)
    yield* joinRow(euros("z2a"), 2)
    yield* joinRow(euros("z2b"), 2)
    const asker = yield* broker.session({ sessionId: "asker", frame: { features } })
    for (const feature of features) assert.include(asker.registered.features ?? [], feature)
    rows.push({ scope: "", group: "default", status: "", count: 1 })
    return { asker: asker.client, rows: ordered(rows) }
  })

/** Sends `stats`, then a fence `list`; returns the text of the `stats_result` once the fence is answered, if any. */
const statsText = (client: WireClient, requestId: string) =>
  Effect.gen(function*() {
    yield* client.send({ type: "stats", requestId })
    yield* client.send({ type: "list", requestId: "fence" })
    yield* client.next("sessions", (frame) => frame.requestId === "fence")
    return client.receivedTexts().find((text) =>
      text.startsWith(`{"type":"stats_result","requestId":${JSON.stringify(requestId)}`)
    )
  })

/** The answer's snapshot, required to have arrived and to fit 1 MiB. */
const fitting = (text: string | undefined): { readonly stats: BrokerStatsSnapshot; readonly bytes: number } => {
  if (text === undefined) return assert.fail("stats was never answered (the stats_result was dropped)")
  const bytes = frameBytes(text)
  assert.isAtMost(bytes, MAX_FRAME_BYTES)
  const frame: { readonly stats: BrokerStatsSnapshot } = JSON.parse(text)
  return { stats: frame.stats, bytes }
}

/** The answer kept the first rows of `rows` and as many as fit: one more would pass 1 MiB. */
const assertFirstThatFit = (kept: ReadonlyArray<SessionCount>, rows: ReadonlyArray<SessionCount>, bytes: number) => {
  assert.isBelow(kept.length, rows.length, "some rows were left out")
  assert.deepStrictEqual(kept, rows.slice(0, kept.length))
  const next = rows[kept.length]
  if (next === undefined) return assert.fail("precondition: a row was left out")
  assert.isAbove(bytes + frameBytes(JSON.stringify(next)) + 1, MAX_FRAME_BYTES, "the next row would not have fit")
}

describe("stats_result fits one frame", () => {
  it.effect("at 460 sessions of 256-\"€\" rows a stats-rows-cut-v1 client is answered under 1 MiB with the largest rows first and the left-out rows and sessions counted", () =>
    patientClock(Effect.gen(function*() {
      const { asker, rows } = yield* built(460, [STATS_V1, STATS_ROWS_CUT_V1])
      assert.isAbove(frameBytes(JSON.stringify(rows)), MAX_FRAME_BYTES, "precondition: the rows alone pass 1 MiB")
      const { stats, bytes } = fitting(yield* statsText(asker, euros("r")))
      const kept = stats.sessions.byGroupStatus
      assertFirstThatFit(kept, rows, bytes)
      assert.deepStrictEqual(kept.slice(0, 3).map((row) => [row.scope, row.count]), [
        [euros("z3"), 3],
        [euros("z2a"), 2],
        [euros("z2b"), 2]
      ])
      const left = rows.slice(kept.length)
      assert.deepStrictEqual(stats.sessions.byGroupStatusOmitted, { rows: left.length, sessions: sessionsIn(left) })
      assert.strictEqual(stats.sessions.live, sessionsIn(rows))
    })), { timeout: 300_000 })

  it.effect("at 460 sessions of 256-\"€\" rows a stats-v1-only client is answered under 1 MiB with the same first rows and no byGroupStatusOmitted", () =>
    patientClock(Effect.gen(function*() {
      const { asker, rows } = yield* built(460, [STATS_V1])
      const text = yield* statsText(asker, euros("r"))
      const { stats, bytes } = fitting(text)
      assert.notInclude(text ?? "", "byGroupStatusOmitted")
      assertFirstThatFit(stats.sessions.byGroupStatus, rows, bytes)
      assert.isBelow(sessionsIn(stats.sessions.byGroupStatus), stats.sessions.live, "how a v1 client tells a cut")
    })), { timeout: 300_000 })

  it.effect("below 1 MiB nothing is cut: every row, largest first, and byGroupStatusOmitted of zero rows and sessions", () =>
    patientClock(Effect.gen(function*() {
      const { asker, rows } = yield* built(20, [STATS_V1, STATS_ROWS_CUT_V1])
      const { stats } = fitting(yield* statsText(asker, "r"))
      assert.deepStrictEqual(stats.sessions.byGroupStatus, rows)
      assert.deepStrictEqual(stats.sessions.byGroupStatusOmitted, { rows: 0, sessions: 0 })
    })), { timeout: 300_000 })
})
