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
  askCount: 1,
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

/**
 * Moves the clock a quarter second at a time until a view that satisfies
 * `until` is published (at most 400 steps, 100 s); that view, and how many
 * views were seen on the way. Exact however the fibers interleave.
 */
const advanceUntil = (
  views: PubSub.Subscription<string>,
  until: (view: UiView) => boolean
): Effect.Effect<{ readonly view: UiView; readonly seen: number }> =>
  Effect.gen(function*() {
    let seen = 0
    for (let step = 0; step < 400; step++) {
      for (const json of yield* PubSub.takeUpTo(views, 16)) {
        seen++
        const view: UiView = JSON.parse(json)
        if (until(view)) return { view, seen }
      }
      yield* TestClock.adjust(Duration.millis(250))
    }
    return yield* Effect.die(new Error("no such view within 100 s"))
  })

describe("ui live view", () => {
  it.effect("publishes a connecting view, then each snapshot; ages grow without new frames until the ask is stuck; a failed stream shows lost and is opened again", () =>
    Effect.scoped(Effect.gen(function*() {
      const hub = yield* makeViewHub()
      const views = yield* PubSub.subscribe(hub)
      const { source, opened } = yield* controlledSource
      const fiber = yield* Effect.forkChild(runLiveView({
        source,
        hub,
        stuckAfterMs: STUCK,
        socketPath: "/tmp/broker.sock",
        retryAfter: Duration.seconds(1),
        minInterval: Duration.millis(250),
        refreshEvery: Duration.seconds(1),
        staleAfter: Duration.seconds(3)
      }))

      const first = yield* advanceUntil(views, () => true)
      assert.strictEqual(first.view.connection.state, "connecting")
      assert.deepStrictEqual(first.view.sessions, [])

      const feed = yield* Queue.take(opened)
      const askedAt = yield* Clock.currentTimeMillis
      yield* Queue.offer(feed, snapshotAt(askedAt))
      const connected = yield* advanceUntil(views, (view) => view.connection.state === "connected")
      assert.deepStrictEqual(connected.view.sessions.map((s) => s.name), ["alice"])
      assert.strictEqual(connected.view.openAsks[0]?.stuck, false)

      // No frame from the broker: the refreshes alone (one a second) make the ask stuck at 30 s.
      const stuck = yield* advanceUntil(views, (view) => view.openAsks[0]?.stuck === true)
      assert.isAtLeast(stuck.view.at - askedAt, STUCK)
      assert.isBelow(stuck.view.at - askedAt, STUCK + 1_000, "stuck at the first refresh past the threshold")
      assert.strictEqual(stuck.view.totals.stuckAsks, 1)
      assert.isAtLeast(stuck.seen, 29, "a view at least every second")

      yield* Queue.fail(feed, { message: "connect ENOENT /tmp/broker.sock" })
      const lost = yield* advanceUntil(views, (view) => view.connection.state === "lost")
      assert.include(lost.view.connection.detail, "connect ENOENT /tmp/broker.sock")
      assert.deepStrictEqual(lost.view.sessions.map((s) => s.name), ["alice"], "the last snapshot stays on screen")
      assert.strictEqual(yield* Queue.size(opened), 0, "not opened again at once")

      // retryAfter (1 s) later the stream is opened again.
      yield* TestClock.adjust(Duration.seconds(1))
      const reopened = yield* Queue.take(opened)
      yield* Queue.offer(reopened, snapshotAt(yield* Clock.currentTimeMillis))
      yield* advanceUntil(views, (view) => view.connection.state === "connected")
      yield* Fiber.interrupt(fiber)
    })))

  it.effect("shows a broker that sends nothing (stopped, its socket open) as stale within a second after staleAfter, and connected again on its next update", () =>
    Effect.scoped(Effect.gen(function*() {
      const hub = yield* makeViewHub()
      const views = yield* PubSub.subscribe(hub)
      const { source, opened } = yield* controlledSource
      const fiber = yield* Effect.forkChild(runLiveView({
        source,
        hub,
        stuckAfterMs: STUCK,
        socketPath: "/tmp/broker.sock",
        retryAfter: Duration.seconds(1),
        minInterval: Duration.millis(250),
        refreshEvery: Duration.seconds(1),
        staleAfter: Duration.seconds(3)
      }))
      const feed = yield* Queue.take(opened)
      const sentAt = yield* Clock.currentTimeMillis
      yield* Queue.offer(feed, snapshotAt(sentAt))
      yield* advanceUntil(views, (view) => view.connection.state === "connected")

      // The broker goes silent, its stream still open (SIGSTOP): the views stay connected for 3 s, then say stale.
      const stale = yield* advanceUntil(views, (view) => view.connection.state !== "connected")
      assert.strictEqual(stale.view.connection.state, "stale")
      assert.isAtLeast(stale.view.at - sentAt, 3_000)
      assert.isBelow(stale.view.at - sentAt, 4_000 + 250, "within refreshEvery (and minInterval) after staleAfter")
      assert.include(stale.view.connection.detail, "has not answered for 3 s")
      assert.deepStrictEqual(stale.view.sessions.map((s) => s.name), ["alice"], "the last snapshot stays on screen")
      assert.strictEqual(yield* Queue.size(opened), 0, "the stream is not dropped: a stopped broker may resume")

      // It resumes: the next update makes the link connected again.
      yield* Queue.offer(feed, snapshotAt(yield* Clock.currentTimeMillis))
      const back = yield* advanceUntil(views, (view) => view.connection.state === "connected")
      assert.strictEqual(back.view.connection.detail, "connected")
      yield* Fiber.interrupt(fiber)
    })))
})
