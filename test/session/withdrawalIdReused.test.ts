/**
 * A withdrawal (P73) is of one message, not of its (sender, id) for ever (review revax AX-B1): a sender that
 * sends a new message under the id of one it cancelled earlier — once the broker's replay record and the
 * session's admission window of the old one are past — has the new one handed over live, not withdrawn by the
 * old one's cancel, which the client still remembers (`IntercomClient.withdrawal`, RecentControls.received).
 * Over the fake session client, which forgets a pair's controls as a message of it is pushed, as the real
 * client does for a message it passes on (test/client/controlsOnce.test.ts), on the TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Queue } from "effect"
import { TestClock } from "effect/testing"
import { C, inboundMessage, settle, withPeers } from "./support.ts"

const HOUR = 60 * 60 * 1000

describe("a control of an earlier message with the same id (review revax AX-B1)", () => {
  it.effect("a fresh message reusing a cancelled message's id after the replay window is handed over live", () =>
    Effect.gen(function*() {
      const { client, host } = yield* withPeers()
      // The first message with id m-1: handed over, acted on, then its sender cancels it (control handled).
      yield* client.push(inboundMessage(C, "m-1", "first task"))
      yield* settle
      const first = yield* Queue.take(host.inbox)
      assert.strictEqual(first.intent, "trigger", "setup: the first message was live")
      yield* client.control({ _tag: "Control", from: C, control: { messageId: "m-1", action: "cancel", timestamp: 0 } })
      yield* settle
      // Past the broker's replay record (P46, 1 h) and the session's admission window (1 h): the id is free again.
      yield* TestClock.adjust(2 * HOUR)
      yield* client.push(inboundMessage(C, "m-1", "an unrelated new task"))
      yield* settle
      const second = yield* Queue.take(host.inbox)
      assert.strictEqual(second.message.content.text, "an unrelated new task", "setup: the new message was admitted")
      assert.strictEqual(second.intent, "trigger", "a new message was handed over withdrawn by an earlier message's cancel")
      assert.notInclude(second.text, "Withdrawn")
    }))
})
