/**
 * `reply-elsewhere-v1`'s order (review revp P2): on a durable broker a
 * `received-v1` asker's replayed ask has its `delivered` held for the next
 * commit (SendAnswers.answer → StoreJournal.holdAck); the `ask_answered_elsewhere`
 * notice rides that held acknowledgement (HeldAckWithNotice) and goes right
 * behind it, never ahead (docs/protocol.md). The asker was told at its
 * first return's registration already; the resend is on a later connection
 * of the same instance, which is not told again at registration, so the
 * notice is the resend's. Real Unix socket, the default (sqlite) broker.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ASK_TIMEOUT_V1, RECEIVED_V1, REJOIN_V1, REPLY_ELSEWHERE_V1, TAKEOVER_V1 } from "../../src/protocol/features.ts"
import { message, messageFor, send, withBroker } from "../support/broker.ts"

const ASKER = [ASK_TIMEOUT_V1, TAKEOVER_V1, REJOIN_V1, RECEIVED_V1, REPLY_ELSEWHERE_V1]
const TIMEOUT_MS = 60_000

describe("the answered-elsewhere notice's order against the resend's answer", () => {
  it.live("a received-v1 asker on a durable broker reads delivered before ask_answered_elsewhere", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const asker = yield* broker.session({ sessionId: "a", label: "a-1", frame: { features: ASKER, instanceId: "a-1" } })
      const target = yield* broker.session({ sessionId: "t" })
      const question = message("well?", { expectsReply: true })
      const asked = yield* send(asker.client, "t", question, { askTimeoutMs: TIMEOUT_MS })
      assert.strictEqual(asked.type, "delivered")
      yield* messageFor(target.client, question.id)
      const other = yield* broker.session({ sessionId: "a", label: "other" })
      yield* asker.client.next("taken_over")
      yield* asker.client.waitClosed()
      const reply = message("the answer", { replyTo: question.id })
      yield* send(target.client, "a", reply)
      yield* messageFor(other.client, reply.id)
      // Told at this registration already (AnsweredAsks.elsewhereOnReturn): its client drops, and a-1 registers
      // again — not told again at that registration (once per ask and instance), so its resend's answer is.
      const first = yield* broker.session({ sessionId: "a", label: "a-1 back", frame: { features: ASKER, instanceId: "a-1" } })
      yield* first.client.next("ask_answered_elsewhere", (frame) => frame.messageId === question.id)
      yield* first.client.destroy
      const back = yield* broker.session({ sessionId: "a", label: "a-1 again", frame: { features: ASKER, instanceId: "a-1" } })
      // A plain message to t just before the resend: its change is not stored yet when the resend is answered.
      const plain = message("meanwhile")
      yield* back.client.send({ type: "send", to: "t", message: plain })
      yield* back.client.send({ type: "send", to: "t", message: question, askTimeoutMs: TIMEOUT_MS })
      yield* back.client.next("delivered", (frame) => frame.messageId === question.id)
      yield* back.client.roundTrip
      const order = back.client.received().flatMap((frame) =>
        frame.type === "delivered" && frame.messageId === question.id
          ? ["delivered"]
          : frame.type === "ask_answered_elsewhere" && frame.messageId === question.id
          ? ["elsewhere"]
          : []
      )
      assert.deepStrictEqual(order, ["delivered", "elsewhere"], "the notice did not come right behind the resend's answer")
    }))
})
