/**
 * Reviews revda DA1, DA2 and revdh DH1, DH2, DH4: a send under a kept id whose fingerprint is not its record's is
 * refused `E_MESSAGE_ID_REUSE` (P46). To a sender granted `reuse-reason-v1` the reason says why (broker/SendReplays.ts
 * `reuseReason`): other authored content under the id — P46's own text — or the same content addressed to another
 * session than the record's, with what the record says became of it: delivered to the session the target resolves
 * to now (P49's other holder took it), delivered to another, queued with no delivery confirmed, or settled otherwise
 * (here superseded). A sender not granted it gets P46's text for every mismatch, as P45 fixes it. A client that lost
 * the first write's answer reads these apart (afterLoss.ts). The real broker core in memory under TestClock, or a
 * hand-driven one (controlWorld); nothing waits on the clock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Reason } from "../../src/protocol/delivery.ts"
import { REUSE_REASON_V1 } from "../../src/protocol/features.ts"
import { assertDelivered, assertFailed } from "../support/assertions.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { controlWorld, custodyFeatures } from "../support/controlWorld.ts"
import { withMemoryBroker } from "../support/memory.ts"

/** The register fields of a sender that asks for `reuse-reason-v1`. */
const GRANTED = { features: [REUSE_REASON_V1] }

describe("E_MESSAGE_ID_REUSE says why the record refuses the send (reuse-reason-v1)", () => {
  it.effect("other content under a delivered message's id gets P46's text; the same content to another session is 'delivered to another session'", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const a = yield* broker.session({ sessionId: "a", frame: GRANTED })
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

  it.effect("the same content to another session, its record queued for a departed session, is 'queued: not confirmed delivered'", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const a = yield* broker.session({ sessionId: "a", frame: GRANTED })
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
      const a = yield* broker.session({ sessionId: "a", frame: GRANTED })
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

  // Review revdh DH1: the record names P49's other holder as the receiver; the target resolves to it now.
  it.effect("a re-send to the name whose new holder took the queued mail is told it was delivered to that very session", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const a = yield* broker.session({ sessionId: "a", frame: GRANTED })
      const first = yield* broker.session({ sessionId: "bob-1", name: "bob", cwd: "/a" })
      yield* first.client.destroy
      yield* a.client.next("session_left", (frame) => frame.sessionId === "bob-1")
      const sent = message("for bob")
      assertDelivered(yield* send(a.client, "bob", sent), "queued")
      const second = yield* broker.session({ sessionId: "bob-2", name: "bob", cwd: "/a" })
      const got = yield* messageFor(second.client, sent.id)
      assert.strictEqual(got.message.id, sent.id, "setup: bob-2 did not take the queued mail")
      assertFailed(yield* send(a.client, "bob", sent), "E_MESSAGE_ID_REUSE", Reason.messageIdReuseDeliveredHere)
      yield* second.client.roundTrip
      yield* second.client.expectNothing("message")
    }))

  // Review revdh DH4: MailReturns rewrites the record to QUEUED after an unconfirmed write to b-1 (custody).
  it.effect("a record queued again after its copy was written to a client that dropped unconfirmed is not called 'not delivered'", () =>
    Effect.gen(function*() {
      const w = yield* controlWorld(custodyFeatures, {}, { now: 1_000_000 }, { name: "B", cwd: "/tmp" }, [REUSE_REASON_V1])
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "B", message: m0 }])
      assert.deepStrictEqual(w.messagesOf(w.b1), [m0.id], "setup: b-1 was not written m0")
      w.closeAbandoned(w.b1)
      w.registerOther("x", { name: "B", cwd: "/elsewhere" })
      w.batch(w.d, [{ type: "send", to: "B", message: m0 }])
      assert.deepStrictEqual(w.answersOf(m0.id), ["delivered", `failed: ${Reason.messageIdReuseQueued}`])
      assert.include(Reason.messageIdReuseQueued, "not confirmed delivered")
      assert.include(Reason.messageIdReuseQueued, "written to a client of that session that dropped before confirming")
      assert.notInclude(Reason.messageIdReuseQueued, "not delivered yet")
    }))
})

describe("E_MESSAGE_ID_REUSE to a sender not granted reuse-reason-v1 (review revdh DH2)", () => {
  it.effect("is P46's fixed text also when the same content goes to another target under a kept id", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const a = yield* broker.session({ sessionId: "a" })
      const b = yield* broker.session({ sessionId: "b" })
      yield* broker.session({ sessionId: "c" })
      const sent = message("original")
      assertDelivered(yield* send(a.client, "b", sent))
      yield* messageFor(b.client, sent.id)
      const ack = yield* send(a.client, "c", sent)
      assert.strictEqual(ack.type, "delivery_failed")
      assert.deepInclude(ack, { code: "E_MESSAGE_ID_REUSE", reason: "Message id was reused with different authored content" })
    }))
})
