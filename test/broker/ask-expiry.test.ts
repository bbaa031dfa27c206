/**
 * `ask-expiry-v1`: the broker is the one clock of an ask. When the edge of an
 * ask whose asker was granted the extension closes unanswered at its
 * deadline, the broker writes `ask_expired` to the asker at that time, with
 * no other traffic to prune it; an answered or withdrawn ask gets none, a
 * base asker never sees the frame, and an asker away at the deadline is not
 * owed it (it settles the ask at its own deadline, Ask.ts). Real sockets; the asks announce short timeouts
 * (`ask-timeout-v1`), and every wait is on a frame, never on a sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { assertDelivered } from "../support/assertions.ts"
import { message, register, send, withBroker } from "../support/broker.ts"

const EXPIRY = { features: ["ask-timeout-v1", "ask-expiry-v1"] }
const BASE_TIMEOUT = { features: ["ask-timeout-v1"] }

const ask = (text: string) => message(text, { expectsReply: true })

describe("ask-expiry-v1: the asker is told when its ask's edge expires", () => {
  it.live("an unanswered ask: ask_expired at the deadline with no other send, and a later reply is refused", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const asker = yield* broker.session({ name: "asker", frame: EXPIRY })
      assert.include(asker.registered.features ?? [], "ask-expiry-v1")
      const answerer = yield* broker.session({ name: "answerer" })
      const question = ask("anyone?")
      assertDelivered(yield* send(asker.client, "answerer", question, { askTimeoutMs: 200 }))
      // Nothing else is sent: the broker's own fiber closes the edge and tells the asker.
      const told = yield* asker.client.next("ask_expired")
      assert.strictEqual(told.messageId, question.id)
      const refused = yield* send(answerer.client, "asker", message("too late", { replyTo: question.id }))
      assert.strictEqual(refused.type, "delivery_failed")
      assert.strictEqual(refused.type === "delivery_failed" ? refused.code : undefined, "E_REPLY_TARGET")
    }))

  it.live("an answered ask and a cancelled one get no notice; an unanswered one after them does", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const asker = yield* broker.session({ name: "asker", frame: EXPIRY })
      const answerer = yield* broker.session({ name: "answerer" })
      const answered = ask("answered")
      const cancelled = ask("cancelled")
      const open = ask("open")
      // Real time: a second before the first deadlines, so the reply and the cancel land in time on a loaded
      // machine (at 150 ms the reply once came after its ask's deadline and was refused).
      assertDelivered(yield* send(asker.client, "answerer", answered, { askTimeoutMs: 1000 }))
      assertDelivered(yield* send(asker.client, "answerer", cancelled, { askTimeoutMs: 1000 }))
      assertDelivered(yield* send(answerer.client, "asker", message("yes", { replyTo: answered.id })))
      yield* asker.client.send({ type: "cancel_ask", messageId: cancelled.id })
      assertDelivered(yield* send(asker.client, "answerer", open, { askTimeoutMs: 1500 }))
      // The last deadline: once it is told of `open`, the other two edges are past theirs.
      const told = yield* asker.client.next("ask_expired")
      assert.strictEqual(told.messageId, open.id)
      yield* asker.client.roundTrip
      yield* asker.client.expectNothing("ask_expired")
    }))

  it.live("a base asker (no ask-expiry-v1) gets no new frame when its ask expires", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const base = yield* broker.session({ name: "base", frame: BASE_TIMEOUT })
      assert.notInclude(base.registered.features ?? [], "ask-expiry-v1")
      const witness = yield* broker.session({ name: "witness", frame: EXPIRY })
      const answerer = yield* broker.session({ name: "answerer" })
      const unanswered = ask("base question")
      assertDelivered(yield* send(base.client, "answerer", unanswered, { askTimeoutMs: 150 }))
      const later = ask("witness question")
      assertDelivered(yield* send(witness.client, "answerer", later, { askTimeoutMs: 300 }))
      // The witness's edge closes after the base one: once it is told, the base edge has expired too.
      assert.strictEqual((yield* witness.client.next("ask_expired")).messageId, later.id)
      yield* base.client.roundTrip
      assert.strictEqual(base.client.count("ask_expired"), 0)
      // Its edge did expire: a reply now is refused, as it always was.
      const refused = yield* send(answerer.client, "base", message("late", { replyTo: unanswered.id }))
      assert.strictEqual(refused.type, "delivery_failed")
    }))

  it.live("an asker away at the deadline is not owed the notice: back, with or without the extension, it gets none", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      yield* broker.session({ name: "answerer" })
      const away = yield* broker.session({ name: "away", frame: EXPIRY })
      const base = yield* broker.session({ name: "base-later", frame: EXPIRY })
      const witness = yield* broker.session({ name: "witness", frame: EXPIRY })
      // A second of real time before the deadlines: both askers must be gone by then, or the notice would go
      // to the old connection and the checks below would pass without testing the absence they name.
      assertDelivered(yield* send(away.client, "answerer", ask("first"), { askTimeoutMs: 1000 }))
      assertDelivered(yield* send(base.client, "answerer", ask("second"), { askTimeoutMs: 1000 }))
      yield* away.client.destroy
      yield* base.client.destroy
      const later = ask("witness question")
      assertDelivered(yield* send(witness.client, "answerer", later, { askTimeoutMs: 1200 }))
      assert.strictEqual((yield* witness.client.next("ask_expired")).messageId, later.id)
      // Both edges expired while their askers were away. Not owed: an asker that could not hear the broker
      // settles the ask at its own deadline (docs/protocol.md), and nothing is held for it meanwhile.
      const back = yield* broker.connect("away again")
      yield* register(back, { sessionId: away.id, name: "away", frame: EXPIRY })
      yield* back.roundTrip
      yield* back.expectNothing("ask_expired")
      const baseBack = yield* broker.connect("base again")
      yield* register(baseBack, { sessionId: base.id, name: "base-later", frame: BASE_TIMEOUT })
      yield* baseBack.roundTrip
      yield* baseBack.expectNothing("ask_expired")
    }))
})
