/**
 * Review revbb BB1, the session's side (FAILS on main 515dd690, passes before the merge): a copy of a withdrawn
 * ask that the real client lets pass again (its reply lost: RecentMessages reopens the pair, see
 * zz-review-revbb-BB1-reopened-copy.test.ts) makes the client forget the ask's cancel (RecentControls.received),
 * so a session handing the copy over before the cancel written behind it is read (two reads of the socket)
 * hands a message its sender withdrew over LIVE. The fake session client's `push` forgets a pair's controls as
 * the real client does for a message it passes on. Past the session's own admission window (an hour), as a
 * cancelled copy kept in the mailbox (a day) for this client instance's return (WithdrawnCopies.give).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Queue } from "effect"
import { TestClock } from "effect/testing"
import { C, inboundMessage, settle, withPeers } from "./session/support.ts"

const HOUR = 60 * 60 * 1000

describe("revbb BB1: a copy of a withdrawn ask passed on again by the client", () => {
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
      yield* client.push(inboundMessage(C, "q-1", "delete the branch?", { expectsReply: true }))
      yield* settle
      const copy = yield* Queue.take(host.inbox)
      assert.notStrictEqual(copy.intent, "trigger", "a copy of an ask its sender withdrew was handed over live")
    }))
})
