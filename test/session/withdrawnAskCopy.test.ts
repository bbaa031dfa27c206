/**
 * A copy of an ask its sender withdrew, which the client passes on once more (its reply lost or cancelled:
 * RecentMessages reopens the pair and says `"again"`), is handed to the host withdrawn, not live (review revbb
 * BB1): the client keeps the ask's cancel for such a copy (RecentControls.received is for a new message only),
 * so a session handing the copy over before the cancel written behind it is read still knows it was withdrawn.
 * Past the session's own admission window (an hour), as a cancelled copy kept in the mailbox (a day) for this
 * client instance's return. Over the fake session client (`pushAgain`), on the TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Queue } from "effect"
import { TestClock } from "effect/testing"
import { C, inboundMessage, settle, withPeers } from "./support.ts"

const HOUR = 60 * 60 * 1000

describe("a copy of a withdrawn ask the client passes on again (review revbb BB1)", () => {
  it.effect("is handed over withdrawn, not live", () =>
    Effect.gen(function*() {
      const { client, host } = yield* withPeers()
      yield* client.push(inboundMessage(C, "q-1", "delete the branch?", { expectsReply: true }))
      yield* settle
      assert.strictEqual((yield* Queue.take(host.inbox)).intent, "trigger", "setup: the ask was live")
      yield* client.control({ _tag: "Control", from: C, control: { messageId: "q-1", action: "cancel", timestamp: 0 } })
      yield* settle
      yield* TestClock.adjust(2 * HOUR)
      // The copy, read apart from the cancel written behind it.
      yield* client.pushAgain(inboundMessage(C, "q-1", "delete the branch?", { expectsReply: true }))
      yield* settle
      const copy = yield* Queue.take(host.inbox)
      assert.strictEqual(copy.intent, "passive", "a copy of an ask its sender withdrew was handed over live")
      assert.include(copy.text, "Withdrawn")
    }))
})
