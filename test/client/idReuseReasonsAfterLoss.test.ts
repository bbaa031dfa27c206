/**
 * Reviews revda, revdh: after a loss, an `E_MESSAGE_ID_REUSE` is read by its reason, which the broker now gives by what its
 * record under the id says (broker/SendReplays.ts `reuseReason`): other content under the id is the caller's own reuse
 * (P46's text, passed on as given, DA1); the same content, its record for the session `to` named then, queued there
 * and not delivered, is the loss marked `firstWriteQueued`, never "most likely reached that earlier session" (DA2).
 * And the loss carrying the record's expiry no longer calls it "not what became of the first attempt" (DA3).
 * Review revdh: P46's text is the caller's reuse only from a connection granted `reuse-reason-v1` (DH3; without it,
 * the loss); a record delivered to the session `to` resolves to now is the loss marked `firstWriteDeliveredHere`,
 * with no advice to send again (DH1), which the session reads `DeliveredBeforeLoss`, not "may or may not have been
 * delivered" (task here); the queued record's texts claim no "not delivered" (DH4).
 *
 * The real broker core in memory (durable for DA2, queuedForDeparted.ts: its commit held by gatedStore so the answer
 * to the send waits while alpha's connection is destroyed) under TestClock; the clock moves only to the client's
 * reconnect (100 ms), a modelled outage, not a barrier. Probes test/zz-review-da-1/2/3 (branch revda) and zz-review-dh-3 (branch revdh),
 * rewritten for the new reasons; the pure readings are plain synchronous tests.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber } from "effect"
import { answerAfterLoss, endedAfterLoss } from "../../src/client/afterLoss.ts"
import { ConnectionLost, deliveryError, MessageIdReuse } from "../../src/client/errors.ts"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { notDelivered } from "../../src/session/Sending.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message, messageFor } from "../support/broker.ts"
import { advance, settle, withMemoryBroker } from "../support/memory.ts"
import { queuedForDeparted } from "./queuedForDeparted.ts"
import { makeMemoryClient, memoryClientOptions } from "./support.ts"

/** What the send `fiber` (an `Effect.exit` of it) ended as: its failure, or undefined (still waiting, or sent). */
const failureOf = <A, E>(fiber: Fiber.Fiber<Exit.Exit<A, E>>): unknown => {
  const outcome = fiber.pollUnsafe()
  const exit = outcome !== undefined && Exit.isSuccess(outcome) ? outcome.value : undefined
  return exit !== undefined && Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
}

