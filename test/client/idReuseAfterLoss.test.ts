/**
 * A send by name lost on the way, whose name another session took before the re-send (task afterloss3): the broker
 * took the first write and delivered it to the session the name meant then; the client's re-send, the same message
 * under the same id, now resolves to the new holder of the name, so the broker's record under that id names another
 * target and it refuses the re-send `E_MESSAGE_ID_REUSE`, its reason saying the same content was delivered to the
 * session the target named then (`Reason.messageIdReuseDelivered`, broker/SendReplays.ts `reuseReason`; until review revda
 * it was P46's "Message id was reused with different authored content", given for any mismatch). That refusal is the
 * broker's record of the first write, not the caller reusing an id:
 * the client ends the send as the loss at once (`ConnectionLost`, outcome unknown) carrying it and marked
 * `firstWriteReceived` (afterLoss.ts `received`), whose text says the first attempt most likely arrived. Until this
 * task it was the loss whose text called the refusal "what that broker holds now, not what became of the first
 * attempt", and an `IntercomSession` said it "says nothing of the first attempt".
 *
 * The real broker core, durable, on the in-memory network under TestClock: its commit is held (gatedStore) so the
 * answer to alpha's send waits while alpha's connection is destroyed; the commit then delivers the message to bob's
 * first session, which leaves; a second session registers as bob; alpha reconnects and writes the send again.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit } from "effect"
import { ConnectionLost } from "../../src/client/errors.ts"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { notDelivered } from "../../src/session/Sending.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message, messageFor } from "../support/broker.ts"
import { gatedStore } from "../support/durable.ts"
import { advance, memoryNetwork, settle, step } from "../support/memory.ts"
import { makeMemoryClient, memoryClientOptions } from "./support.ts"

const A_ID = "aaaaaaaa-3333-4000-8000-0000000000a2"
const BOB_FIRST = "bbbbbbbb-3333-4000-8000-0000000000b1"
const BOB_SECOND = "bbbbbbbb-3333-4000-8000-0000000000b2"

describe("a send by name lost on the way, its name taken by another session before the re-send (task afterloss3)", () => {
  it.effect("the re-send refused E_MESSAGE_ID_REUSE ends ConnectionLost at once, marked firstWriteReceived, saying the first attempt most likely arrived", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const { gate, store } = yield* gatedStore(disk)
      yield* world.startBroker({ idleExit: null, store })
      const bobFirst = yield* world.session({ sessionId: BOB_FIRST, name: "bob" })
      const links: Array<Connection> = []
      const { client: alpha } = yield* makeMemoryClient(
        memoryClientOptions({
          address: world.address,
          dial: (address) => Effect.tap(world.dial(address), (link) => Effect.sync(() => links.push(link)))
        }, A_ID, "alpha", { reconnectBaseMs: 100, reconnectMaxMs: 100 })
      )
      yield* settle(alpha.connect)

      const sent = message("the build is green")
      const sending = yield* step(Effect.exit(alpha.send({ to: "bob", message: sent })))
      assert.isUndefined(sending.pollUnsafe(), "test setup: the send was answered before its commit")
      // alpha's connection dies with the answer held for the commit; the commit then delivers to bob's first session.
      yield* step(links[0]!.destroy)
      yield* step(Deferred.succeed(gate, undefined))
      assert.strictEqual((yield* messageFor(bobFirst.client, sent.id)).message.id, sent.id, "setup: bob's first session did not get it")
      // bob's first session goes; another registers under the name before alpha is back.
      yield* bobFirst.client.destroy
      const bobSecond = yield* world.session({ sessionId: BOB_SECOND, name: "bob" })

      yield* advance("150 millis")
      assert.strictEqual(links.length, 2, "test setup: alpha did not reconnect")
      const outcome = sending.pollUnsafe()
      assert.isDefined(outcome, "the send still waited after the reconnect")
      const exit = outcome !== undefined && Exit.isSuccess(outcome) ? outcome.value : undefined
      const error = exit !== undefined && Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
      assert.instanceOf(error, ConnectionLost, `the send ended as ${String(error)}`)
      if (!(error instanceof ConnectionLost)) return
      // What the broker sent: its record of the first write.
      assert.deepInclude(error.refusal, { code: DeliveryCode.MessageIdReuse, reason: Reason.messageIdReuseDelivered, messageId: sent.id })
      assert.isTrue(error.firstWriteReceived, "not marked as the first write's record")
      assert.include(error.message, "the broker took the first attempt")
      assert.include(error.message, "most likely reached that earlier session")
      assert.notInclude(error.message, "not what became of the first attempt")
      // A session's reading of it: delivery unknown, its first attempt most likely arrived — not "not delivered".
      const read = notDelivered("Message", "bob")(error)
      assert.strictEqual(read._tag, "DeliveryUnknown")
      assert.include(read.message, "most likely arrived there")
      assert.notInclude(read.message, "says nothing of the first attempt")
      assert.notInclude(read.message, "does not tell whether")
      // bob's second session never got it.
      yield* bobSecond.client.roundTrip
      yield* bobSecond.client.expectNothing("message")
    }))
})
