/**
 * Topics (`topics-v1`, C-TOP-3, 6, 11, 12, 13, 16) in the broker, over real
 * Unix sockets: fan-out, revisions, stale publications, the per-group bound
 * and its refusal, a publisher that leaves, group isolation, and a base
 * client that never sees any of it. In memory under TestClock: records of a
 * publisher gone past the retention are forgotten by the next topic request,
 * and answers stay within their byte budget, saying when they left things out.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ANSWER_BYTES } from "../../src/broker/Topics.ts"
import { MAX_FRAME_BYTES } from "../../src/protocol/constants.ts"
import { GROUPS_V1, TOPICS_V1 } from "../../src/protocol/features.ts"
import { encodeFrames } from "../../src/protocol/index.ts"
import type { TopicRecord } from "../../src/protocol/topics.ts"
import { settled } from "../support/barrier.ts"
import { message, messageFor, send, withBroker } from "../support/broker.ts"
import { advance, patientClock, withMemoryBroker } from "../support/memory.ts"
import type { WireClient } from "../support/wire.ts"
import { assertDelivered } from "../support/assertions.ts"

const topical = (group?: string) => ({
  frame: { features: [TOPICS_V1, GROUPS_V1], ...(group === undefined ? {} : { group }) }
})

const record = (topic: string, revision: number, extra: Partial<TopicRecord> = {}): TopicRecord => ({
  topic,
  text: `state ${revision}`,
  event: "update",
  revision,
  updatedAt: 1_000 + revision,
  ...extra
})

let counter = 0
const rid = () => `r-${++counter}`

const publish = (client: WireClient, rec: TopicRecord) =>
  Effect.gen(function*() {
    const requestId = rid()
    yield* client.send({ type: "topic_publish", requestId, record: rec })
    return yield* client.next(["topic_published", "topic_failed"], (f) => f.requestId === requestId)
  })

const subscribe = (client: WireClient, topic: string, awaitRelease?: boolean) =>
  Effect.gen(function*() {
    const requestId = rid()
    yield* client.send({ type: "topic_subscribe", requestId, topic, ...(awaitRelease === undefined ? {} : { awaitRelease }) })
    return yield* client.next(["topic_subscribed", "topic_failed"], (f) => f.requestId === requestId)
  })

const query = (client: WireClient, topic?: string) =>
  Effect.gen(function*() {
    const requestId = rid()
    yield* client.send({ type: "topic_query", requestId, ...(topic === undefined ? {} : { topic }) })
    return yield* client.next("topic_state", (f) => f.requestId === requestId)
  })

const records = (client: WireClient) =>
  client.received().flatMap((f) => f.type === "topic_record" ? [f.entry] : [])

describe("topics-v1 in the broker", () => {
  it.live("a publication is saved, fanned out once to every other subscriber, and confirmed with the counts", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const pub = yield* broker.session({ sessionId: "pub", name: "publisher", ...topical() })
      const subs = yield* Effect.forEach(["s1", "s2", "s3"], (id) => broker.session({ sessionId: id, ...topical() }))
      for (const sub of subs) assert.strictEqual((yield* subscribe(sub.client, "build")).type, "topic_subscribed")
      yield* subscribe(pub.client, "build") // the publisher's own subscription does not count
      const answer = yield* publish(pub.client, record("build", 1))
      assert.deepStrictEqual(answer, {
        type: "topic_published",
        requestId: answer.requestId,
        topic: "build",
        revision: 1,
        subscribers: 3,
        accepted: 3
      })
      yield* settled([pub.client], subs.map((s) => s.client))
      for (const sub of subs) {
        assert.deepStrictEqual(records(sub.client), [
          { from: { id: "pub", name: "publisher" }, record: record("build", 1), available: true }
        ])
      }
      yield* pub.client.expectNothing("topic_record")
    }))

  it.live("a lower revision is stale: nothing changes, nobody is told, and the answer carries the kept revision", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const pub = yield* broker.session({ sessionId: "pub", ...topical() })
      const sub = yield* broker.session({ sessionId: "sub", ...topical() })
      yield* subscribe(sub.client, "t")
      yield* publish(pub.client, record("t", 3))
      const stale = yield* publish(pub.client, record("t", 2, { text: "older" }))
      assert.strictEqual(stale.type, "topic_published")
      if (stale.type === "topic_published") {
        assert.strictEqual(stale.stale, true)
        assert.strictEqual(stale.revision, 3)
        assert.strictEqual(stale.accepted, 0)
      }
      yield* settled([pub.client], [sub.client])
      assert.deepStrictEqual(records(sub.client).map((e) => e.record.revision), [3])
      const state = yield* query(sub.client, "t")
      assert.deepStrictEqual(state.entries.map((e) => e.record.text), ["state 3"])
      assert.deepStrictEqual(state.subscriptions, [{ topic: "t", awaitRelease: false }])
    }))

  it.live("a revision may skip numbers: a higher one replaces the record and is fanned out; the skipped one is then stale", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const pub = yield* broker.session({ sessionId: "pub", ...topical() })
      const sub = yield* broker.session({ sessionId: "sub", ...topical() })
      yield* subscribe(sub.client, "t")
      yield* publish(pub.client, record("t", 1))
      const skipped = yield* publish(pub.client, record("t", 3))
      assert.deepStrictEqual(skipped.type === "topic_published" ? [skipped.revision, skipped.stale] : [], [3, undefined])
      const late = yield* publish(pub.client, record("t", 2))
      assert.deepStrictEqual(late.type === "topic_published" ? [late.revision, late.stale] : [], [3, true])
      yield* settled([pub.client], [sub.client])
      assert.deepStrictEqual(records(sub.client).map((e) => e.record.revision), [1, 3])
    }))

  it.live("a late subscriber gets the current records in its answer, one per publisher, and no replay as records", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const a = yield* broker.session({ sessionId: "a", ...topical() })
      const b = yield* broker.session({ sessionId: "b", ...topical() })
      yield* publish(a.client, record("t", 1, { event: "blocker" }))
      yield* publish(a.client, record("t", 2))
      yield* publish(b.client, record("t", 1, { event: "decision" }))
      const late = yield* broker.session({ sessionId: "late", ...topical() })
      const answer = yield* subscribe(late.client, "t", true)
      assert.strictEqual(answer.type, "topic_subscribed")
      if (answer.type === "topic_subscribed") {
        assert.deepStrictEqual(answer.entries.map((e) => [e.from.id, e.record.revision, e.record.event]), [
          ["a", 2, "update"],
          ["b", 1, "decision"]
        ])
      }
      yield* settled([late.client])
      yield* late.client.expectNothing("topic_record")
    }))

  it.live("a publisher that leaves stays as an unavailable record (never released), and subscribers are told", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const pub = yield* broker.session({ sessionId: "pub", ...topical() })
      const sub = yield* broker.session({ sessionId: "sub", ...topical() })
      yield* subscribe(sub.client, "tab-4")
      yield* publish(pub.client, record("tab-4", 1, { resource: "tab-4", ownership: "held" }))
      yield* sub.client.next("topic_record")
      yield* pub.client.destroy
      yield* sub.client.next("session_left", (f) => f.sessionId === "pub")
      const gone = yield* sub.client.next("topic_record")
      assert.deepStrictEqual([gone.entry.available, gone.entry.record.ownership, gone.entry.record.event], [false, "held", "update"])
      const state = yield* query(sub.client, "tab-4")
      assert.deepStrictEqual(state.entries.map((e) => e.available), [false])
      // The publisher comes back and publishes again: available.
      const back = yield* broker.session({ sessionId: "pub", ...topical() })
      yield* publish(back.client, record("tab-4", 2, { resource: "tab-4", ownership: "held" }))
      assert.deepStrictEqual((yield* sub.client.next("topic_record")).entry.available, true)
    }))

  it.live("a publisher taken over under a new name (same id) is named anew: in answers, and in the unavailable record when it leaves", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const pub = yield* broker.session({ sessionId: "pub", name: "old-name", ...topical() })
      const sub = yield* broker.session({ sessionId: "sub", ...topical() })
      yield* subscribe(sub.client, "t")
      yield* publish(pub.client, record("t", 1))
      assert.deepStrictEqual((yield* sub.client.next("topic_record")).entry.from, { id: "pub", name: "old-name" })
      // A new registration of the same id takes the live session over (P16), under another name; it does not publish.
      const renamed = yield* broker.session({ sessionId: "pub", name: "new-name", ...topical() })
      const state = yield* query(sub.client, "t")
      assert.deepStrictEqual(state.entries.map((e) => [e.from, e.available]), [[{ id: "pub", name: "new-name" }, true]])
      yield* renamed.client.destroy
      yield* sub.client.next("session_left", (f) => f.sessionId === "pub")
      const gone = yield* sub.client.next("topic_record")
      assert.deepStrictEqual([gone.entry.from, gone.entry.available], [{ id: "pub", name: "new-name" }, false])
    }))

  it.live("a subscriber that leaves is dropped: the next publication counts it no more", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const pub = yield* broker.session({ sessionId: "pub", ...topical() })
      const watcher = yield* broker.session({ sessionId: "watcher", ...topical() })
      const sub = yield* broker.session({ sessionId: "sub", ...topical() })
      yield* subscribe(sub.client, "t")
      yield* sub.client.destroy
      yield* watcher.client.next("session_left", (f) => f.sessionId === "sub")
      const answer = yield* publish(pub.client, record("t", 1))
      assert.strictEqual(answer.type === "topic_published" ? answer.subscribers : -1, 0)
    }))

  it.live("topics stay inside their group: another group neither receives nor sees them", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const pub = yield* broker.session({ sessionId: "pub", ...topical("red") })
      const same = yield* broker.session({ sessionId: "same", ...topical("red") })
      const other = yield* broker.session({ sessionId: "other", ...topical("blue") })
      yield* subscribe(same.client, "t")
      yield* subscribe(other.client, "t")
      const answer = yield* publish(pub.client, record("t", 1))
      assert.strictEqual(answer.type === "topic_published" ? answer.subscribers : -1, 1)
      yield* settled([pub.client], [same.client, other.client])
      assert.strictEqual(records(same.client).length, 1)
      yield* other.client.expectNothing("topic_record")
      assert.deepStrictEqual((yield* query(other.client)).entries, [])
    }))

  it.live("past topicEntriesPerGroup a new record or subscription is refused clearly; replacing a record still works", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ topicEntriesPerGroup: 2 })
      const a = yield* broker.session({ sessionId: "a", ...topical() })
      yield* publish(a.client, record("one", 1))
      yield* subscribe(a.client, "two")
      const refused = yield* publish(a.client, record("three", 1))
      assert.strictEqual(refused.type, "topic_failed")
      if (refused.type === "topic_failed") assert.match(refused.reason, /keeps 2 topic records and subscriptions.*topicEntriesPerGroup/)
      assert.strictEqual((yield* subscribe(a.client, "four")).type, "topic_failed")
      assert.strictEqual((yield* publish(a.client, record("one", 2))).type, "topic_published")
      // Another group has its own bound.
      const b = yield* broker.session({ sessionId: "b", ...topical("elsewhere") })
      assert.strictEqual((yield* publish(b.client, record("three", 1))).type, "topic_published")
    }))

  it.live("an invalid publication is answered with topic_failed naming the rule, and nothing is saved", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const a = yield* broker.session({ sessionId: "a", ...topical() })
      const bad = yield* publish(a.client, record("t", 1, { event: "release" }))
      assert.strictEqual(bad.type, "topic_failed")
      if (bad.type === "topic_failed") assert.match(bad.reason, /release.*needs a resource/)
      const empty = yield* publish(a.client, record("t", 1, { text: "  " }))
      assert.strictEqual(empty.type, "topic_failed")
      // C-TOOL-6: a raw client's text with a terminal escape sequence is refused too.
      const escape = yield* publish(a.client, record("t", 1, { text: "ok\u001b]0;owned\u0007" }))
      assert.strictEqual(escape.type, "topic_failed")
      if (escape.type === "topic_failed") assert.match(escape.reason, /control character U\+001B at position 3/)
      assert.deepStrictEqual((yield* query(a.client)).entries, [])
      assert.strictEqual((yield* subscribe(a.client, "bad\ntopic")).type, "topic_failed")
    }))

  it.live("a base client is unaffected: not granted topics-v1, plain messaging works, and a topic frame from it is a protocol error", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const base = yield* broker.session({ sessionId: "base" })
      assert.deepStrictEqual(base.registered.features, ["exact-send-v1"])
      const pub = yield* broker.session({ sessionId: "pub", ...topical() })
      yield* publish(pub.client, record("t", 1))
      const msg = message("plain")
      assertDelivered(yield* send(pub.client, "base", msg))
      yield* messageFor(base.client, msg.id)
      yield* settled([pub.client], [base.client])
      yield* base.client.expectNothing("topic_record")
      yield* base.client.send({ type: "topic_query", requestId: "x" })
      yield* base.client.waitClosed()
    }))
})

describe("topics-v1: records past the retention (in memory, TestClock)", () => {
  /**
   * A group bounded to one entry, whose only entry is the record of a
   * publisher that left 25 hours ago; no `send` has run since (the send
   * path's prunes never ran), so only the topic request itself can forget it.
   */
  const pastRetention = Effect.gen(function*() {
    const broker = yield* withMemoryBroker({ topicEntriesPerGroup: 1, idleExit: null })
    const gone = yield* broker.session({ sessionId: "gone", ...topical() })
    const watcher = yield* broker.session({ sessionId: "watcher", ...topical() })
    assert.strictEqual((yield* publish(gone.client, record("old", 1))).type, "topic_published")
    yield* gone.client.destroy
    yield* watcher.client.next("session_left", (f) => f.sessionId === "gone")
    yield* advance("25 hours")
    return { broker, watcher }
  })

  it.effect("a publish is accepted: the forgotten record no longer counts against the bound", () =>
    Effect.gen(function*() {
      const { broker } = yield* pastRetention
      const fresh = yield* broker.session({ sessionId: "fresh", ...topical() })
      const answer = yield* publish(fresh.client, record("new", 1))
      assert.strictEqual(answer.type, "topic_published", JSON.stringify(answer))
    }))

  it.effect("a subscribe is accepted, and its answer no longer lists the forgotten record", () =>
    Effect.gen(function*() {
      const { watcher } = yield* pastRetention
      const answer = yield* subscribe(watcher.client, "old")
      assert.strictEqual(answer.type, "topic_subscribed", JSON.stringify(answer))
      if (answer.type === "topic_subscribed") assert.deepStrictEqual(answer.entries, [])
    }))

  it.effect("a query no longer shows the forgotten record", () =>
    Effect.gen(function*() {
      const { watcher } = yield* pastRetention
      assert.deepStrictEqual((yield* query(watcher.client)).entries, [])
    }))
})

