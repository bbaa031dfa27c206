/**
 * Review reve (merge "fixst", X1): the items a drainer offers ahead of a
 * head that waits (ParkedDrain.offerOwnAhead) pass every answer of the
 * connection's own but those that change which session it holds or end it
 * (`registered`, `registration_failed`, `taken_over`, `error`:
 * OutboundItems.changesSession). A request answered by some other frame —
 * `topic_unsubscribed` here, as a results, questions, stats or supervisor
 * answer would be — among the session's sends to one that does not read
 * stays in place, and what is for the session itself behind it still goes
 * ahead of those sends: its `list` answers (the liveness probe), and a reply
 * forced there with the settling answer behind it. Before, the look ahead
 * stopped at any answer that was not a send's ack, and all of it waited for
 * the session that did not read.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ASK_EXPIRY_V1, ASK_TIMEOUT_V1, LIST_PAGE_V1, TOPICS_V1 } from "../../src/protocol/features.ts"
import { encodeFrames } from "../../src/protocol/index.ts"
import { message, registerFrame, send } from "../support/broker.ts"
import { patientClock, withMemoryBroker } from "../support/memory.ts"

/** Outboxes of two frames, links of four: a session that does not read holds six frames, then its senders wait. */
const small = { outboxCapacity: 2, linkCapacity: 4 } as const

/** `count` sends to `to`, as frame texts. */
const sendsTo = (to: string, count: number, text: string) =>
  Array.from({ length: count }, (_, i) => JSON.stringify({ type: "send", to, message: message(`${text} ${i}`) }))

/** A request the broker answers with a frame that is neither a send's ack nor a change of session. */
const unsubscribe = JSON.stringify({ type: "topic_unsubscribe", requestId: "t1", topic: "news" })

const EXPIRY = [ASK_TIMEOUT_V1, ASK_EXPIRY_V1, LIST_PAGE_V1, TOPICS_V1]

describe("own items ahead of sends to a session that does not read pass a topic answer parked among those sends", () => {
  it.effect("both list answers (the second list held behind the first's parked answer) reach the session while the sends still wait", () =>
    patientClock(Effect.gen(function*() {
      const broker = yield* withMemoryBroker(small)
      const stuck = yield* broker.session({ sessionId: "stuck" })
      yield* stuck.client.pause
      const bystander = yield* broker.session({ sessionId: "bystander" })
      const asker = yield* broker.session({ sessionId: "asker", frame: { features: [TOPICS_V1] } })
      // One batch: sends to `stuck` (parked), then a request answered `topic_unsubscribed` (parked behind them).
      yield* asker.client.sendRaw(encodeFrames([...sendsTo("stuck", 12, "m"), unsubscribe]))
      yield* asker.client.pause
      for (const text of sendsTo("asker", 10, "mail")) yield* bystander.client.sendText(text)
      // Its first list's answer meets its full outbox: parked behind the sends and the topic answer.
      yield* asker.client.send({ type: "list", requestId: "probe", limit: 1 })
      // The next liveness probe comes while that answer is parked: held.
      yield* asker.client.send({ type: "list", requestId: "probe2", limit: 1 })
      yield* asker.client.resume
      yield* asker.client.next("sessions", (frame) => frame.requestId === "probe")
      yield* asker.client.next("sessions", (frame) => frame.requestId === "probe2")
      assert.isBelow(asker.client.count("delivered"), 12, "the sends to `stuck` still wait for it")
      assert.strictEqual(asker.client.count("topic_unsubscribed"), 0, "the topic answer stays behind the sends")
    })))

  it.effect("a reply forced behind them reaches the asker, and the settling answer follows it, while the topic answer stays behind the sends", () =>
    patientClock(Effect.gen(function*() {
      const broker = yield* withMemoryBroker(small)
      const stuck = yield* broker.session({ sessionId: "stuck" })
      yield* stuck.client.pause
      // Another's mail fills `stuck`'s outbox and link: any later send to it waits.
      const filler = yield* broker.session({ sessionId: "filler" })
      yield* filler.client.sendRaw(encodeFrames(sendsTo("stuck", 10, "fill")))
      const answerer = yield* broker.session({ sessionId: "answerer" })
      const away = yield* broker.session({ sessionId: "asker", frame: { features: EXPIRY } })
      const question = message("well?", { expectsReply: true })
      yield* send(away.client, "answerer", question, { askTimeoutMs: 600_000 })
      yield* answerer.client.next("message", (frame) => frame.message.id === question.id)
      yield* away.client.destroy
      // Mail for the absent asker waits in its mailbox.
      for (const text of sendsTo("asker", 20, "mail")) yield* answerer.client.sendText(text)
      yield* answerer.client.roundTrip
      // Back, not reading yet: its flush is parked, its sends to `stuck` and the topic answer behind it — one
      // batch, of the four frames a link of four carries at once.
      const asker = yield* broker.connect("asker")
      yield* asker.pause
      yield* asker.sendRaw(encodeFrames([
        JSON.stringify(registerFrame({ sessionId: "asker", frame: { features: EXPIRY } })),
        ...sendsTo("stuck", 2, "m"),
        unsubscribe
      ]))
      // The reply waits behind the answerer's mail in that flush; the answerer's close forces it to the list's end.
      yield* answerer.client.send({ type: "send", to: "asker", message: message("the answer", { replyTo: question.id }) })
      yield* answerer.client.destroy
      yield* asker.send({ type: "list", requestId: "settle", limit: 1, settle: true })
      yield* asker.resume
      const reply = yield* asker.next("message", (frame) => frame.message.replyTo === question.id)
      const settled = yield* asker.next("sessions", (frame) => frame.requestId === "settle")
      const order = asker.received().filter((frame) => frame === reply || frame === settled)
      assert.deepStrictEqual(order.map((frame) => frame.type), ["message", "sessions"])
      assert.strictEqual(asker.count("delivered"), 0, "the sends to `stuck` still wait for it")
      assert.strictEqual(asker.count("topic_unsubscribed"), 0, "the topic answer stays behind the sends")
    })))
})
