/**
 * Review revcb, probe 4 (pre-existing, not from stampq; LOW–MEDIUM): while the stamps lead the clock they hold still,
 * so a withdrawal of an ask and a later ask under the same id (its replay record pushed out by the `replayRecords`
 * bound) get the same stamp, and "withdrawn within [receipt, deadline)" (Asks.withdrawnWithin, `from <= at`) counts
 * the old withdrawal for the new ask: the new ask's copy, given back past its due time, goes silently instead of
 * telling its asker `expired`. The stampq merge's `withdrawNow` (stamped no lower than the receipt) makes the same
 * overlap possible after a capped restart for any later ask whose life spans the old receipt. Non-durable broker on
 * the TestClock; time passes only as modelled: the lead (a send an hour ahead, the clock then set back), the replay
 * window (so the record may be pushed out), and the ask's timeout.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { REPLAY_WINDOW_MS } from "../src/protocol/constants.ts"
import { RECEIVED_V1 } from "../src/protocol/features.ts"
import { assertDelivered } from "./support/assertions.ts"
import { message, messageFor, send } from "./support/broker.ts"
import { advance, memoryNetwork } from "./support/memory.ts"

const START = 1_000_000_000
const HOUR = 60 * 60 * 1000
const ASK_TIMEOUT_MS = 60_000

/** Alice asks bob X, withdraws it, later asks X again (its record pushed out); bob leaves past the new ask's due time. */
const reusedAfterWithdrawal = (lead: number) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(START + lead)
    const net = yield* memoryNetwork()
    yield* net.startBroker({ askTimeout: ASK_TIMEOUT_MS, replayRecords: 2 })
    const alice = yield* net.session({ sessionId: "alice", name: "alice" })
    const bob = yield* net.session({ sessionId: "bob", name: "bob", frame: { features: [RECEIVED_V1] } })
    assertDelivered(yield* send(alice.client, "bob", message("m0")))
    yield* TestClock.setTime(START)
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
    yield* advance(ASK_TIMEOUT_MS + 1)
    yield* bob.client.destroy
    yield* alice.client.next("session_left", (frame) => frame.sessionId === "bob")
    yield* alice.client.roundTrip
    return alice.client.received().flatMap((frame) =>
      frame.type === "message_receipt" && frame.receipt.messageId === first.id ? [frame.receipt.status] : []
    )
  })

describe("revcb probe 4: an ask under the id of one withdrawn earlier, given back past its due time", () => {
  it.effect("the clocks agreeing: its asker is told expired", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* reusedAfterWithdrawal(0), ["expired"])
    }))

  it.effect("the stamps an hour ahead of the clock: its asker is told expired", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* reusedAfterWithdrawal(HOUR), ["expired"])
    }))
})