describe("topics-v1: an answer stays within its byte budget and says when it left something out (in memory)", () => {
  /** The UTF-8 bytes of a frame as the broker wrote it (the same keys in the same order). */
  const bytesOf = (frame: object) => Buffer.byteLength(JSON.stringify(frame), "utf8")

  it.effect("40 publishers of 8,000-character records: subscribe and query answers are cut and say truncated", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ idleExit: null })
      for (let i = 0; i < 40; i++) {
        const pub = yield* broker.session({ sessionId: `pub-${i}`, ...topical() })
        const answer = yield* publish(pub.client, record("big", 1, { text: `${i} ${"é".repeat(7_990)}` }))
        assert.strictEqual(answer.type, "topic_published")
      }
      const reader = yield* broker.session({ sessionId: "reader", ...topical() })
      const subscribed = yield* subscribe(reader.client, "big")
      assert.strictEqual(subscribed.type, "topic_subscribed")
      if (subscribed.type === "topic_subscribed") {
        assert.strictEqual(subscribed.truncated, true)
        assert.isAbove(subscribed.entries.length, 0)
        assert.isBelow(subscribed.entries.length, 40)
        assert.isAtMost(bytesOf(subscribed), ANSWER_BYTES)
      }
      const state = yield* query(reader.client)
      assert.strictEqual(state.truncated, true)
      assert.isBelow(state.entries.length, 40)
      assert.deepStrictEqual(state.subscriptions, [{ topic: "big", awaitRelease: false }])
      assert.isAtMost(bytesOf(state), ANSWER_BYTES)
      // An answer with room for everything has no `truncated` field.
      const small = yield* query(reader.client, "nothing here")
      assert.deepStrictEqual(small, { type: "topic_state", requestId: small.requestId, entries: [], subscriptions: [] })
    }))

  it.effect("1,400 subscriptions with long multi-byte names: topic_state is answered within one frame, marked truncated", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ idleExit: null })
      const sub = yield* broker.session({ sessionId: "sub", ...topical() })
      // 256 UTF-16 units, 758 UTF-8 bytes each: their list alone is over 1 MiB.
      const topics = Array.from({ length: 1_400 }, (_, i) => `${"話".repeat(251)}${String(i).padStart(5, "0")}`)
      const frames = topics.map((topic, i) => JSON.stringify({ type: "topic_subscribe", requestId: `s-${i}`, topic }))
      yield* sub.client.sendRaw(encodeFrames(frames))
      yield* sub.client.next("topic_subscribed", (f) => f.requestId === `s-${topics.length - 1}`)
      assert.isAbove(topics.reduce((sum, topic) => sum + Buffer.byteLength(topic, "utf8"), 0), MAX_FRAME_BYTES)
      const state = yield* query(sub.client)
      assert.strictEqual(state.truncated, true)
      assert.isAbove(state.subscriptions.length, 0)
      assert.isBelow(state.subscriptions.length, topics.length)
      assert.deepStrictEqual(state.subscriptions.map((s) => s.topic), topics.slice(0, state.subscriptions.length))
      assert.isAtMost(bytesOf(state), ANSWER_BYTES)
    }).pipe(patientClock), 60_000)
})
