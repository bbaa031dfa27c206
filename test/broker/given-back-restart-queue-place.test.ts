/**
 * Mail given back to the mailbox (a closing connection gave it back
 * unconfirmed) goes to the back of the queue at its return, and a durable
 * broker restarted since queues it there again (Router.restore,
 * RestoreOrder.ts: just before the first row accepted after its return) —
 * not at its row's place, its acceptance's: the mailbox's bounds evict the
 * oldest by queue place (Mailbox.oldest), so there the just-returned message
 * was evicted ahead of mail queued before its return (review revs1 probe 1).
 * `d`'s m0 is written to `b` and never confirmed; ten minutes in `d`'s c0 is
 * queued for away `carol`; thirty minutes in `b`'s connection closes and m0
 * comes back. With a capacity of 2, `d`'s next message c1 for away `zed`
 * evicts one of d's two queued messages: c0 on the broker that did not
 * restart, and the same on one restarted from the store.
 * On Routers driven by hand, the journal's batches committed to a memory
 * store; the clock is a local reading the test sets, nothing waits on time.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { flushedTo, notingSession, register, storedHandWorld } from "../support/handSessions.ts"

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const T0 = 1_000_000
const options = { mailboxRetention: HOUR, mailboxCapacity: 2 }

describe("given-back mail keeps its queue place across a durable restart", () => {
  it.effect("the restarted broker evicts the same message as the broker that did not restart", () =>
    Effect.gen(function*() {
      const { clock, commit, first, restarted } = yield* storedHandWorld(options, T0)
      const writtenB: Array<string> = []
      const b = notingSession(first, 1, "b", writtenB)
      const d = register(first, 2, "d")
      first.close(register(first, 3, "carol"))
      first.close(register(first, 4, "zed"))
      first.batch(d, [{ type: "send", to: "b", message: message("m0") }])
      assert.deepStrictEqual(writtenB, ["m0"], "m0 was not written to b: the test sets up nothing")
      clock.t = T0 + 10 * MINUTE
      first.batch(d, [{ type: "send", to: "carol", message: message("c0") }])
      clock.t = T0 + 30 * MINUTE
      first.closeAbandoning(b)
      assert.strictEqual(first.router.heldMail()?.messages, 2, "m0 and c0 are not both queued: the test sets up nothing")
      yield* commit

      // Forty minutes in, d sends c1 to away zed: one of d's two queued messages is evicted.
      clock.t = T0 + 40 * MINUTE
      first.batch(d, [{ type: "send", to: "zed", message: message("c1") }])
      const withoutRestart = { carol: flushedTo(first, 10, "carol"), b: flushedTo(first, 11, "b"), zed: flushedTo(first, 12, "zed") }
      assert.deepStrictEqual(withoutRestart, { carol: [], b: ["m0"], zed: ["c1"] }, "without a restart c0 is not the one evicted")

      // The same from a broker restarted at forty minutes.
      const second = yield* restarted
      second.close(register(second, 23, "zed"))
      second.batch(register(second, 20, "d"), [{ type: "send", to: "zed", message: message("c1") }])
      const afterRestart = { carol: flushedTo(second, 21, "carol"), b: flushedTo(second, 22, "b"), zed: flushedTo(second, 24, "zed") }
      // Restored at its acceptance's place (2092d5ff): { carol: ["c0"], b: [], zed: ["c1"] } — m0 evicted ahead of c0.
      assert.deepStrictEqual(afterRestart, withoutRestart)
    }))
})
