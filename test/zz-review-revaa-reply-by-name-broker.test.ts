/**
 * Review revaa AA1, against the real broker (memory network; probe, fails on
 * main at 11b45496): as test/client/reply-lost-ask-again.test.ts's eviction
 * case, but the asker's session id differs from its name and bob replies to
 * the name. The broker routes the reply (a recently departed session, by
 * name), evicts it and asks the question again behind its `expired` receipt;
 * bob's client keyed the reply's asker as "alice", which names no pair, and
 * drops the question as a repeat.
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

describe("review revaa AA1 on the real broker: a reply to its asker by name", () => {
  it.effect("evicted, lets its question, asked again, reach the replier's consumer", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      // The mailbox holds one message: carol's mail to alice pushes bob's waiting reply out.
      yield* world.startBroker({ idleExit: null, askTimeout: ASK_TIMEOUT_MS, mailboxCapacity: 1 })
      const carol = yield* world.session({ sessionId: "carol", name: "carol" })
      const alice = yield* world.session({ sessionId: "alice-0001", name: "alice", ...CONFIRMING })
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
      yield* carol.client.next("session_left", (frame) => frame.sessionId === "alice-0001")
      const reply = message("yes", { replyTo: ask.id })
      yield* bob.send({ to: "alice", message: reply })
      yield* settle(Effect.forEach(dialed, (c) => c.destroy, { discard: true }))
      yield* advance("20 millis")
      yield* settle(bob.connect)
      assert.strictEqual(dialed.length, 2, "setup: bob did not reconnect")
      // The reply evicted before its deadline: bob is sent its `expired` receipt and, its edge open again, the ask.
      assertDelivered(yield* send(carol.client, "alice-0001", message("later")), "queued")
      yield* settle(bob.list)
      yield* settle(bob.list)
      assert.deepStrictEqual(heard, [ask.id, ask.id], "bob's consumer was never asked the ask again")
    }))
})
