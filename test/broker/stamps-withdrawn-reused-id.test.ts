/**
 * Review revcb item 2: while the stamps lead the clock they hold still, so a withdrawal of an ask and a later ask under
 * the same id (its replay record pushed out by the `replayRecords` bound) got the same stamp, and "withdrawn within
 * [receipt, deadline)" (AskWithdrawals.withdrawnWithin, `from <= at`) counted the old withdrawal for the new ask: the new ask's
 * copy, given back past its due time, went silently instead of telling its asker `expired`. A withdrawal remembered as
 * an ask opened under its key counted for it. A withdrawal now names the ask it withdrew (AskWithdrawals.askOf, review revdc),
 * and never counts for another.
 * The first three cases also check that the earlier ask's copy, given back with it, still goes silently (one receipt).
 * The last two cases guard the fix from missing a withdrawal of the new ask itself (a rule read by `<` would): open,
 * and after its reply closed its edge (`withdrawAnswered` no longer takes the earlier ask's withdrawal, within the
 * replay window, for this one's). (Was the reviewer's probe test/zz-review-cb-4.test.ts; the last two are new.)
 * The first three run in the shared world test/support/asksUnderOneId.ts. The mailbox's retention (1 s) passes as
 * modelled too, so that the reply is lost. Non-durable broker on the TestClock; time passes only as modelled: the
 * lead (a send an hour ahead, the clock then set back), the replay window (so the record may be pushed out), and the
 * ask's timeout.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { REPLAY_WINDOW_MS } from "../../src/protocol/constants.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { assertDelivered } from "../support/assertions.ts"
import { asksUnderOneId } from "../support/asksUnderOneId.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { advance, memoryNetwork } from "../support/memory.ts"

const START = 1_000_000_000
const HOUR = 60 * 60 * 1000
const ASK_TIMEOUT_MS = 60_000

/**
 * Alice asks bob X, withdraws it, later asks X again (its record pushed out) and, with `withdrawAgain`, withdraws
 * that one too; bob leaves past the new ask's due time. The receipts alice gets for X.
 */
const reusedAfterWithdrawal = (lead: number, withdrawAgain = false) =>
  Effect.map(
    asksUnderOneId({ lead, firstWithdrawn: true, later: [{ text: "second", withdrawn: withdrawAgain }], lastDue: "beforeLeaving" }),
    (outcome) => outcome.receipts
  )

/**
 * Alice asks bob X and withdraws it; an hour's lead makes later stamps hold still. She asks X again (its record
 * pushed out), bob answers, she reads the reply without confirming it and withdraws the ask; she leaves and the reply
 * outlives the mailbox's retention (lost). The broker's answer to bob's second reply.
 */
const answeredReusedThenWithdrawn = Effect.gen(function*() {
  yield* TestClock.setTime(START + HOUR)
  const net = yield* memoryNetwork()
  yield* net.startBroker({ askTimeout: ASK_TIMEOUT_MS, replayRecords: 2, mailboxRetention: "1 second" })
  const alice = yield* net.session({ sessionId: "alice", name: "alice", frame: { features: [RECEIVED_V1] } })
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
  assertDelivered(yield* send(alice.client, "bob", again))
  yield* bob.client.next("message", (f) => f.message.id === first.id && f.message.content.text === "second")
  const reply = message("yes", { replyTo: first.id })
  assertDelivered(yield* send(bob.client, "alice", reply))
  yield* messageFor(alice.client, reply.id) // read, never confirmed
  yield* alice.client.send({ type: "cancel_ask", messageId: first.id })
  yield* alice.client.roundTrip
  yield* alice.client.destroy
  yield* bob.client.next("session_left", (frame) => frame.sessionId === "alice")
  yield* advance("2 seconds")
  yield* net.session({ sessionId: "someone-else" }) // a registration prunes the mailbox: the reply is lost
  yield* bob.client.next("message_receipt", (f) => f.receipt.messageId === reply.id && f.receipt.status === "expired")
  return (yield* send(bob.client, "alice", message("yes, again", { replyTo: first.id }))).type
})

describe("an ask under the id of one withdrawn earlier, given back past its due time", () => {
  it.effect("the clocks agreeing: its asker is told expired", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* reusedAfterWithdrawal(0), ["expired"])
    }))

  it.effect("the stamps an hour ahead of the clock (the withdrawal and the new ask on one stamp): its asker is told expired", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* reusedAfterWithdrawal(HOUR), ["expired"])
    }))

  it.effect("the stamps an hour ahead, the new ask withdrawn too: its copy goes silently", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* reusedAfterWithdrawal(HOUR, true), [])
    }))

  it.effect("the stamps an hour ahead, the new ask answered, withdrawn, its reply lost: a second reply is refused", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* answeredReusedThenWithdrawn, "delivery_failed")
    }))
})
