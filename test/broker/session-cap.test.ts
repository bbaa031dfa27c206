/**
 * At the session cap (50,000) with realistic session fields — long cwd and
 * model strings, so one 1 MiB `sessions` frame holds about 3,000 — `status`,
 * `list` and target resolution of a client are exact: the client pages
 * (`list-page-v1`). In memory under TestClock: 49,998 sessions registered on
 * raw connections that never read, plus two full sessions.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Queue } from "effect"
import { DEFAULT_MAX_SESSIONS } from "../../src/broker/options.ts"
import { memoryWorld } from "../support/memoryWorld.ts"

const CWD = `/home/someone/projects/${"a-rather-deep-monorepo/packages/".repeat(4)}service`
const MODEL = "anthropic/claude-some-long-model-name-2026-11-01-with-a-suffix"

describe("at the session cap", () => {
  it.effect("status counts, list lists, and an ask reaches a session registered last, with 50,000 sessions", () =>
    Effect.gen(function*() {
      // Connections buffer 4 frames each way: an idle session's broker-side writer blocks after a few
      // membership frames instead of working through thousands (a real socket's buffer is larger).
      const world = yield* memoryWorld({}, { linkCapacity: 4 })
      const idle = DEFAULT_MAX_SESSIONS - 2
      const register = (i: number) =>
        Effect.gen(function*() {
          const connection = yield* world.dial
          yield* connection.writeAll([
            JSON.stringify({
              type: "register",
              sessionId: `idle-${String(i).padStart(5, "0")}-${"x".repeat(24)}`,
              session: { cwd: `${CWD}/${i}`, model: MODEL, pid: 10_000 + i, startedAt: 0, lastActivity: 0, name: `worker-${i}` }
            })
          ])
          // Barrier: `registered` is the first frame; the connection is never read again.
          const [first] = yield* connection.read.pipe(Effect.orDie)
          assert.include(first, `"registered"`)
        })
      for (let start = 0; start < idle; start += 512) {
        const batch = Array.from({ length: Math.min(512, idle - start) }, (_, k) => start + k)
        yield* Effect.forEach(batch, register, { concurrency: "unbounded", discard: true })
      }
      const asker = yield* world.session("asker")
      const target = yield* world.session("target-registered-last")
      assert.strictEqual(yield* world.broker.sessionCount, DEFAULT_MAX_SESSIONS)

      const status = yield* asker.session.status
      assert.strictEqual(status.activeSessions, DEFAULT_MAX_SESSIONS)
      const listed = yield* asker.session.list
      assert.strictEqual(listed.sessions.length, DEFAULT_MAX_SESSIONS)
      assert.strictEqual(listed.self.id, "asker")

      const answering = yield* Effect.forkChild(
        Effect.gen(function*() {
          const question = yield* Queue.take(target.inbound)
          return yield* target.session.reply({ message: `pong: ${question.message.content.text}` })
        })
      )
      const replied = yield* asker.session.ask({ to: "target-registered-last", message: "ping" })
      assert.strictEqual(replied._tag, "Replied")
      assert.include(replied.text, "pong: ping")
      yield* Fiber.join(answering)
    }), 400_000) // 86 s on a loaded 2-core machine, past 150 s when it is very loaded
})
