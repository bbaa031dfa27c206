/**
 * Review revda DA1, DA2: a send under a kept id whose fingerprint is not its record's is refused
 * `E_MESSAGE_ID_REUSE` (P46), and its reason now says why (broker/Send.ts `reuseReason`): other authored content
 * under the id — P46's own text — or the same content addressed to another session than the record's, with what the
 * record says became of it: delivered, queued and not delivered, or settled otherwise (here superseded). A client
 * that lost the first write's answer reads these apart (afterLoss.ts). The real broker core in memory under
 * TestClock; nothing waits on the clock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Reason } from "../../src/protocol/delivery.ts"
import { assertDelivered, assertFailed } from "../support/assertions.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { withMemoryBroker } from "../support/memory.ts"

describe("E_MESSAGE_ID_REUSE says why the record refuses the send", () => {
  it.effect("other content under a delivered message's id gets P46's text; the same content to another session is 'delivered to another session'", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const a = yield* broker.session({ sessionId: "a" })
      const b = yield* broker.session({ sessionId: "b" })
      const c = yield* broker.session({ sessionId: "c" })
      const sent = message("original")
      assertDelivered(yield* send(a.client, "b", sent))
      yield* messageFor(b.client, sent.id)
      assertFailed(yield* send(a.client, "b", { ...sent, content: { text: "changed" } }), "E_MESSAGE_ID_REUSE", Reason.messageIdReuse)
      assertFailed(yield* send(a.client, "c", { ...sent, content: { text: "changed" } }), "E_MESSAGE_ID_REUSE", Reason.messageIdReuse)
      assertFailed(yield* send(a.client, "c", sent), "E_MESSAGE_ID_REUSE", Reason.messageIdReuseDelivered)
      yield* c.client.roundTrip
      yield* c.client.expectNothing("message")
    }))

  it.effect("the same content to another session, its record queued for a departed session, is 'queued, not delivered yet'", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const a = yield* broker.session({ sessionId: "a" })
      const b = yield* broker.session({ sessionId: "b" })
      const c = yield* broker.session({ sessionId: "c" })
      yield* b.client.destroy
      yield* a.client.next("session_left", (frame) => frame.sessionId === "b")
      const sent = message("for the departed b")
      assertDelivered(yield* send(a.client, "b", sent), "queued")
      assertFailed(yield* send(a.client, "c", sent), "E_MESSAGE_ID_REUSE", Reason.messageIdReuseQueued)
      yield* c.client.roundTrip
      yield* c.client.expectNothing("message")
    }))

  it.effect("the same content to another session, its record superseded, quotes that record", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const a = yield* broker.session({ sessionId: "a" })
      const b = yield* broker.session({ sessionId: "b" })
      const c = yield* broker.session({ sessionId: "c" })
      const sent = message("to be superseded")
      assertDelivered(yield* send(a.client, "b", sent))
      yield* messageFor(b.client, sent.id)
      const newer = message("newer", { supersedes: sent.id })
      assertDelivered(yield* send(a.client, "b", newer))
      const ack = yield* send(a.client, "c", sent)
      assertFailed(ack, "E_MESSAGE_ID_REUSE", Reason.messageIdReuseSettled(Reason.superseded(newer.id)))
      assert.include(ack.type === "delivery_failed" ? ack.reason : "", `«Superseded by ${newer.id}»`)
      yield* c.client.roundTrip
      yield* c.client.expectNothing("message")
    }))
})
