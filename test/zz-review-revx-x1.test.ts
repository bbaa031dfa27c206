/**
 * Review revx X1 (probe): fixw's `askAgain` writes an answered ask, whose
 * reply was lost before the deadline, to the replier's live connection
 * again. The replier necessarily read that ask (it answered it); when the
 * same IntercomClient reconnects (its own rejoin after a dropped
 * connection), its RecentMessages remembers the (sender, id) pair and drops
 * the second copy: the replier's consumer is never asked again.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import type { Dialer } from "../src/client/Dialer.ts"
import type { Connection } from "../src/transport/Connection.ts"
import { RECEIVED_V1 } from "../src/protocol/features.ts"
import { assertDelivered } from "./support/assertions.ts"
import { message, send } from "./support/broker.ts"
import { advance, memoryNetwork, settle } from "./support/memory.ts"
import { makeMemoryClient, memoryClientOptions } from "./client/support.ts"

const ASK_TIMEOUT_MS = 60_000
const CONFIRMING = { frame: { features: [RECEIVED_V1] } }

describe("revx X1: an ask put back after its reply was lost, to the same replier client", () => {
  it.effect("the replier's consumer hears the ask again after its own reply was withdrawn", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ idleExit: null, askTimeout: ASK_TIMEOUT_MS })
      const carol = yield* world.session({ sessionId: "carol", name: "carol" })
      const alice = yield* world.session({ sessionId: "alice", name: "alice", ...CONFIRMING })
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
      yield* carol.client.next("session_left", (frame) => frame.sessionId === "alice")
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
})
