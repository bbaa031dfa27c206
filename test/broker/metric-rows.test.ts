/**
 * The `intercom_broker_sessions` series (MetricSeries.ts) against the rows of
 * the snapshot they read: a collection reads each row once, not once per
 * series, and every series' value is the count a search of the rows from the
 * start finds for its (scope, group, status), 0 when none. The series are
 * registered by a fiber: each test waits for its first pass by yielding
 * until the registry holds them (no sleep; the TestClock never moves).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Metric } from "effect"
import { TestClock } from "effect/testing"
import fc from "fast-check"
import { countsByRow, registerBrokerMetrics } from "../../src/broker/MetricSeries.ts"
import type { BrokerStatsSnapshot, SessionCount } from "../../src/protocol/stats.ts"

const snapshotWith = (rows: ReadonlyArray<SessionCount>): BrokerStatsSnapshot => ({
  at: 1,
  startedAt: 0,
  sessions: { live: 0, unregistered: 0, byGroupStatus: rows },
  routed: { delivered: 0, queued: 0, staged: 0, replayed: 0, refused: 0, refusedByCode: {} },
  mailbox: { depth: 0 },
  staging: { depth: 0 },
  outbox: { queuedChars: 0, backpressureWaits: 0 },
  asks: { open: 0, oldestAgeMs: null }
})

/** The `intercom_broker_sessions` series in the registry now, each with its attributes and value. */
const sessionSeries = Effect.map(Metric.snapshot, (all) =>
  all.flatMap((one) => {
    if (one.id !== "intercom_broker_sessions" || one.type !== "Gauge") return []
    const attributes = one.attributes ?? {}
    return [{
      scope: String(attributes["scope"]),
      group: String(attributes["group"]),
      status: String(attributes["status"]),
      value: Number(one.state.value)
    }]
  }))

/** Yields until the registry holds `count` session series (the reconcile fiber's first pass). */
const awaitSeries = (count: number) =>
  Effect.gen(function*() {
    while ((yield* sessionSeries).length < count) yield* Effect.yieldNow
  })

/** The value the series of `key` had before the rows were indexed: a search from the start. */
const naive = (rows: ReadonlyArray<SessionCount>, key: { scope: string; group: string; status: string }): number =>
  rows.find((r) => r.scope === key.scope && r.group === key.group && r.status === key.status)?.count ?? 0

const word = fc.constantFrom("", "a", "b", "€")
const row = fc.record({ scope: word, group: word, status: word, count: fc.integer({ min: 1, max: 1000 }) })

describe("broker metric rows", () => {
  it.effect("one collection of 400 session series reads each row of the snapshot once", () =>
    Effect.gen(function*() {
      const count = 400
      const rows: Array<SessionCount> = []
      for (let i = 0; i < count; i++) rows.push({ scope: "", group: `g${i}`, status: "idle", count: i + 1 })
      // Counts reads of a row by its index, which both `for…of` and `find` make.
      let reads = 0
      const counted = new Proxy(rows, {
        get: (target, property, receiver) => {
          if (typeof property === "string" && /^\d+$/.test(property)) reads++
          return Reflect.get(target, property, receiver)
        }
      })
      let now = 1
      // A new snapshot object at every millisecond, as the broker's is.
      yield* registerBrokerMetrics(() => snapshotWith(counted), () => now)
      yield* awaitSeries(count)
      now = 2
      reads = 0
      const series = yield* sessionSeries
      assert.strictEqual(series.length, count)
      assert.strictEqual(reads, count, "row reads in one collection")
      assert.deepStrictEqual(series.map((one) => one.value).sort((a, b) => a - b), rows.map((one) => one.count))
    }).pipe(Effect.provideService(Metric.MetricRegistry, new Map())))

  it("each session series exports the count a search of the current rows finds, 0 when none", () =>
    fc.assert(
      fc.asyncProperty(fc.array(row, { maxLength: 30 }), fc.array(row, { maxLength: 30 }), (first, second) =>
        Effect.runPromise(
          Effect.gen(function*() {
            let current = snapshotWith(first)
            let now = 1
            yield* registerBrokerMetrics(() => current, () => now)
            yield* awaitSeries(countsByRow(first).size)
            // The series of the first rows, read against the first rows and then against the second.
            for (const rows of [first, second]) {
              current = snapshotWith(rows)
              now++
              const series = yield* sessionSeries
              assert.strictEqual(series.length, countsByRow(first).size)
              for (const one of series) assert.strictEqual(one.value, naive(rows, one), JSON.stringify(one))
            }
          }).pipe(
            Effect.scoped,
            Effect.provide(TestClock.layer()),
            Effect.provideService(Metric.MetricRegistry, new Map())
          )
        )),
      { numRuns: 100 }
    ))
})
