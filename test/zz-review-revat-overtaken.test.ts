/**
 * Review revat probe AT3 (merge turnc, cb0aa372): a cancel read before the
 * ask it names (the controls are a stream of their own) is applied to the ask
 * only in `prepare`, when the hand-off reaches it. Queued behind a message the
 * host refuses, the withdrawn ask is pending meanwhile, and `reply` with `to`
 * its asker answers it: a reply sent to an ask its asker withdrew.
 *
 * FAILS on main at cb0aa372.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { AskNoLongerOpen } from "../src/session/errors.ts"
import { B, C, inboundMessage, settle, withPeers } from "./session/support.ts"

describe("review revat: a cancel that overtook its ask", () => {
  it.effect("AT3: the ask, queued behind a refused message, is not pending and a reply to its asker is refused", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers()
      host.failDeliveries = 1_000
      // The host refuses C's earlier message (busy, not ready): the hand-off retries it, and what follows waits.
      yield* client.push(inboundMessage(C, "m-0", "fyi"))
      yield* settle
      // B's cancel is read before B's ask (the ask was held back on the message stream).
      yield* client.control({ _tag: "Control", from: B, control: { messageId: "q-1", action: "cancel", timestamp: 0 } })
      yield* settle
      yield* client.push(inboundMessage(B, "q-1", "delete the branch?", { expectsReply: true }))
      yield* settle
      assert.deepStrictEqual((yield* Effect.orDie(session.pending)).asks.map((ask) => ask.message.id), [], "B withdrew q-1")
      const refused = yield* Effect.flip(session.reply({ to: "B", message: "yes, deleting it" }))
      assert.instanceOf(refused, AskNoLongerOpen)
      assert.deepStrictEqual(client.sends, [], "nothing is sent to B")
    }))
})
