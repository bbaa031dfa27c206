/**
 * Review revan (of merge fixal 5af570c9), AN1 through the session: B
 * withdraws an ask whose answer the broker staged (a `replace` reply); the
 * broker later replaces that staged answer (`superseded` receipt) and the
 * session lists B's withdrawn ask as pending again. FAILS on main.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { B, inboundMessage, settle, withPeers } from "./session/support.ts"

describe("review revan AN1 (session)", () => {
  it.effect("a withdrawn ask whose staged answer is replaced later is not pending again", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers({ askTimeoutMs: 60_000 })
      client.onSend = (request) =>
        Effect.succeed({ messageId: request.message.id, delivery: "staged", threadId: request.threadId ?? "", deliverAt: 1500 })
      yield* client.push(inboundMessage(B, "q-b", "B asks", { expectsReply: true }))
      yield* settle
      const replied = yield* Effect.orDie(session.reply({ replyTo: "q-b", message: "8080" }))
      const replyId = replied.messageId
      yield* client.control({ _tag: "Control", from: B, control: { messageId: "q-b", action: "cancel", timestamp: 0 } })
      yield* settle
      yield* client.control({ _tag: "Receipt", from: B, receipt: { messageId: replyId, status: "superseded", timestamp: 0, detail: "Replaced" } })
      yield* settle
      const pending = yield* Effect.orDie(session.pending)
      assert.deepStrictEqual(pending.asks.map((ask) => ask.message.id), [], "B withdrew q-b: it is owed no answer")
    }))
})
