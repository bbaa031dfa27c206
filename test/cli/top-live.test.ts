/**
 * `intercom top`'s live screen (src/cli/top/runTop.ts, `liveScreen`) under
 * TestClock, on a fake terminal: a broker that stops sending updates while
 * its connection stays open (SIGSTOP, hung) is shown as not answering once
 * `staleAfterMs` of its interval has passed, and the next update clears it.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Cause, Clock, Duration, Effect, Fiber, Queue, Stream } from "effect"
import * as Terminal from "effect/Terminal"
import { TestClock } from "effect/testing"
import { liveScreen } from "../../src/cli/top/runTop.ts"
import type { BrokerSnapshot, ObserveEvent } from "../../src/observe/Snapshot.ts"

const snapshotAt = (at: number): BrokerSnapshot => ({
  at,
  startedAt: at - 60_000,
  sessionCount: 1,
  sessions: [{
    id: "a",
    name: "alice",
    group: "default",
    lastSeen: at,
    lastActivity: at,
    pendingAsks: 0,
    waitingAsks: 0,
    messagesOut: 0,
    messagesIn: 0,
    outboxChars: 0,
    ratePerSec: 0,
    registeredAt: at - 60_000
  }],
  queues: { mailbox: 0, staged: 0, outboxChars: 0, unregistered: 0 },
  askCount: 0,
  asks: [],
  totals: { delivered: 0, queued: 0, staged: 0, refused: 0, asks: 0, replies: 0 },
  rate: { windowMs: 1_000, routedPerSec: 0 },
  traffic: [],
  refusals: []
})

/** A terminal of 160 × 60 whose every screen goes to `screens`; no key, no resize. */
const fakeTerminal = (screens: Queue.Queue<string>) =>
  Terminal.make({
    columns: Effect.succeed(160),
    rows: Effect.succeed(60),
    size: Queue.unbounded<Terminal.Size, Cause.Done>(),
    readInput: Queue.unbounded<Terminal.UserInput, Cause.Done>(),
    readLine: Effect.never,
    display: (text) => Queue.offer(screens, text).pipe(Effect.asVoid)
  })

/** Moves the clock 250 ms at a time until a screen satisfies `until`; that screen, and every screen before it. */
const advanceUntil = (screens: Queue.Queue<string>, until: (screen: string) => boolean) =>
  Effect.gen(function*() {
    const before: Array<string> = []
    for (let step = 0; step < 400; step++) {
      for (const screen of yield* Queue.clear(screens)) {
        if (until(screen)) return { screen, before }
        before.push(screen)
      }
      yield* TestClock.adjust(Duration.millis(250))
    }
    return yield* Effect.die(new Error("no such screen within 100 s"))
  })

const NOT_ANSWERING = "NOT ANSWERING"

describe("intercom top: a broker that stops answering", () => {
  it.effect("says so after three intervals (at least 3 s) without an update, within a second, and not after the next update", () =>
    Effect.scoped(Effect.gen(function*() {
      const screens = yield* Queue.unbounded<string>()
      const updates = yield* Queue.unbounded<BrokerSnapshot | ObserveEvent>()
      const fiber = yield* Effect.forkChild(liveScreen(fakeTerminal(screens), Stream.fromQueue(updates), 1_000))

      const sentAt = yield* Clock.currentTimeMillis
      yield* Queue.offer(updates, snapshotAt(sentAt))
      yield* advanceUntil(screens, (screen) => screen.includes("alice"))

      const stale = yield* advanceUntil(screens, (screen) => screen.includes(NOT_ANSWERING))
      const silentFor = (yield* Clock.currentTimeMillis) - sentAt
      assert.isAtLeast(silentFor, 3_000)
      assert.isBelow(silentFor, 4_000 + 250, "noticed by the next tick (one a second)")
      assert.isAtLeast(stale.before.length, 2, "the screen was redrawn by the ticks meanwhile")
      assert.include(stale.screen, "no update from the broker for 3s")
      assert.include(stale.screen, "alice", "its last update stays on screen")

      yield* Queue.offer(updates, snapshotAt(yield* Clock.currentTimeMillis))
      const back = yield* advanceUntil(screens, (screen) => !screen.includes(NOT_ANSWERING))
      assert.include(back.screen, "alice")
      yield* Fiber.interrupt(fiber)
    })))

  it.effect("waits longer for a longer interval: three intervals of 2 s", () =>
    Effect.scoped(Effect.gen(function*() {
      const screens = yield* Queue.unbounded<string>()
      const updates = yield* Queue.unbounded<BrokerSnapshot | ObserveEvent>()
      const fiber = yield* Effect.forkChild(liveScreen(fakeTerminal(screens), Stream.fromQueue(updates), 2_000))
      const sentAt = yield* Clock.currentTimeMillis
      yield* Queue.offer(updates, snapshotAt(sentAt))
      yield* advanceUntil(screens, (screen) => screen.includes(NOT_ANSWERING))
      const silentFor = (yield* Clock.currentTimeMillis) - sentAt
      assert.isAtLeast(silentFor, 6_000)
      assert.isBelow(silentFor, 7_000 + 250)
      yield* Fiber.interrupt(fiber)
    })))
})
