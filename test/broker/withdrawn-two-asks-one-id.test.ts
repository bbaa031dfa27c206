/**
 * One withdrawal remembered per key (Asks.withdrawn): an ask under the id of one its asker withdrew earlier, withdrawn
 * in turn, replaced the earlier ask's withdrawal. A copy of the earlier ask its recipient still held (read, never
 * confirmed) and gave back past its deadline was then judged by the later withdrawal alone — made after that
 * deadline, so not within its life — and its asker was told `expired` about an ask it had withdrawn (and which it
 * would read as about the later ask under the id). The later withdrawal now keeps the one it replaced when an ask
 * opened after that one (Asks.withdraw, a few per key). Non-durable broker on the TestClock; time passes only as
 * modelled: the replay window (so the record may be pushed out by the `replayRecords` bound).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { REPLAY_WINDOW_MS } from "../../src/protocol/constants.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { assertDelivered } from "../support/assertions.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { advance, memoryNetwork } from "../support/memory.ts"

const ASK_TIMEOUT_MS = 60_000

/**
 * Alice asks bob X and withdraws it; past its deadline (the replay window) she asks X again (its record pushed out)
 * and, with `withdrawSecond`, withdraws that too. Bob read both and confirmed neither; he leaves. The receipts alice
 * gets for X.
 */
const twoAsksOneId = (withdrawSecond: boolean) =>
  Effect.gen(function*() {
    const net = yield* memoryNetwork()
    yield* net.startBroker({ askTimeout: ASK_TIMEOUT_MS, replayRecords: 2 })
    const alice = yield* net.session({ sessionId: "alice", name: "alice" })
    const bob = yield* net.session({ sessionId: "bob", name: "bob", frame: { features: [RECEIVED_V1] } })
    const first = message("first", { expectsReply: true })
    assertDelivered(yield* send(alice.client, "bob", first))
    yield* messageFor(bob.client, first.id)
    yield* alice.client.send({ type: "cancel_ask", messageId: first.id })
    yield* alice.client.roundTrip
    yield* advance(REPLAY_WINDOW_MS + 1)
    for (const text of ["y1", "y2", "y3"]) assertDelivered(yield* send(alice.client, "bob", message(text)))
    const again = { ...message("second", { expectsReply: true }), id: first.id }
    const verdict = yield* send(alice.client, "bob", again)
    assert.strictEqual(verdict.type, "delivered", "setup: the second ask under the id was not taken as new")
    yield* bob.client.next("message", (f) => f.message.id === first.id && f.message.content.text === "second")
    if (withdrawSecond) {
      yield* alice.client.send({ type: "cancel_ask", messageId: first.id })
      yield* alice.client.roundTrip
    }
    yield* bob.client.destroy
    yield* alice.client.next("session_left", (frame) => frame.sessionId === "bob")
    yield* alice.client.roundTrip
    return alice.client.received().flatMap((frame) =>
      frame.type === "message_receipt" && frame.receipt.messageId === first.id ? [frame.receipt.status] : []
    )
  })

describe("two asks under one id, each withdrawn, the first's copy given back past its deadline", () => {
  it.effect("only the first withdrawn: both copies go silently", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* twoAsksOneId(false), [])
    }))

  it.effect("the second withdrawn too, after the first's deadline: both copies go silently", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* twoAsksOneId(true), [])
    }))
})
