/**
 * At the session cap with realistic session fields — long cwd and model
 * strings, so one 1 MiB `sessions` frame holds about 3,000 — `status`,
 * `list` and target resolution of a client are exact: the client pages
 * (`list-page-v1`). In memory under TestClock: cap − 2 sessions registered on
 * raw connections that never read, plus two full sessions.
 *
 * The suite runs it at a configured cap of 16,384 (about 20 s; at the
 * default cap of 50,000 it takes 50–90 s of one test worker, past 150 s on
 * a loaded machine). `SESSION_CAP_TEST=default` runs it at the default cap:
 * `SESSION_CAP_TEST=default npx vitest run test/broker/session-cap.test.ts`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Queue } from "effect"
import { DEFAULT_MAX_SESSIONS } from "../../src/broker/options.ts"
import { memoryWorld } from "../support/memoryWorld.ts"

const CWD = `/home/someone/projects/${"a-rather-deep-monorepo/packages/".repeat(4)}service`
const MODEL = "anthropic/claude-some-long-model-name-2026-11-01-with-a-suffix"

/** The cap under test: 16,384 in the suite, the broker's default with `SESSION_CAP_TEST=default`. */
const CAP = process.env["SESSION_CAP_TEST"] === "default" ? DEFAULT_MAX_SESSIONS : 16_384

describe("at the session cap", () => {
  it("the default cap holds at least 50,000 sessions (issue 16)", () => {
    assert.isAtLeast(DEFAULT_MAX_SESSIONS, 50_000)
  })

  it.effect(`status counts, list lists, and an ask reaches a session registered last, with ${CAP} sessions at a cap of ${CAP}`, () =>
    Effect.gen(function*() {
      // Connections buffer 4 frames each way: an idle session's broker-side writer blocks after a few
      // membership frames instead of working through thousands (a real socket's buffer is larger).
      const world = yield* memoryWorld({ maxSessions: CAP }, { linkCapacity: 4 })
      const idle = CAP - 2
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
      assert.strictEqual(yield* world.broker.sessionCount, CAP)

      const status = yield* asker.session.status
      assert.strictEqual(status.activeSessions, CAP)
      const listed = yield* asker.session.list
      assert.strictEqual(listed.sessions.length, CAP)
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
