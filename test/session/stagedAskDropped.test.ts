/**
 * A staged `replace` ask whose asker's connection drops within the window
 * (C-DLV-9): the broker drops it, and the asker — a full client and session
 * on the in-memory broker, under TestClock — is told once it has reconnected:
 * the ask ends with `AskExpired` and the broker's reason, long before its
 * timeout, and the target never gets it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Queue } from "effect"
import { TestClock } from "effect/testing"
import type { Dialer } from "../../src/client/Dialer.ts"
import { Reason } from "../../src/protocol/delivery.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { memoryWorld } from "../support/memoryWorld.ts"
import { settle } from "../support/steps.ts"

describe("a staged ask dropped with its asker's connection (C-DLV-9)", () => {
  it.effect("the asker's ask ends with the broker's reason once it reconnects, not at its timeout", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      // The asker dials through here, so the test can drop its connection as a dying socket would.
      const dialled: Array<Connection> = []
      const dial: Dialer = () =>
        Effect.tap(world.dial, (connection) => Effect.sync(() => dialled.push(connection)))
      const asker = yield* world.session("asker", { client: { dial, reconnectBaseMs: 100, reconnectMaxMs: 200 } })
      const target = yield* world.session("target")
      const asking = yield* Effect.forkChild(asker.session.intercom({
        action: "ask",
        to: "target",
        message: "which path?",
        delivery: "queue",
        queueMode: "replace",
        threadId: "plan",
        timeoutMs: 600_000
      }), { startImmediately: true })
      yield* settle(Effect.void)
      assert.isUndefined(asking.pollUnsafe(), "staged, so still waiting")
      assert.isTrue(yield* asker.session.waiting)
      const first = dialled[0]
      if (first === undefined) return assert.fail("the asker never dialled")
      yield* settle(first.destroy)
      // The reconnect (100 ms) brings the kept receipt; the window (1,500 ms) has not closed yet.
      yield* TestClock.adjust(1_000)
      assert.strictEqual(dialled.length, 2)
      assert.isDefined(asking.pollUnsafe(), "the ask still waits after the reconnect")
      const result = yield* Fiber.join(asking)
      assert.isTrue(result.isError)
      assert.strictEqual(result.text, `The broker dropped this ask before delivering it: ${Reason.stagedAskerLeft}`)
      assert.strictEqual(result.details["error"], "AskExpired")
      assert.isFalse(yield* asker.session.waiting)
      yield* TestClock.adjust(2_000)
      assert.strictEqual(yield* Queue.size(target.inbound), 0)
    }))
})