describe("an id reuse read after a loss, by the broker's reason", () => {
  it.effect("another message under a delivered message's id, lost on the way, ends as the caller's MessageIdReuse, not the first write received", () =>
    Effect.gen(function*() {
      const world = yield* withMemoryBroker()
      const bob = yield* world.session({ sessionId: "bbbbbbbb-4444-4000-8000-0000000000b1", name: "bob" })
      const links: Array<Connection> = []
      const { client: alpha } = yield* makeMemoryClient(
        memoryClientOptions({
          address: world.address,
          dial: (address) => Effect.tap(world.dial(address), (link) => Effect.sync(() => links.push(link)))
        }, "aaaaaaaa-4444-4000-8000-0000000000a1", "alpha", { reconnectBaseMs: 100, reconnectMaxMs: 100 })
      )
      yield* settle(alpha.connect)
      const first = message("first message")
      yield* settle(alpha.send({ to: "bob", message: first }))
      assert.strictEqual((yield* messageFor(bob.client, first.id)).message.id, first.id, "setup: bob did not get M1")

      // Another message under the same id, to the same bob; its write is lost with alpha's connection.
      const second = { ...message("a different message"), id: first.id }
      const sending = yield* settle(Effect.gen(function*() {
        const fiber = yield* Effect.forkScoped(Effect.exit(alpha.send({ to: "bob", message: second })), { startImmediately: true })
        yield* links[0]!.destroy
        return fiber
      }))
      yield* advance("150 millis")
      assert.strictEqual(links.length, 2, "test setup: alpha did not reconnect")
      const error = failureOf(sending)
      assert.instanceOf(error, MessageIdReuse, `the send ended as ${String(error)}`)
      assert.deepInclude(error, { code: DeliveryCode.MessageIdReuse, reason: Reason.messageIdReuse })
      yield* bob.client.roundTrip
      yield* bob.client.expectNothing("message")
    }))

  it.effect("a first write queued for a departed session whose name another took ends as the loss marked firstWriteQueued, not 'most likely reached'", () =>
    Effect.gen(function*() {
      // Another identity (cwd /b) takes the name before alpha is back: it takes none of that mail (P49).
      const { failure: error, bobSecond } = yield* queuedForDeparted({
        alpha: "aaaaaaaa-5555-4000-8000-0000000000a2",
        bobFirst: "bbbbbbbb-5555-4000-8000-0000000000b1",
        bobSecond: "bbbbbbbb-5555-4000-8000-0000000000b2",
        observer: "cccccccc-5555-4000-8000-0000000000c1"
      }, "/b")
      assert.instanceOf(error, ConnectionLost, `the send ended as ${String(error)}`)
      if (!(error instanceof ConnectionLost)) return
      assert.deepInclude(error.refusal, { code: DeliveryCode.MessageIdReuse, reason: Reason.messageIdReuseQueued })
      assert.isTrue(error.firstWriteQueued, "not marked as queued for the earlier session")
      assert.notStrictEqual(error.firstWriteReceived, true, "marked received")
      assert.include(error.message, "holds it for the session the target named then, with no delivery confirmed")
      assert.notInclude(error.message, "most likely reached that earlier session")
      // Review revdh DH4: by P49 the queued mail may go to another session of that name and directory.
      assert.notInclude(error.message, "the earlier one gets it if it comes back")
      assert.include(error.message, "another session than the earlier one, then")
      const read = notDelivered("Message", "bob")(error)
      assert.strictEqual(read._tag, "DeliveryUnknown")
      assert.include(read.message, "is queued for the session \"bob\" named then, no delivery to it confirmed")
      assert.notInclude(read.message, "not delivered to it so far")
      assert.notInclude(read.message, "most likely arrived")
      yield* bobSecond.client.roundTrip
      yield* bobSecond.client.expectNothing("message")
    }))

  it("the loss carrying the record's expiry does not call it 'not what became of the first attempt', nor a retry likely to help", () => {
    const expired = deliveryError({ messageId: "m-1", code: DeliveryCode.DeliveryExpired, reason: Reason.expired, retryable: false })
    const ended = endedAfterLoss(new ConnectionLost({ operation: "send", messageId: "m-1" }), expired)
    assert.instanceOf(ended, ConnectionLost, `ended as ${String(ended)}`)
    assert.notInclude(ended.message, "not what became of the first attempt")
    assert.include(ended.message, "which does not tell whether the first attempt reached its recipient")
    assert.include(ended.message, "where that record is what refused the re-send (an expiry, an eviction), it refuses every retry the same way")
  })

  it("P46's text after a loss, read on a connection not granted reuse-reason-v1, is the loss, not a definite 'not delivered' (DH3)", () => {
    const lost = new ConnectionLost({ operation: "send", messageId: "m-1" })
    const refusal = deliveryError({ messageId: "m-1", code: DeliveryCode.MessageIdReuse, reason: Reason.messageIdReuse, retryable: false })
    const ended = endedAfterLoss(lost, refusal, false)
    assert.instanceOf(ended, ConnectionLost, `ended as ${String(ended)}`)
    if (!(ended instanceof ConnectionLost)) return
    assert.strictEqual(ended.refusal, refusal)
    assert.notStrictEqual(ended.firstWriteReceived, true)
    assert.notStrictEqual(ended.firstWriteQueued, true)
    const read = notDelivered("Message", "bob")(ended)
    assert.strictEqual(read._tag, "DeliveryUnknown", `a message a base broker may have delivered ends as ${read._tag}: ${read.message}`)
    const late = answerAfterLoss("m-1", Exit.fail(refusal), false)
    assert.instanceOf(Exit.isFailure(late) ? Cause.squash(late.cause) : undefined, ConnectionLost)
  })

  it("P46's text after a loss, read on a connection granted reuse-reason-v1, is the caller's own reuse, as given (DH3)", () => {
    const refusal = deliveryError({ messageId: "m-1", code: DeliveryCode.MessageIdReuse, reason: Reason.messageIdReuse, retryable: false })
    assert.strictEqual(endedAfterLoss(new ConnectionLost({ operation: "send", messageId: "m-1" }), refusal, true), refusal)
    const late = answerAfterLoss("m-1", Exit.fail(refusal), true)
    assert.strictEqual(Exit.isFailure(late) ? Cause.squash(late.cause) : undefined, refusal)
  })

  it("a record delivered to the session the target resolves to now ends as the loss marked firstWriteDeliveredHere, with no advice to send again, which the session reads DeliveredBeforeLoss (DH1)", () => {
    const refusal = deliveryError({
      messageId: "m-1",
      code: DeliveryCode.MessageIdReuse,
      reason: Reason.messageIdReuseDeliveredHere,
      retryable: false
    })
    const ended = endedAfterLoss(new ConnectionLost({ operation: "send", messageId: "m-1" }), refusal, true)
    assert.instanceOf(ended, ConnectionLost, `ended as ${String(ended)}`)
    if (!(ended instanceof ConnectionLost)) return
    assert.isTrue(ended.firstWriteDeliveredHere, "not marked as delivered to the session the target resolves to now")
    assert.notStrictEqual(ended.firstWriteReceived, true, "marked as delivered to an earlier session")
    assert.include(ended.message, "delivered it to the session the target resolves to now")
    assert.include(ended.message, "Do not send it again: that session has it.")
    assert.notInclude(ended.message, "most likely reached that earlier session")
    assert.notInclude(ended.message, "new message id")
    // The session reads it as delivered, not "may or may not have been delivered" (task here).
    const read = notDelivered("Message", "bob")(ended)
    assert.strictEqual(read._tag, "DeliveredBeforeLoss")
    assert.include(read.message, "Message to \"bob\" was delivered before the connection to the broker was lost")
    assert.include(read.message, "the first attempt was delivered to the session \"bob\" resolves to now")
    assert.include(read.message, "Do not send it again: that session has it.")
    assert.notInclude(read.message, "may or may not")
  })
})
