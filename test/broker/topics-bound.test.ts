/**
 * Topics (`topics-v1`): the broker-wide bounds on topic records
 * (`topicRecords`, `topicBytes`; docs/security.md promise 8). A client that
 * publishes in group after group and leaves cannot make the broker keep more
 * than the bounds, whatever the per-group bound; past a bound the records of
 * publishers that left go first, then those published longest ago, and the
 * new publication is always kept. In memory: the broker's own stats and
 * `topic_query` answers are the evidence.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { topicRecordBytes } from "../../src/broker/Topics.ts"
import { GROUPS_V1, TOPICS_V1 } from "../../src/protocol/features.ts"
import type { TopicRecord } from "../../src/protocol/topics.ts"
import { withMemoryBroker, type MemoryBroker } from "../support/memory.ts"
import type { WireClient } from "../support/wire.ts"

const topical = (sessionId: string, group: string) => ({
  sessionId,
  frame: { features: [TOPICS_V1, GROUPS_V1], group }
})

const record = (topic: string, revision: number, text = `state ${revision}`): TopicRecord => ({
  topic,
  text,
  event: "update",
  revision,
  updatedAt: 1_000 + revision
})

let counter = 0
const rid = () => `b-${++counter}`

const publish = (client: WireClient, rec: TopicRecord) =>
  Effect.gen(function*() {
    const requestId = rid()
    yield* client.send({ type: "topic_publish", requestId, record: rec })
    return yield* client.next(["topic_published", "topic_failed"], (f) => f.requestId === requestId)
  })

/** The topics of the records `client`'s group keeps, in answer order. */
const keptTopics = (client: WireClient) =>
  Effect.gen(function*() {
    const requestId = rid()
    yield* client.send({ type: "topic_query", requestId })
    const state = yield* client.next("topic_state", (f) => f.requestId === requestId)
    return state.entries.map((entry) => entry.record.topic).sort()
  })

/** A session of `group` publishes `rec` and leaves; the round trip after `unregister` makes its leaving exact. */
const publishAndLeave = (broker: MemoryBroker, sessionId: string, group: string, rec: TopicRecord) =>
  Effect.scoped(Effect.gen(function*() {
    const session = yield* broker.session(topical(sessionId, group))
    assert.strictEqual((yield* publish(session.client, rec)).type, "topic_published")
    yield* session.client.send({ type: "unregister" })
    yield* session.client.roundTrip
  }))

describe("topics-v1: broker-wide bounds on topic records", () => {
  it.effect("past topicRecords, the records of publishers that left many groups are forgotten, oldest first", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ idleExit: null, topicEntriesPerGroup: 4, topicRecords: 3 })
      for (let g = 0; g < 6; g++) yield* publishAndLeave(broker, `pub-${g}`, `g${g}`, record(`t${g}`, 1))
      const first = yield* broker.session(topical("look-0", "g0"))
      assert.deepStrictEqual(yield* keptTopics(first.client), [], "the oldest departed record was forgotten")
      const last = yield* broker.session(topical("look-5", "g5"))
      assert.deepStrictEqual(yield* keptTopics(last.client), ["t5"])
      assert.strictEqual((yield* broker.broker.stats).topicRecords, 3)
    }))

  it.effect("past topicBytes, records are forgotten until the estimate is within the bound, and the figures say so", () =>
    Effect.gen(function*() {
      const text = "x".repeat(8_000)
      const one = topicRecordBytes(
        JSON.stringify({ from: { id: "pub-0" }, record: record("t0", 1, text), available: false })
      )
      const bound = Math.floor(2.5 * one)
      const broker = yield* withMemoryBroker({ idleExit: null, topicEntriesPerGroup: 4, topicBytes: bound })
      for (let g = 0; g < 6; g++) yield* publishAndLeave(broker, `pub-${g}`, `g${g}`, record(`t${g}`, 1, text))
      const first = yield* broker.session(topical("look-0", "g0"))
      assert.deepStrictEqual(yield* keptTopics(first.client), [])
      const last = yield* broker.session(topical("look-5", "g5"))
      assert.deepStrictEqual(yield* keptTopics(last.client), ["t5"])
      const stats = yield* broker.broker.stats
      assert.strictEqual(stats.topicRecords, 2)
      assert.isAtMost(stats.topicBytes, bound)
      assert.isAbove(stats.topicBytes, one)
    }))

  it.effect("a record whose publisher left goes before an older one of a live publisher; then the one published longest ago", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ idleExit: null, topicRecords: 2 })
      const a = yield* broker.session(topical("a", "g"))
      assert.strictEqual((yield* publish(a.client, record("a", 1))).type, "topic_published")
      yield* publishAndLeave(broker, "b", "g", record("b", 1))
      const c = yield* broker.session(topical("c", "g"))
      assert.strictEqual((yield* publish(c.client, record("c", 1))).type, "topic_published")
      // Three records, two allowed: the departed publisher's goes, though a's is older.
      assert.deepStrictEqual(yield* keptTopics(a.client), ["a", "c"])
      // Nobody left: the record published longest ago (a's) goes; its publisher is told nothing.
      assert.strictEqual((yield* publish(c.client, record("d", 1))).type, "topic_published")
      assert.deepStrictEqual(yield* keptTopics(a.client), ["c", "d"])
      yield* a.client.expectNothing("topic_failed")
      // Its next publication is kept anew (no stale answer: the broker holds no revision for it),
      // and c's "c", now the oldest, goes.
      const again = yield* publish(a.client, record("a", 2))
      assert.strictEqual(again.type, "topic_published")
      if (again.type === "topic_published") assert.isUndefined(again.stale)
      assert.deepStrictEqual(yield* keptTopics(a.client), ["a", "d"])
      assert.strictEqual((yield* broker.broker.stats).topicRecords, 2)
    }))

  it.effect("republishing moves a record to the back: the one not republished goes first", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ idleExit: null, topicRecords: 2 })
      const a = yield* broker.session(topical("a", "g"))
      yield* publish(a.client, record("one", 1))
      yield* publish(a.client, record("two", 1))
      yield* publish(a.client, record("one", 2))
      yield* publish(a.client, record("three", 1))
      assert.deepStrictEqual(yield* keptTopics(a.client), ["one", "three"])
    }))

  it.effect("a live publisher's forgotten records leave its list of topics: publishing new topics forever stays bounded", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ idleExit: null, topicEntriesPerGroup: 4, topicRecords: 3 })
      const publisher = yield* broker.session(topical("pub-live", "g0"))
      for (let i = 0; i < 50; i++) {
        assert.strictEqual((yield* publish(publisher.client, record(`t${i}`, 1))).type, "topic_published")
      }
      const stats = yield* broker.broker.stats
      assert.strictEqual(stats.topicRecords, 3)
      assert.strictEqual(stats.topicPublished, 3, "the live publisher's list names only the records kept")
      assert.deepStrictEqual(yield* keptTopics(publisher.client), ["t47", "t48", "t49"])
    }))
})
