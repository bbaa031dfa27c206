/**
 * A `replace`-staged message that supersedes a delivered one sends its supersede control when its window closes
 * (Send.deliverStaged), and stamps it then, as sent (review revbq bq4): the control's `timestamp` is not below a stamp
 * the broker gave while it waited, as the stamps promise (docs/protocol.md, controls; BrokerStamps.ts) — nor below the
 * new message's `brokerReceivedAt`, its staging.
 *
 * On a Router driven by hand, with the clock in the test's hands; each connection's frames are recorded as written.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DELIVERY_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { recordedSessions } from "../support/controlWorld.ts"
import { handRouter } from "../support/handRouter.ts"

const START = 1_000_000
const WINDOW_MS = 1_000

describe("a staged replace's supersede control", () => {
  it.effect("is stamped when its window closes and it is sent, not when it was staged", () =>
    Effect.gen(function*() {
      const clock = { now: START }
      const hand = yield* handRouter({ replaceWindow: WINDOW_MS }, () => clock.now)
      const { connect, framesOf } = recordedSessions(hand)
      const b = connect(1, "b", [])
      const d = connect(2, "d", [DELIVERY_V1])
      const m0 = message("status: building")
      const m1 = message("status: done", { supersedes: m0.id })
      hand.batch(d, [{ type: "send", to: "b", message: m0 }])
      hand.batch(d, [{ type: "send", to: "b", message: m1, delivery: "queue", queueMode: "replace", threadId: "status" }])
      clock.now = START + WINDOW_MS / 2
      const x = message("meanwhile")
      hand.batch(d, [{ type: "send", to: "b", message: x }])
      clock.now = START + WINDOW_MS
      hand.router.staging.flushDue(clock.now)
      const frames = framesOf(b)
      const xAt = frames.find((f) => f.type === "message" && f.message?.id === x.id)?.message?.brokerReceivedAt
      const m1At = frames.find((f) => f.type === "message" && f.message?.id === m1.id)?.message?.brokerReceivedAt
      const stamp = frames.find((f) => f.type === "message_control" && f.control?.action === "supersede")?.control?.timestamp
      assert.strictEqual(xAt, START + WINDOW_MS / 2, "setup: x stamped while m1 waited")
      assert.strictEqual(m1At, START, "setup: m1 keeps its staging's stamp")
      assert.strictEqual(stamp, START + WINDOW_MS, "the supersede was not stamped as sent")
    }))
})
