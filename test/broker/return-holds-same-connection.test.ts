/**
 * `WithheldDepartures.unwithholdBeforeNewMail`, the held return's safety net: a
 * session that unregisters with output parked and registers again ON THE
 * SAME connection in that batch has its new mail offered by that same
 * drainer (`waitsForReturn` lets the reader of the old output through), so
 * it reaches the recipient's outbox while the drainer's list still holds
 * mail for a watcher that does not read — before the pair is owed. The
 * recipient's writer then owes the pair ahead of that mail. Hand-driven
 * Router; found by review revrbq2 (the net had no test).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { message, registerFrame } from "../support/broker.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter, orderLabel } from "../support/handRouter.ts"

const label = orderLabel

describe("a return on the same connection, in the unregister batch", () => {
  it.effect("the recipient gets the old reply, the pair, then the new mail, while the watcher still holds the rest", () =>
    Effect.gen(function*() {
      const { attach, batch, router } = yield* handRouter({ outboxCapacity: 2 })
      let connections = 0
      const got: Array<string> = []
      const asker = attach({ ...fakeConnection(++connections, false), write: (frames) => void got.push(...frames.flatMap(label)) })
      batch(asker, [registerFrame({ sessionId: "asker" })])
      const watcher = attach(fakeConnection(++connections, true))
      batch(watcher, [registerFrame({ sessionId: "watcher" })])
      const a = attach(fakeConnection(++connections, false))
      batch(a, [registerFrame({ sessionId: "replier" })])
      router.membership.notify() // the asker hears the replier join (the notifier's round)
      assert.include(got, "joined replier")
      router.output.writes.takeForWrite(watcher)
      // The watcher's outbox full (its writer stuck), then the replier's batch parks from its first send on.
      batch(a, [{ type: "send", to: "watcher", message: message("w0") }, { type: "send", to: "watcher", message: message("w1") }])
      assert.strictEqual(watcher.outbox.length, 2)
      got.length = 0
      assert.isTrue(batch(a, [
        { type: "send", to: "watcher", message: message("x1") },
        { type: "send", to: "asker", message: message("old") },
        { type: "unregister" },
        registerFrame({ sessionId: "replier" }),
        { type: "send", to: "asker", message: message("new") },
        { type: "send", to: "watcher", message: message("x2") }
      ]))
      const tryDrain = (): void => {
        const entry = router.output.drain.nextParked(a)
        if (entry === undefined) return
        const fiber = Effect.runFork(router.output.drain.offerParked(a, entry))
        Effect.runSync(Fiber.interrupt(fiber))
      }
      router.output.writes.takeForWrite(watcher) // room for one write's worth: x1 fits, x2 will not
      for (let i = 0; i < 6; i++) tryDrain()
      assert.isAbove(a.parked.length, 0, "the drainer still holds the watcher's x2")
      assert.deepStrictEqual(got.filter((f) => f === "old" || f === "new" || f.endsWith(" replier")), [
        "old",
        "left replier",
        "joined replier",
        "new"
      ])
    }))
})
