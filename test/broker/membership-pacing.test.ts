/**
 * Membership pacing (Membership.ts, "Pacing"): after a round of membership
 * wake-ups that reached more than PACE_ABOVE writers, the next round waits
 * PACE_MS on the broker's Clock. Under TestClock, on raw connections of the
 * in-memory broker: an idle session hears of a change only once the pause
 * has passed, while a session that gets any other frame meanwhile gets the
 * change first (its writer collects membership before what it writes), so
 * no frame ever overtakes a membership change made before it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { PACE_ABOVE, PACE_MS } from "../../src/broker/Membership.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { type MemoryWorld, memoryWorld } from "../support/memoryWorld.ts"

/** The frames of `connection` up to and including the first one `matches`, parsed. */
const readUntil = (connection: Connection, matches: (frame: Record<string, unknown>) => boolean) =>
  Effect.gen(function*() {
    const seen: Array<Record<string, unknown>> = []
    while (true) {
      for (const text of yield* connection.read.pipe(Effect.orDie)) {
        const frame: Record<string, unknown> = JSON.parse(text)
        seen.push(frame)
        if (matches(frame)) return seen
      }
    }
  })

const statusOf = (frame: Record<string, unknown>): unknown => {
  const session = frame["session"]
  return typeof session === "object" && session !== null ? Reflect.get(session, "status") : undefined
}

const isUpdate = (status: string) => (frame: Record<string, unknown>) =>
  frame["type"] === "presence_update" && statusOf(frame) === status

/** Registers `count` sessions `s-0`… on raw connections of `world`, each read up to its `registered`. */
const registerRaw = (world: MemoryWorld, count: number) =>
  Effect.gen(function*() {
    const sessions: Array<Connection> = []
    for (let i = 0; i < count; i++) {
      const connection = yield* world.dial
      yield* connection.writeAll([JSON.stringify({
        type: "register",
        sessionId: `s-${i}`,
        session: { cwd: "/work", model: "m", pid: 1, startedAt: 0, lastActivity: 0, name: `s-${i}` }
      })])
      yield* readUntil(connection, (frame) => frame["type"] === "registered")
      sessions.push(connection)
    }
    return sessions
  })

describe("membership pacing", () => {
  it.effect("after a round that woke many writers, idle sessions hear of the next change after PACE_MS; a session written to meanwhile hears it first", () =>
    Effect.gen(function*() {
      // Links large enough that no broker-side writer blocks: every session takes every wake-up.
      const world = yield* memoryWorld({}, { linkCapacity: 4096 })
      const count = PACE_ABOVE + 6
      const sessions = yield* registerRaw(world, count)
      // Every round the registrations started has run, and any pause after them has passed.
      for (let round = 0; round < 3; round++) {
        yield* TestClock.adjust(PACE_MS)
        for (let i = 0; i < 50; i++) yield* Effect.yieldNow
      }
      const [first, second, third, changer] = [sessions[0]!, sessions[1]!, sessions[2]!, sessions[count - 1]!]

      // A change that reaches every other session's writer: a round above PACE_ABOVE, a pause after it.
      yield* changer.writeAll([JSON.stringify({ type: "presence", status: "one" })])
      yield* readUntil(first, isUpdate("one"))
      yield* readUntil(second, isUpdate("one"))
      yield* readUntil(third, isUpdate("one"))

      // The next change waits for the pause: the idle session has not heard of it yet.
      yield* changer.writeAll([JSON.stringify({ type: "presence", status: "two" })])
      const idleHears = yield* Effect.forkChild(readUntil(second, isUpdate("two")))
      for (let i = 0; i < 50; i++) yield* Effect.yieldNow
      assert.isUndefined(idleHears.pollUnsafe())

      // A session that is written to meanwhile (its list answer) gets the change before the answer.
      yield* first.writeAll([JSON.stringify({ type: "list", requestId: "l" })])
      const beforeAnswer = yield* readUntil(first, (frame) => frame["type"] === "sessions")
      const update = beforeAnswer.findIndex(isUpdate("two"))
      assert.isAtLeast(update, 0)
      assert.strictEqual(update, beforeAnswer.length - 2)

      // Once the pause has passed, the idle session hears of it.
      yield* TestClock.adjust(PACE_MS)
      const heard = yield* Fiber.join(idleHears)
      assert.strictEqual(heard.at(-1)?.["type"], "presence_update")
    }))

  it.effect("small scopes are not paced: with PACE_ABOVE sessions or fewer, every change goes out at once", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld({}, { linkCapacity: 4096 })
      const sessions = yield* registerRaw(world, 4)
      const [watcher, changer] = [sessions[0]!, sessions[3]!]
      for (const status of ["one", "two", "three"]) {
        yield* changer.writeAll([JSON.stringify({ type: "presence", status })])
        // No clock adjustment: a round that woke few writers leaves no pause.
        yield* readUntil(watcher, isUpdate(status))
      }
    }))
})
