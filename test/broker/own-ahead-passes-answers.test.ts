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
import { patientClock } from "../support/memory.ts"
import { listParkedBehind, replyForcedBehind, sendsTo } from "../support/ownAhead.ts"

/** A request the broker answers with a frame that is neither a send's ack nor a change of session. */
const unsubscribe = JSON.stringify({ type: "topic_unsubscribe", requestId: "t1", topic: "news" })

const EXPIRY = [ASK_TIMEOUT_V1, ASK_EXPIRY_V1, LIST_PAGE_V1, TOPICS_V1]

describe("own items ahead of sends to a session that does not read pass a topic answer parked among those sends", () => {
  it.effect("both list answers (the second list held behind the first's parked answer) reach the session while the sends still wait", () =>
    patientClock(Effect.gen(function*() {
      // One batch: sends to `stuck` (parked), then a request answered `topic_unsubscribed` (parked behind them);
      // its first list's answer meets its full outbox: parked behind both.
      const asker = yield* listParkedBehind([...sendsTo("stuck", 12, "m"), unsubscribe], [TOPICS_V1])
      // The next liveness probe comes while that answer is parked: held.
      yield* asker.send({ type: "list", requestId: "probe2", limit: 1 })
      yield* asker.resume
      yield* asker.next("sessions", (frame) => frame.requestId === "probe")
      yield* asker.next("sessions", (frame) => frame.requestId === "probe2")
      assert.isBelow(asker.count("delivered"), 12, "the sends to `stuck` still wait for it")
      assert.strictEqual(asker.count("topic_unsubscribed"), 0, "the topic answer stays behind the sends")
    })))

  it.effect("a reply forced behind them reaches the asker, and the settling answer follows it, while the topic answer stays behind the sends", () =>
    patientClock(Effect.gen(function*() {
      // Its sends to `stuck` and the topic request in its register's batch, of the four frames a link of four
      // carries at once.
      const { asker, question } = yield* replyForcedBehind(EXPIRY, [...sendsTo("stuck", 2, "m"), unsubscribe])
      const reply = yield* asker.next("message", (frame) => frame.message.replyTo === question.id)
      const settled = yield* asker.next("sessions", (frame) => frame.requestId === "settle")
      const order = asker.received().filter((frame) => frame === reply || frame === settled)
      assert.deepStrictEqual(order.map((frame) => frame.type), ["message", "sessions"])
      assert.strictEqual(asker.count("delivered"), 0, "the sends to `stuck` still wait for it")
      assert.strictEqual(asker.count("topic_unsubscribed"), 0, "the topic answer stays behind the sends")
    })))
})
