/**
 * `stats-v1` and the broker's metrics, over real Unix sockets: after a
 * scripted traffic the snapshot counts exactly what happened (sessions by
 * group and status, sends by outcome and refusal code, mailbox depth, open
 * asks, store commits); a `stats` frame from a client granted the extension
 * is answered with it, one from a client without it is a protocol error; and
 * a broker that exports metrics registers them as effect Metric series that
 * read the same numbers when collected.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Metric, Schema } from "effect"
import { TelemetryEnabled } from "../../src/observability/Telemetry.ts"
import { GROUPS_V1, STATS_V1 } from "../../src/protocol/features.ts"
import { BrokerStatsSnapshot } from "../../src/protocol/stats.ts"
import { assertDelivered, assertFailed } from "../support/assertions.ts"
import { message, messageFor, send, type TestBroker, withBroker } from "../support/broker.ts"

/**
 * The scripted traffic: A (status busy) sends B two messages and asks it one
 * question, sends once to nobody (refused), and sends C, which left (queued).
 */
const traffic = (broker: TestBroker) =>
  Effect.gen(function*() {
    const a = yield* broker.session({ sessionId: "a", name: "A", status: "busy" })
    const b = yield* broker.session({ sessionId: "b", name: "B", status: "idle" })
    const c = yield* broker.session({ sessionId: "c", name: "C" })
    yield* broker.session({ sessionId: "g", name: "G", status: "idle", frame: { features: [GROUPS_V1], group: "ops" } })
    yield* c.client.destroy
    yield* a.client.next("session_left", (frame) => frame.sessionId === "c")
    for (const text of ["one", "two"]) {
      const sent = message(text)
      assertDelivered(yield* send(a.client, "b", sent))
      yield* messageFor(b.client, sent.id)
    }
    assertDelivered(yield* send(a.client, "b", message("a question", { expectsReply: true })))
    assertFailed(yield* send(a.client, "nobody", message("lost")), "E_TARGET_NOT_FOUND")
    assertDelivered(yield* send(a.client, "C", message("while away")), "queued")
    return { a, b }
  })

/** Asks the broker for its snapshot over a connection granted `stats-v1`. */
const statsOf = (broker: TestBroker) =>
  Effect.gen(function*() {
    const asker = yield* broker.session({ frame: { features: [STATS_V1] } })
    assert.include(asker.registered.features ?? [], STATS_V1)
    yield* asker.client.send({ type: "stats", requestId: "r1" })
    const answer = yield* asker.client.next("stats_result")
    assert.strictEqual(answer.requestId, "r1")
    return answer.stats
  })

describe("stats-v1", () => {
  it.live("after a scripted traffic the snapshot counts what happened", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      yield* traffic(broker)
      const stats = yield* statsOf(broker)
      // Decodes with the published schema.
      Schema.decodeUnknownSync(BrokerStatsSnapshot)(stats)
      // a, b, g and the asker itself.
      assert.strictEqual(stats.sessions.live, 4)
      assert.deepStrictEqual(stats.sessions.byGroupStatus, [
        { scope: "", group: "default", status: "", count: 1 },
        { scope: "", group: "default", status: "busy", count: 1 },
        { scope: "", group: "default", status: "idle", count: 1 },
        { scope: "", group: "ops", status: "idle", count: 1 }
      ])
      assert.deepStrictEqual(stats.routed, {
        delivered: 3,
        queued: 1,
        staged: 0,
        replayed: 0,
        refused: 1,
        refusedByCode: { E_TARGET_NOT_FOUND: 1 }
      })
      assert.strictEqual(stats.mailbox.depth, 1)
      assert.strictEqual(stats.staging.depth, 0)
      assert.strictEqual(stats.asks.open, 1)
      assert.isNotNull(stats.asks.oldestAgeMs)
      assert.isAtLeast(stats.asks.oldestAgeMs ?? -1, 0)
      // A durable broker (the default) committed what it acknowledged.
      assert.isAtLeast(stats.store?.commits ?? 0, 1)
      assert.strictEqual(stats.store?.failures, 0)
      const latency = stats.store?.commitLatency
      assert.strictEqual(latency?.count, (stats.store?.commits ?? 0) + (stats.store?.failures ?? 0))
      assert.isAtMost(latency?.buckets.at(-1)?.count ?? 0, latency?.count ?? 0)
    }))

  it.live("a retried send is counted as replayed, not delivered twice", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const a = yield* broker.session({ sessionId: "a", name: "A" })
      yield* broker.session({ sessionId: "b", name: "B" })
      const once = message("once")
      assertDelivered(yield* send(a.client, "b", once))
      assertDelivered(yield* send(a.client, "b", once))
      const stats = yield* statsOf(broker)
      assert.strictEqual(stats.routed.delivered, 1)
      assert.strictEqual(stats.routed.replayed, 1)
    }))

  it.live("a memory-only broker reports no store", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ durability: "memory" })
      const stats = yield* statsOf(broker)
      assert.isUndefined(stats.store)
    }))

  it.live("a stats frame from a client without stats-v1 is a protocol error: the connection is closed", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const base = yield* broker.session()
      assert.notInclude(base.registered.features ?? [], STATS_V1)
      yield* base.client.send({ type: "stats", requestId: "r1" })
      yield* base.client.waitClosed()
      assert.strictEqual(base.client.count("stats_result"), 0)
    }))

  it.live("a broker that exports metrics registers Metric series reading the same numbers", () =>
    Effect.gen(function*() {
      const registry: Metric.MetricRegistry = new Map()
      const broker = yield* withBroker().pipe(
        Effect.provideService(Metric.MetricRegistry, registry),
        Effect.provideService(TelemetryEnabled, { traces: false, metrics: true })
      )
      yield* traffic(broker)
      const snapshot = Metric.snapshotUnsafe(Context.make(Metric.MetricRegistry, registry))
      const series = (id: string, attributes: Record<string, string> = {}) =>
        snapshot.find((s) =>
          s.id === id && Object.entries(attributes).every(([key, value]) => s.attributes?.[key] === value)
        )?.state
      assert.deepStrictEqual(series("intercom_broker_messages_routed", { outcome: "delivered" }), {
        count: 3,
        incremental: true
      })
      assert.deepStrictEqual(series("intercom_broker_messages_routed", { outcome: "queued" }), {
        count: 1,
        incremental: true
      })
      assert.deepStrictEqual(series("intercom_broker_messages_refused"), {
        occurrences: new Map([["E_TARGET_NOT_FOUND", 1]])
      })
      assert.deepStrictEqual(series("intercom_broker_mailbox_depth"), { value: 1 })
      assert.deepStrictEqual(series("intercom_broker_asks_open"), { value: 1 })
      assert.deepStrictEqual(series("intercom_broker_sessions_live"), { value: 3 })
      const commits = series("intercom_broker_store_commits")
      assert.isAtLeast(commits !== undefined && "count" in commits && typeof commits.count === "number" ? commits.count : 0, 1)
    }))

  it.live("a broker that does not export metrics registers no series", () =>
    Effect.gen(function*() {
      const registry: Metric.MetricRegistry = new Map()
      const broker = yield* withBroker().pipe(Effect.provideService(Metric.MetricRegistry, registry))
      yield* traffic(broker)
      const ids = Metric.snapshotUnsafe(Context.make(Metric.MetricRegistry, registry)).map((s) => s.id)
      assert.isFalse(ids.some((id) => id.startsWith("intercom_broker_")), ids.join(", "))
    }))
})
