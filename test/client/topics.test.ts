/**
 * Topics through `IntercomClient` (`topics-v1`): publish / subscribe /
 * unsubscribe / topics against a real broker over Unix sockets, the
 * "unavailable" error against a base broker (C-TOP-16), subscriptions and
 * own publications sent again after a broker restart (C-BRK-28, C-TOP-15),
 * revisions reserved when a publish starts (C-TOP-3, C-TOP-10), and a
 * broker answer cut to fit one frame reported as `truncated`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import { ClientTopics } from "../../src/client/ClientTopics.ts"
import { RequestTimeout, TopicRefused } from "../../src/client/errors.ts"
import type { TopicAnswer, TopicRequestError, TopicRequestFrame } from "../../src/client/TopicRequests.ts"
import { TOPICS_V1 } from "../../src/protocol/features.ts"
import { message, withBroker } from "../support/broker.ts"
import { advance, memoryNetwork, settle } from "../support/memory.ts"
import {
  brokerClientOptions,
  fakeBroker,
  fakeClientOptions,
  makeClient,
  makeMemoryClient,
  memoryClientOptions,
  subscribe
} from "./support.ts"

const A_ID = "aaaaaaaa-2222-4000-8000-00000000000a"
const B_ID = "bbbbbbbb-2222-4000-8000-00000000000b"

describe("IntercomClient topics (real broker)", () => {
  it.live("publish is numbered per topic and confirmed with counts; a subscriber's stream gets each record", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const { client: a } = yield* makeClient(brokerClientOptions(broker, A_ID, "alpha"))
      const { client: b } = yield* makeClient(brokerClientOptions(broker, B_ID, "bravo"))
      const records = yield* subscribe(b.topicRecords, "b's topic records")
      assert.deepStrictEqual(yield* b.subscribe("build", { awaitRelease: true }), { entries: [], truncated: false })
      const first = yield* a.publish({ topic: "build", text: "red" })
      assert.deepInclude(first, { subscribers: 1, accepted: 1 })
      assert.deepInclude(first.record, { topic: "build", text: "red", event: "update", revision: 1 })
      const second = yield* a.publish({ topic: "build", text: "green", event: "decision" })
      assert.strictEqual(second.record.revision, 2)
      assert.strictEqual((yield* a.publish({ topic: "other", text: "x" })).record.revision, 1)
      const got = [yield* records.next(), yield* records.next()]
      assert.deepStrictEqual(got.map((e) => [e.from.id, e.from.name, e.record.revision, e.record.event, e.available]), [
        [A_ID, "alpha", 1, "update", true],
        [A_ID, "alpha", 2, "decision", true]
      ])
      const view = yield* b.topics()
      assert.deepStrictEqual(view.subscriptions, [{ topic: "build", awaitRelease: true }])
      assert.deepStrictEqual(view.entries.map((e) => [e.record.topic, e.record.revision]), [["build", 2], ["other", 1]])
      yield* b.unsubscribe("build")
      assert.deepStrictEqual((yield* a.publish({ topic: "build", text: "again" })).subscribers, 0)
      assert.deepStrictEqual((yield* b.savedTopics).subscriptions, [])
      assert.deepStrictEqual((yield* a.savedTopics).publications.map((r) => [r.topic, r.revision]), [["build", 3], ["other", 1]])
    }))

  it.live("an invalid publish fails before anything is sent, with the rule", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const { client: a } = yield* makeClient(brokerClientOptions(broker, A_ID, "alpha"))
      const exit = yield* Effect.exit(a.publish({ topic: "t", text: "x", ownership: "released" }))
      assert.isTrue(Exit.isFailure(exit))
      assert.include(JSON.stringify(exit), "ownership needs a resource")
      assert.deepStrictEqual((yield* a.topics()).entries, [])
    }))
})

describe("IntercomClient topics against a base broker (C-TOP-16)", () => {
  it.live("topic operations fail as unavailable without sending anything; messaging works", () =>
    Effect.gen(function*() {
      const fake = yield* fakeBroker({ features: ["exact-send-v1"] })
      const { client } = yield* makeClient(fakeClientOptions(fake, A_ID))
      const operations: ReadonlyArray<Effect.Effect<unknown, unknown>> = [
        client.publish({ topic: "t", text: "x" }),
        client.subscribe("t"),
        client.topics()
      ]
      for (const operation of operations) {
        const exit = yield* Effect.exit(operation)
        assert.isTrue(Exit.isFailure(exit))
        assert.include(JSON.stringify(exit), "TopicsUnavailable")
      }
      const sent = message("still fine")
      assert.strictEqual((yield* client.send({ to: "anyone", message: sent })).messageId, sent.id)
      assert.deepStrictEqual(fake.frames.filter((f) => f.frame["type"]?.toString().startsWith("topic_") === true), [])
    }))
})

describe("C-BRK-28 topic state is sent again after a reconnect (in memory)", () => {
  it.effect("after a broker restart, subscriptions and the own latest publication are restored before use", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const first = yield* world.startBroker({ idleExit: null })
      const timings = { reconnectBaseMs: 500, reconnectMaxMs: 1_000 }
      const { client: a } = yield* makeMemoryClient(memoryClientOptions(world, A_ID, "alpha", timings))
      const { client: b } = yield* makeMemoryClient(memoryClientOptions(world, B_ID, "bravo", timings))
      yield* settle(b.subscribe("tab", { awaitRelease: true }))
      yield* settle(a.publish({ topic: "tab", text: "held", resource: "tab-4", ownership: "held" }))
      yield* first.crash
      yield* world.startBroker({ idleExit: null })
      yield* advance("2 seconds")
      assert.strictEqual((yield* a.status).connections, 2)
      assert.strictEqual((yield* b.status).connections, 2)
      // The new broker knows both again: a's record, b's subscription.
      const view = yield* settle(b.topics("tab"))
      assert.deepStrictEqual(view.subscriptions, [{ topic: "tab", awaitRelease: true }])
      assert.deepStrictEqual(view.entries.map((e) => [e.from.id, e.record.revision, e.available]), [[A_ID, 1, true]])
      // Numbering goes on from the restored revision.
      const next = yield* settle(a.publish({ topic: "tab", text: "released", resource: "tab-4", ownership: "released" }))
      assert.deepInclude(next, { subscribers: 1, accepted: 1 })
      assert.strictEqual(next.record.revision, 2)
    }))
})

describe("revisions are reserved when a publish starts (C-TOP-3, C-TOP-10; in memory)", () => {
  it.effect("two concurrent publishes on one topic get revisions 1 and 2, and the subscriber gets both", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ idleExit: null })
      const { client: a } = yield* makeMemoryClient(memoryClientOptions(world, A_ID, "alpha"))
      const { client: b } = yield* makeMemoryClient(memoryClientOptions(world, B_ID, "bravo"))
      const records = yield* subscribe(b.topicRecords, "b's topic records")
      yield* settle(b.subscribe("build"))
      const both = yield* settle(
        Effect.all([
          a.publish({ topic: "build", text: "red", event: "blocker" }),
          a.publish({ topic: "build", text: "still red", event: "decision" })
        ], { concurrency: "unbounded" })
      )
      assert.deepStrictEqual(both.map((published) => published.record.revision), [1, 2])
      // Two revisions, so the second record is new to the subscriber (it interrupts once, C-TOP-10).
      const got = [yield* records.next(), yield* records.next()]
      assert.deepStrictEqual(got.map((e) => [e.record.revision, e.record.text]), [[1, "red"], [2, "still red"]])
      assert.deepStrictEqual((yield* a.savedTopics).publications.map((r) => [r.topic, r.revision]), [["build", 2]])
      assert.strictEqual((yield* settle(a.publish({ topic: "build", text: "green" }))).record.revision, 3)
    }))

  it.effect("a publish the broker refuses gives its revision back: the next publish is still previous + 1", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ idleExit: null, topicEntriesPerGroup: 2 })
      const { client: a } = yield* makeMemoryClient(memoryClientOptions(world, A_ID, "alpha"))
      const { client: b } = yield* makeMemoryClient(memoryClientOptions(world, B_ID, "bravo"))
      yield* settle(b.subscribe("build"))
      assert.strictEqual((yield* settle(a.publish({ topic: "build", text: "red" }))).record.revision, 1)
      const refused = yield* settle(Effect.exit(a.publish({ topic: "other", text: "x" })))
      assert.isTrue(Exit.isFailure(refused))
      assert.include(JSON.stringify(refused), "topicEntriesPerGroup")
      yield* settle(b.unsubscribe("build"))
      assert.strictEqual((yield* settle(a.publish({ topic: "other", text: "x" }))).record.revision, 1)
    }))
})

describe("revisions strictly increase and may skip, never reusing a number (C-TOP-3 as it holds, docs/protocol.md)", () => {
  it.effect("a refused publish numbered before a later one and a timed-out publish leave gaps; every number goes out once", () =>
    Effect.gen(function*() {
      const topics = new ClientTopics()
      // A connection whose answers the test gives, one Deferred per request, in the order they were sent.
      const sent: Array<number> = []
      const answers: Array<Deferred.Deferred<TopicAnswer, TopicRequestError>> = []
      const connection = {
        topic: (frame: TopicRequestFrame) =>
          Effect.suspend(() => {
            if (frame.type === "topic_publish" && "revision" in frame.record && typeof frame.record.revision === "number") {
              sent.push(frame.record.revision)
            }
            const answer = Deferred.makeUnsafe<TopicAnswer, TopicRequestError>()
            answers.push(answer)
            return Deferred.await(answer)
          })
      }
      const published = (revision: number): TopicAnswer => ({
        type: "topic_published",
        requestId: `r-${revision}`,
        topic: "build",
        revision,
        subscribers: 0,
        accepted: 0
      })
      const answerNext = (index: number, exit: Exit.Exit<TopicAnswer, TopicRequestError>) =>
        Effect.suspend(() => {
          const answer = answers[index]
          return answer === undefined ? Effect.die(`no request ${index}`) : Deferred.done(answer, exit)
        })
      const publish = (text: string) => topics.publish(connection, { topic: "build", text }, 0, 1_000)
      // Two publishes in flight: 1 and 2. The broker refuses 1 after 2 was numbered.
      const first = yield* Effect.forkChild(publish("one"), { startImmediately: true })
      const second = yield* Effect.forkChild(publish("two"), { startImmediately: true })
      assert.deepStrictEqual(sent, [1, 2])
      yield* answerNext(0, Exit.fail(new TopicRefused({ reason: "full" })))
      assert.isTrue(Exit.isFailure(yield* Fiber.await(first)))
      // With 2 still unconfirmed, the next publish is past 2: 1 is not handed out again.
      const third = yield* Effect.forkChild(publish("three"), { startImmediately: true })
      assert.deepStrictEqual(sent, [1, 2, 3])
      yield* answerNext(1, Exit.succeed(published(2)))
      assert.strictEqual((yield* Fiber.join(second)).record.revision, 2)
      // 3 times out (it may have been saved): its number stays spent.
      yield* answerNext(2, Exit.fail(new RequestTimeout({ operation: "topic", timeoutMs: 1_000 })))
      assert.isTrue(Exit.isFailure(yield* Fiber.await(third)))
      const fourth = yield* Effect.forkChild(publish("four"), { startImmediately: true })
      yield* answerNext(3, Exit.succeed(published(4)))
      assert.strictEqual((yield* Fiber.join(fourth)).record.revision, 4)
      // Strictly increasing, each number sent once; the confirmed ones skip 1 and 3.
      assert.deepStrictEqual(sent, [1, 2, 3, 4])
      assert.deepStrictEqual(topics.saved.publications.map((record) => record.revision), [4])
    }))
})

describe("a broker answer cut to fit one frame is reported as truncated (in memory)", () => {
  it.effect("subscribe and topics say truncated when 40 records of 8,000 characters do not fit", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ idleExit: null })
      for (let i = 0; i < 40; i++) {
        const pub = yield* world.session({ sessionId: `pub-${i}`, frame: { features: [TOPICS_V1] } })
        const record = { topic: "big", text: `${i} ${"x".repeat(7_990)}`, event: "update", revision: 1, updatedAt: 1 }
        yield* pub.client.send({ type: "topic_publish", requestId: `p-${i}`, record })
        yield* pub.client.next("topic_published")
      }
      const { client: b } = yield* makeMemoryClient(memoryClientOptions(world, B_ID, "bravo"))
      const subscribed = yield* settle(b.subscribe("big"))
      assert.isTrue(subscribed.truncated)
      assert.isBelow(subscribed.entries.length, 40)
      const view = yield* settle(b.topics())
      assert.isTrue(view.truncated)
      assert.isFalse((yield* settle(b.topics("small"))).truncated)
    }))
})
