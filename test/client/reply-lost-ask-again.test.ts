/**
 * An answered ask whose reply is lost before its deadline is put back by the
 * broker (StaleAsks.replyLost → MailDelivery's askAgain) to the replier's
 * live connection. The replier's own IntercomClient read that ask before (it
 * answered it), so its RecentMessages would drop the second copy as a
 * repeat; its reply cancelled, the client forgets the question's pair and
 * its consumer hears the ask again (review revx X1).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import type { Dialer } from "../../src/client/Dialer.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { assertDelivered } from "../support/assertions.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { advance, memoryNetwork, settle } from "../support/memory.ts"
import { makeMemoryClient, memoryClientOptions } from "./support.ts"

const ASK_TIMEOUT_MS = 60_000
const CONFIRMING = { frame: { features: [RECEIVED_V1] } }

describe("an ask put back after its reply was lost, to the same replier client", () => {
  // bob replies to the asker's name: "alice", its session id too, or not (review revaa AA1).
  for (const aliceId of ["alice", "alice-0001"]) {
    const asker = `the asker's id ${JSON.stringify(aliceId)}`
    it.effect(`the replier's consumer hears the ask again after its own reply, sent to the asker's name, was withdrawn (${asker})`, () =>
      Effect.gen(function*() {
        const world = yield* memoryNetwork()
        yield* world.startBroker({ idleExit: null, askTimeout: ASK_TIMEOUT_MS })
        const carol = yield* world.session({ sessionId: "carol", name: "carol" })
        const alice = yield* world.session({ sessionId: aliceId, name: "alice", ...CONFIRMING })
        const dialed: Array<Connection> = []
        const dial: Dialer = (address) => Effect.tap(world.dial(address), (c) => Effect.sync(() => void dialed.push(c)))
        // confirmWhenHandled and a consumer that never handles: the ask stays unconfirmed on bob's connection.
        const { client: bob } = yield* makeMemoryClient(
          memoryClientOptions(world, "bob", "bob", { confirmWhenHandled: true, dial, reconnectBaseMs: 20 })
        )
        yield* settle(bob.connect)
        const heard: Array<string> = []
        yield* Effect.forkScoped(
          Stream.runForEach(bob.messages, (m) => Effect.sync(() => void heard.push(m.message.id))),
          { startImmediately: true }
        )
        const ask = message("still need this?", { expectsReply: true })
        assertDelivered(yield* send(alice.client, "bob", ask))
        yield* settle(bob.list)
        assert.deepStrictEqual(heard, [ask.id], "setup: bob did not hear the ask")
        // alice leaves: bob's reply waits in the mailbox for her.
        yield* alice.client.destroy
        yield* carol.client.next("session_left", (frame) => frame.sessionId === aliceId)
        const reply = message("yes", { replyTo: ask.id })
        yield* bob.send({ to: "alice", message: reply })
        // bob's connection drops before the deadline: the ask's copy, answered, is dropped (fixw: remembered).
        yield* settle(Effect.forEach(dialed, (c) => c.destroy, { discard: true }))
        yield* advance("20 millis")
        yield* settle(bob.connect)
        assert.strictEqual(dialed.length, 2, "setup: bob did not reconnect")
        // bob withdraws its reply before alice read it: the edge opens again, askAgain writes the ask to bob.
        const cancelled = yield* bob.cancel(reply.id)
        assert.isTrue(cancelled, "setup: the reply was not cancelled")
        yield* settle(bob.list)
        yield* settle(bob.list)
        assert.deepStrictEqual(heard, [ask.id, ask.id], "bob's consumer was never asked the ask again")
      }))

    it.effect(`the replier's consumer hears the ask again after its reply, sent to the asker's name, was evicted (the failure receipt comes first; ${asker})`, () =>
      Effect.gen(function*() {
        const world = yield* memoryNetwork()
        // The mailbox holds one message: carol's mail to alice pushes bob's waiting reply out.
        yield* world.startBroker({ idleExit: null, askTimeout: ASK_TIMEOUT_MS, mailboxCapacity: 1 })
        const carol = yield* world.session({ sessionId: "carol", name: "carol" })
        const alice = yield* world.session({ sessionId: aliceId, name: "alice", ...CONFIRMING })
        const dialed: Array<Connection> = []
        const dial: Dialer = (address) => Effect.tap(world.dial(address), (c) => Effect.sync(() => void dialed.push(c)))
        const { client: bob } = yield* makeMemoryClient(
          memoryClientOptions(world, "bob", "bob", { confirmWhenHandled: true, dial, reconnectBaseMs: 20 })
        )
        yield* settle(bob.connect)
        const heard: Array<string> = []
        yield* Effect.forkScoped(
          Stream.runForEach(bob.messages, (m) => Effect.sync(() => void heard.push(m.message.id))),
          { startImmediately: true }
        )
        const ask = message("still need this?", { expectsReply: true })
        assertDelivered(yield* send(alice.client, "bob", ask))
        yield* settle(bob.list)
        assert.deepStrictEqual(heard, [ask.id], "setup: bob did not hear the ask")
        yield* alice.client.destroy
        yield* carol.client.next("session_left", (frame) => frame.sessionId === aliceId)
        const reply = message("yes", { replyTo: ask.id })
        yield* bob.send({ to: "alice", message: reply })
        yield* settle(Effect.forEach(dialed, (c) => c.destroy, { discard: true }))
        yield* advance("20 millis")
        yield* settle(bob.connect)
        assert.strictEqual(dialed.length, 2, "setup: bob did not reconnect")
        // The reply evicted before its deadline: bob is sent its `expired` receipt and, its edge open again, the ask.
        assertDelivered(yield* send(carol.client, aliceId, message("later")), "queued")
        yield* settle(bob.list)
        yield* settle(bob.list)
        assert.deepStrictEqual(heard, [ask.id, ask.id], "bob's consumer was never asked the ask again")
      }))
  }
})

describe("the broker's order: an ask put back by its replier's cancel, and that cancel's answer", () => {
  // What RecentMessages (cancelWritten/cancelEnded) relies on: the broker writes the question it asks again to the
  // replier's connection AHEAD of the cancel's bare `delivered` (MailDelivery.cancel → StaleAsks.replyLost →
  // askAgain, before Receipts answers the cancel). Seen on the wire, on a raw connection (review revad AD1).
  it.effect("the question asked again comes ahead of the cancel's `delivered`, on the replier's connection", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ idleExit: null, askTimeout: ASK_TIMEOUT_MS })
      const carol = yield* world.session({ sessionId: "carol", name: "carol" })
      const alice = yield* world.session({ sessionId: "alice", name: "alice", ...CONFIRMING })
      // bob confirms nothing: the ask stays in the custody of its connection.
      const bob = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
      const ask = message("still need this?", { expectsReply: true })
      assertDelivered(yield* send(alice.client, "bob", ask))
      yield* messageFor(bob.client, ask.id)
      // alice leaves: bob's reply waits in the mailbox for her.
      yield* alice.client.destroy
      yield* carol.client.next("session_left", (frame) => frame.sessionId === "alice")
      const reply = message("yes", { replyTo: ask.id })
      assertDelivered(yield* send(bob.client, "alice", reply), "queued")
      // bob's connection drops: the ask's copy, answered, is dropped (remembered for a reply's loss).
      yield* bob.client.destroy
      yield* carol.client.next("session_left", (frame) => frame.sessionId === "bob")
      const again = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
      yield* again.client.roundTrip
      yield* again.client.expectNothing("message")
      yield* again.client.send({ type: "cancel_message", messageId: reply.id })
      const order: Array<string> = []
      for (;;) {
        const frame = yield* again.client.next(["message", "delivered", "delivery_failed"])
        order.push(`${frame.type} ${frame.type === "message" ? frame.message.id : frame.messageId}`)
        if (frame.type !== "message" && frame.messageId === reply.id) break
      }
      assert.deepStrictEqual(order, [`message ${ask.id}`, `delivered ${reply.id}`], "the question was not asked again ahead of the answer")
    }))
})
