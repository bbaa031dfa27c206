/**
 * A reply follows the session, not the asking client instance (sim seed
 * 16843 of `--settle-hold --delivery`). Instance a-1 of session `a` asks
 * `t`; another client (a base client, no extensions: the broker's write is
 * its delivery) takes `a` over and reads `t`'s reply for good. Then the
 * asker's client registers `a` again — as a new instance, or as a-1
 * rejoining — and sends its ask again with the same message id, as a client
 * does with a send it has no answer for. Over a real Unix socket.
 *
 * This file pins what the broker does TODAY: the resent ask is a replay
 * (P46), answered plain `delivered` from its record, and nothing more comes —
 * the asker's client would wait out its timeout though the broker knows the
 * ask was answered. The names say "today"; a fix changes them.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ASK_TIMEOUT_V1, REJOIN_V1, TAKEOVER_V1 } from "../../src/protocol/features.ts"
import { ackFor, message, messageFor, send, withBroker } from "../support/broker.ts"

const ASKER_FEATURES = [ASK_TIMEOUT_V1, TAKEOVER_V1, REJOIN_V1]
const TIMEOUT_MS = 60_000

/**
 * a-1 asks `t` (acknowledged); a base client takes `a` over; `t` replies and
 * the base client reads the reply. Then the asker registers `a` again as
 * `returningAs` and sends the ask again, same id. Returns the answer to the
 * resend and the asker's frames after a round trip behind it.
 */
const askAnsweredElsewhere = (returningAs: string) =>
  Effect.gen(function*() {
    const broker = yield* withBroker()
    const asker = yield* broker.session({ sessionId: "a", label: "a-1", frame: { features: ASKER_FEATURES, instanceId: "a-1" } })
    const target = yield* broker.session({ sessionId: "t" })
    const question = message("well?", { expectsReply: true })
    const asked = yield* send(asker.client, "t", question, { askTimeoutMs: TIMEOUT_MS })
    assert.strictEqual(asked.type, "delivered", "the ask was not delivered: the test sets up nothing")
    yield* messageFor(target.client, question.id)

    // Another client (no extensions) takes the session over; the asker's connection is told and ended.
    const other = yield* broker.session({ sessionId: "a", label: "other" })
    yield* asker.client.next("taken_over")
    yield* asker.client.waitClosed()

    // t answers; the session's holder — the other client — reads the reply (its read is the delivery).
    const reply = message("the answer", { replyTo: question.id })
    const replied = yield* send(target.client, "a", reply)
    assert.strictEqual(replied.type, "delivered", "the reply was not accepted: the test sets up nothing")
    yield* messageFor(other.client, reply.id)

    // The asker's client registers again and sends its ask again (same id): a replay.
    const back = yield* broker.session({ sessionId: "a", label: returningAs, frame: { features: ASKER_FEATURES, instanceId: returningAs } })
    yield* back.client.send({ type: "send", to: "t", message: question, askTimeoutMs: TIMEOUT_MS })
    const resent = yield* ackFor(back.client, question.id)
    // A round trip behind the resend: anything the broker wrote for it has been read by now.
    yield* back.client.roundTrip
    const repliesSeen = back.client.received().flatMap((frame) =>
      frame.type === "message" && frame.message.replyTo === question.id ? [frame.message.id] : []
    )
    return { resent, repliesSeen, replyId: reply.id }
  })

describe("an ask whose reply another client of the asker's session read for good (sim seed 16843)", () => {
  it.live("today: a new instance taking the session back and resending the ask gets plain delivered and no reply", () =>
    Effect.gen(function*() {
      const { repliesSeen, resent } = yield* askAnsweredElsewhere("a-3")
      assert.strictEqual(resent.type, "delivered")
      assert.deepStrictEqual(repliesSeen, [], "the returning asker was given the reply")
    }))

  it.live("today: the asking instance itself (same instanceId) taking the session back and resending gets plain delivered and no reply", () =>
    Effect.gen(function*() {
      const { repliesSeen, resent } = yield* askAnsweredElsewhere("a-1")
      assert.strictEqual(resent.type, "delivered")
      assert.deepStrictEqual(repliesSeen, [], "the returning asker was given the reply")
    }))
})
