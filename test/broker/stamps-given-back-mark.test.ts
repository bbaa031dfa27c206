/**
 * Review revch CH2: an ask under the id of one withdrawn earlier is noted as opened after that withdrawal
 * (Asks.noteOpenedAfter), so the withdrawal never counts for it. The note was kept against the ask's `Mail` object,
 * and a copy of it (`{ ...mail }`: given back to the mailbox by MailReturns.requeue, put back by
 * MailDelivery.askAgain, kept or given by WithdrawnCopies) lost it: the new ask's copy, given back before its due time
 * and dropped past it, went silently as withdrawn instead of telling its asker `expired`. The note is now kept against
 * the ask's message, which every copy shares. While the stamps lead the clock they hold still, so the withdrawal and
 * the new ask share one stamp and only the note tells them apart. Non-durable broker on the TestClock; time passes
 * only as modelled: the lead (a send an hour ahead, the clock then set back), the replay window (so the record may be
 * pushed out), and the ask's timeout.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { REPLAY_WINDOW_MS } from "../../src/protocol/constants.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { assertDelivered } from "../support/assertions.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { advance, memoryNetwork } from "../support/memory.ts"

const START = 1_000_000_000
const HOUR = 60 * 60 * 1000
const ASK_TIMEOUT_MS = 60_000

/**
 * Alice asks bob X and withdraws it; later she asks X again (its record pushed out). Bob reads that ask without
 * confirming it and leaves before its due time: its copy goes back to the mailbox. Past the due time a send of
 * alice's sweeps the edges, and the mailbox drops the copy. The receipts alice gets for X.
 */
const givenBackBeforeDue = (lead: number) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(START + lead)
    const net = yield* memoryNetwork()
    yield* net.startBroker({ askTimeout: ASK_TIMEOUT_MS, replayRecords: 2 })
    const alice = yield* net.session({ sessionId: "alice", name: "alice" })
    const bob = yield* net.session({ sessionId: "bob", name: "bob", frame: { features: [RECEIVED_V1] } })
    yield* net.session({ sessionId: "carol", name: "carol" })
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
    yield* bob.client.destroy
    yield* alice.client.next("session_left", (frame) => frame.sessionId === "bob")
    yield* alice.client.roundTrip
    yield* advance(ASK_TIMEOUT_MS + 1)
    assertDelivered(yield* send(alice.client, "carol", message("sweep")))
    yield* alice.client.roundTrip
    return alice.client.received().flatMap((frame) =>
      frame.type === "message_receipt" && frame.receipt.messageId === first.id ? [frame.receipt.status] : []
    )
  })

describe("an ask under the id of one withdrawn earlier, its copy given back before its due time", () => {
  it.effect("the clocks agreeing: dropped past its due time, its asker is told expired", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* givenBackBeforeDue(0), ["expired"])
    }))

  it.effect("the stamps an hour ahead (the withdrawal and the new ask on one stamp): its asker is told expired", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* givenBackBeforeDue(HOUR), ["expired"])
    }))
})
