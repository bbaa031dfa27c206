/**
 * The control fiber acts on every control it reads, also one the client's
 * record (`withdrawal`, RecentControls) forgot by the time the fiber gets
 * there: the record forgets by count (1,024 newer controls) and age too, so
 * a lagging fiber (a slow journal save) that skipped a control the record no
 * longer held handed the cancelled message, still waiting in the hand-off
 * behind one the host refuses, over live (review revbf BF1, a regression of
 * the fix of revbb BB2, which is open again: a new message under the id of
 * an older withdrawn one, read while the fiber lags, is withdrawn with it).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Queue } from "effect"
import { B, C, inboundMessage, journalSession, retryFiveSeconds, settle, slowWithdrawalJournal } from "./support.ts"

describe("a control the record forgot by count while the control fiber lags (review revbf BF1)", () => {
  it.effect("the cancelled message waiting in the hand-off is still handed over withdrawn", () =>
    Effect.gen(function*() {
      // "other"'s withdrawal is saved slowly (the fault modelled: a slow disk write, on the TestClock the test
      // moves; no barrier — every wait below is on a hand-off or a result): the control fiber lags behind the reads.
      const { client, host } = yield* journalSession(slowWithdrawalJournal("other"))
      host.failDeliveries = 15
      yield* client.push(inboundMessage(C, "other", "another task"))
      yield* client.push(inboundMessage(C, "m-2", "do the risky thing"))
      yield* settle
      yield* client.control({ _tag: "Control", from: C, control: { messageId: "other", action: "cancel", timestamp: 0 } })
      yield* settle
      // Read while the fiber is saving "other"'s withdrawal: m-2's cancel, then 1,024 newer controls.
      yield* client.control({ _tag: "Control", from: C, control: { messageId: "m-2", action: "cancel", timestamp: 0 } })
      for (let i = 0; i < 1024; i++) {
        yield* client.control({ _tag: "Control", from: B, control: { messageId: `x-${i}`, action: "cancel", timestamp: 0 } })
      }
      assert.isUndefined(yield* client.service.withdrawal(C.id, "m-2"), "setup: the record forgot m-2's cancel (capacity)")
      yield* retryFiveSeconds
      assert.strictEqual((yield* Queue.take(host.inbox)).message.id, "other", "setup: other first")
      const second = yield* Queue.take(host.inbox)
      assert.strictEqual(second.message.id, "m-2", "setup: m-2 next")
      assert.strictEqual(second.intent, "passive", "m-2, cancelled before the host took it, was handed over live")
      assert.include(second.text, "Withdrawn")
    }))
})
