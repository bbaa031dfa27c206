/**
 * A staged message's window closing during the broker's stop hands nothing over (review rvfin probe 3):
 * ReplaceStaging.brokerStopping keeps a staged message staged when the stop's closes end its recipient and sender,
 * so the last commit keeps its row as a crash does (docs/store.md "A clean stop and a crash"); the staging fiber
 * (Broker.ts) still runs until the stop's closes are done, and before `flushDue` stopped with the rest, a window
 * closing then found the recipient gone and dropped the message (its row deleted, its sender owed `expired`). On a
 * Router driven by hand: `Router.stopping()` then the closes, as AdoptedConnections.closeAll runs them, then the
 * window closing. The clock in the test's hands; no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DELIVERY_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { recordedSessions } from "../support/controlWorld.ts"
import { handRouter } from "../support/handRouter.ts"

const START = 1_000_000
const WINDOW_MS = 1_000
const replace = { delivery: "queue", queueMode: "replace", threadId: "t" }

describe("a staged window closing during the broker's stop", () => {
  it.effect("keeps the message staged (as the stop's closes left it), not dropped with an expired notice", () =>
    Effect.gen(function*() {
      const clock = { now: START }
      const hand = yield* handRouter({ replaceWindow: WINDOW_MS }, () => clock.now)
      const { connect, framesOf } = recordedSessions(hand)
      const b = connect(1, "b", [])
      const d = connect(2, "d", [DELIVERY_V1])
      const m0 = message("m0")
      hand.batch(d, [{ type: "send", to: "b", message: m0, ...replace }])
      assert.deepStrictEqual(framesOf(d).filter((f) => f.messageId === m0.id).map((f) => f.type), ["delivery_queued"], "setup: not staged")
      // The stop (AdoptedConnections.closeAll): the Router told first, then every connection closed.
      hand.router.stopping()
      hand.close(b)
      hand.close(d)
      assert.strictEqual(hand.router.staging.size, 1, "setup: the stop's closes did not keep the staged message")
      // The staging fiber still runs until Broker.make's scope interrupts it: the window closes meanwhile.
      clock.now += WINDOW_MS
      hand.router.staging.flushDue(clock.now)
      assert.strictEqual(hand.router.staging.size, 1, "the window closing during the stop dropped the message the stop's closes kept")
    }))
})
