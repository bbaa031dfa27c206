/**
 * Two messages given back to the mailbox with nothing accepted between their returns share one mark
 * (`StoredMail.givenBack`), and a durable broker restarted since queues them in the order they came back, as the
 * mailbox did — by the give-back date (`mail.queuedAt`) within one mark (RestoreOrder.ts) — not in acceptance order
 * (review rrsq probe 1, 1b). `d`'s x goes to live `b` (seq 1), then y to live `e` (seq 2); at ten minutes e's
 * connection closes (y back), at thirty minutes b's (x back): both marked 3. With a capacity of 2, d's c1 for away
 * zed at forty minutes evicts the oldest queued, y, on the broker that did not restart and on one restarted from the
 * store. With a retention of an hour and no capacity bound, at seventy-five minutes both brokers hold x (given back
 * at thirty: due at ninety) and not y (due at seventy): restored before y, x was read as a clock step back and
 * re-dated to ten (review revmailbox D1).
 * On Routers driven by hand, the journal's batches committed to a memory store; the clock is a local reading the
 * test sets, nothing waits on time.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { flushedTo, notingSession, register, storedHandWorld } from "../support/handSessions.ts"

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const T0 = 1_000_000
const options = { mailboxRetention: HOUR, mailboxCapacity: 2 }

describe("given-back mail with one mark: eviction after a restart", () => {
  it.effect("a restarted broker evicts the same given-back message as one that did not restart", () =>
    Effect.gen(function*() {
      const { clock, commit, first, restarted } = yield* storedHandWorld(options, T0)
      const writtenB: Array<string> = []
      const writtenE: Array<string> = []
      const b = notingSession(first, 1, "b", writtenB)
      const e = notingSession(first, 5, "e", writtenE)
      const d = register(first, 2, "d")
      first.close(register(first, 4, "zed"))
      first.batch(d, [{ type: "send", to: "b", message: message("x") }])
      first.batch(d, [{ type: "send", to: "e", message: message("y") }])
      assert.deepStrictEqual([writtenB, writtenE], [["x"], ["y"]], "x and y were not written: the test sets up nothing")
      clock.t = T0 + 10 * MINUTE
      first.closeAbandoning(e)
      clock.t = T0 + 30 * MINUTE
      first.closeAbandoning(b)
      assert.strictEqual(first.router.heldMail()?.messages, 2, "x and y are not both queued: the test sets up nothing")
      yield* commit

      clock.t = T0 + 40 * MINUTE
      first.batch(d, [{ type: "send", to: "zed", message: message("c1") }])
      const withoutRestart = { b: flushedTo(first, 10, "b"), e: flushedTo(first, 11, "e"), zed: flushedTo(first, 12, "zed") }
      assert.deepStrictEqual(withoutRestart, { b: ["x"], e: [], zed: ["c1"] }, "without a restart y is not the one evicted")

      const second = yield* restarted
      second.close(register(second, 23, "zed"))
      second.batch(register(second, 20, "d"), [{ type: "send", to: "zed", message: message("c1") }])
      const afterRestart = { b: flushedTo(second, 21, "b"), e: flushedTo(second, 22, "e"), zed: flushedTo(second, 24, "zed") }
      assert.deepStrictEqual(afterRestart, withoutRestart)
    }))
})

describe("given-back mail with one mark: retention after a restart", () => {
  it.effect("at seventy-five minutes a restarted broker still holds x (given back at thirty), as one that did not restart", () =>
    Effect.gen(function*() {
      const { clock, commit, first, restarted } = yield* storedHandWorld({ mailboxRetention: HOUR }, T0)
      const writtenB: Array<string> = []
      const writtenE: Array<string> = []
      const b = notingSession(first, 1, "b", writtenB)
      const e = notingSession(first, 5, "e", writtenE)
      const d = register(first, 2, "d")
      first.batch(d, [{ type: "send", to: "b", message: message("x") }])
      first.batch(d, [{ type: "send", to: "e", message: message("y") }])
      assert.deepStrictEqual([writtenB, writtenE], [["x"], ["y"]], "x and y were not written: the test sets up nothing")
      clock.t = T0 + 10 * MINUTE
      first.closeAbandoning(e)
      clock.t = T0 + 30 * MINUTE
      first.closeAbandoning(b)
      yield* commit
      clock.t = T0 + 75 * MINUTE
      first.router.prune(clock.t)
      const withoutRestart = { b: flushedTo(first, 10, "b"), e: flushedTo(first, 11, "e") }
      assert.deepStrictEqual(withoutRestart, { b: ["x"], e: [] }, "without a restart x is not held, or y is")

      const second = yield* restarted
      second.router.prune(clock.t)
      const afterRestart = { b: flushedTo(second, 21, "b"), e: flushedTo(second, 22, "e") }
      assert.deepStrictEqual(afterRestart, withoutRestart)
    }))
})
