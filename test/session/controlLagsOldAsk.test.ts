/**
 * An OLD ask the host took, which its sender then cancels and follows with a NEW plain message under the reused
 * id: the client reads the cancel, then the new message, while the session's control fiber lags behind (saving an
 * earlier withdrawal slowly). When the fiber gets to the cancel, the new message was read after it (`readSince`),
 * so the new one is left live — and the old ask, the one the cancel is about, is closed as withdrawn all the same,
 * not left pending for good (review revbi BI1; `ReplyTracker.askWithdrawn` with the control's read number). A new
 * ask under the id staying open is test/session/controlFiberLags.test.ts's. Fake client, TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Queue } from "effect"
import { TestClock } from "effect/testing"
import {
  C,
  holdControlFiber,
  inboundMessage,
  journalSession,
  retryFiveSeconds,
  settle,
  slowWithdrawalJournal
} from "./support.ts"

const HOUR = 60 * 60 * 1000

describe("a lagging control fiber and an old ask the host took", () => {
  it.effect("closes the old ask its sender withdrew, a newer plain message under its id read after the cancel", () =>
    Effect.gen(function*() {
      // The control fiber lags: saving "other"'s withdrawal is a slow disk write.
      const { client, host, session } = yield* journalSession(slowWithdrawalJournal("other"))
      // C asks m-1; the host takes it live: a pending ask.
      // Its asker waits 3 h (ask-timeout-v1), so it is still pending past the admission window below.
      yield* client.push({ ...inboundMessage(C, "m-1", "old question", { expectsReply: true }), askTimeoutMs: 3 * HOUR })
      yield* settle
      assert.strictEqual((yield* Queue.take(host.inbox)).intent, "trigger", "setup: the old ask was live")
      assert.deepStrictEqual(
        (yield* Effect.orDie(session.pending)).asks.map((ask) => ask.message.id),
        ["m-1"],
        "setup: the old ask is pending"
      )
      // Past the broker's replay record and the admission window (as controlFiberLags.test.ts).
      yield* TestClock.adjust(2 * HOUR)
      assert.strictEqual((yield* Effect.orDie(session.pending)).asks.length, 1, "setup: still pending 2 h on")
      // The control fiber is held up saving the withdrawal of "other".
      yield* holdControlFiber({ client, host })
      // C withdraws the old ask m-1 (read by the client now) and later sends a plain message reusing the id.
      yield* client.control({ _tag: "Control", from: C, control: { messageId: "m-1", action: "cancel", timestamp: 0 } })
      yield* client.push(inboundMessage(C, "m-1", "unrelated note"))
      yield* settle
      yield* retryFiveSeconds
      assert.strictEqual((yield* Queue.take(host.inbox)).message.id, "other", "setup: other handed over")
      const second = yield* Queue.take(host.inbox)
      assert.strictEqual(second.message.content.text, "unrelated note", "setup: the new m-1 was handed over")
      assert.notInclude(second.text, "Withdrawn", "the new m-1 was handed over withdrawn by the old one's cancel")
      const asks = (yield* Effect.orDie(session.pending)).asks
      assert.deepStrictEqual(
        asks.map((ask) => ask.message.content.text),
        [],
        "the old m-1 ask its sender withdrew is still pending (never closed as withdrawn)"
      )
    }))
})
