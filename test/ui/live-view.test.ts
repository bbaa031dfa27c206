/**
 * The live side of `intercom ui` (src/ui/LiveView.ts) under TestClock: the
 * views it publishes as snapshots arrive, as time passes with none, and
 * when the broker's stream fails.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Duration, Effect, Fiber, PubSub, Queue, Stream } from "effect"
import { TestClock } from "effect/testing"
import { runLiveView } from "../../src/ui/LiveView.ts"
import { makeViewHub } from "../../src/ui/UiServer.ts"
import type { UiView, ViewInput } from "../../src/ui/View.ts"

const STUCK = 30_000

const snapshotAt = (at: number): ViewInput => ({
  at,
  sessionCount: 1,
  sessions: [{
    id: "id-a",
    name: "alice",
    group: "default",
    status: "idle",
    health: "ok",
    pendingAsks: 1,
    lastActivityAt: at,
    messagesIn: 0,
    messagesOut: 1,
    ratePerSecond: null
  }],
  queues: { mailbox: 0, staging: 0, outbox: 0 },
  openAsks: [{ from: "id-a", to: "id-b", messageId: "ask-1", askedAt: at }],
  refusals: [],
  traffic: [],
  totals: { routed: 1, refused: 0, messagesPerSecond: 0 }
})

type Feed = Queue.Queue<ViewInput, { readonly message: string }>

/** A source whose every opening gets a fresh queue, handed to the test (`opened`) to feed or fail. */
const controlledSource = Effect.gen(function*() {
  const opened = yield* Queue.unbounded<Feed>()
  const source = Stream.unwrap(Effect.gen(function*() {
    const feed: Feed = yield* Queue.unbounded<ViewInput, { readonly message: string }>()
    yield* Queue.offer(opened, feed)
    return Stream.fromQueue(feed)
  }))
  return { source, opened }
})

describe("ui live view", () => {
  it.effect("publishes a connecting view, then each snapshot; ages grow without new frames until the ask is stuck; a failed stream shows lost and is opened again", () =>
    Effect.scoped(Effect.gen(function*() {
      const hub = yield* makeViewHub()
      const views = yield* PubSub.subscribe(hub)
      const next = Effect.map(PubSub.take(views), (json): UiView => JSON.parse(json))
      const { source, opened } = yield* controlledSource
      const fiber = yield* Effect.forkChild(runLiveView({
        source,
        hub,
        stuckAfterMs: STUCK,
        socketPath: "/tmp/broker.sock",
        retryAfter: Duration.seconds(1),
        minInterval: Duration.millis(250),
        refreshEvery: Duration.seconds(1)
      }))

      const first = yield* next
      assert.strictEqual(first.connection.state, "connecting")
      assert.deepStrictEqual(first.sessions, [])

      const feed = yield* Queue.take(opened)
      const now = yield* Clock.currentTimeMillis
      yield* Queue.offer(feed, snapshotAt(now))
      yield* TestClock.adjust(Duration.millis(250))
      const connected = yield* next
      assert.strictEqual(connected.connection.state, "connected")
      assert.deepStrictEqual(connected.sessions.map((s) => s.name), ["alice"])
      assert.strictEqual(connected.openAsks[0]?.stuck, false)

      // No frame from the broker for 30 s: the refreshes alone make the ask stuck.
      let latest = connected
      for (let i = 0; i < 30; i++) {
        yield* TestClock.adjust(Duration.seconds(1))
        latest = yield* next
      }
      assert.strictEqual(latest.openAsks[0]?.ageMs, STUCK + 250)
      assert.strictEqual(latest.openAsks[0]?.stuck, true)
      assert.strictEqual(latest.totals.stuckAsks, 1)

      yield* Queue.fail(feed, { message: "connect ENOENT /tmp/broker.sock" })
      yield* TestClock.adjust(Duration.millis(250))
      const lost = yield* next
      assert.strictEqual(lost.connection.state, "lost")
      assert.include(lost.connection.detail, "connect ENOENT /tmp/broker.sock")
      assert.deepStrictEqual(lost.sessions.map((s) => s.name), ["alice"], "the last snapshot stays on screen")
      assert.strictEqual(yield* Queue.size(opened), 0, "not opened again before retryAfter")

      yield* TestClock.adjust(Duration.seconds(1))
      const reopened = yield* Queue.take(opened)
      yield* Queue.offer(reopened, snapshotAt(yield* Clock.currentTimeMillis))
      yield* TestClock.adjust(Duration.millis(250))
      assert.strictEqual((yield* next).connection.state, "connected")
      yield* Fiber.interrupt(fiber)
    })))
})
