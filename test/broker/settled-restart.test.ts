/**
 * Review revd D4 (helper fixsup): a durable broker that restarted has replay
 * records but no receipt routes. A `supersedes` naming a message its sender
 * cancelled before the crash is refused with the reason docs/protocol.md
 * promises, saying the message was cancelled already — the settled record
 * is judged before the route (`Receipts.supersedes`), where
 * `recordedRoute` had turned it away first with the base reason. Over the
 * in-memory network, with a memory store playing the disk
 * (../support/durable.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { Reason } from "../../src/protocol/delivery.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { assertDelivered, assertFailed } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { ackFor, message, messageFor, send } from "../support/broker.ts"
import { durableBroker } from "../support/durable.ts"
import { advance, memoryNetwork } from "../support/memory.ts"

describe("a durable broker restarted: a supersede naming a message cancelled before the crash", () => {
  it.effect("is refused E_SUPERSEDE_TARGET saying the message was cancelled already", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* durableBroker(world, disk)
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob = yield* world.session({ sessionId: "bob", name: "bob" })
      const m0 = message("m0")
      assertDelivered(yield* send(alice.client, "bob", m0))
      yield* messageFor(bob.client, m0.id)
      yield* alice.client.send({ type: "cancel_message", messageId: m0.id })
      assert.strictEqual((yield* ackFor(alice.client, m0.id)).type, "delivered")
      yield* settled([alice.client], [bob.client])
      yield* advance(LAZY_FLUSH)
      yield* first.crash
      yield* durableBroker(world, disk)
      const alice2 = yield* world.session({ sessionId: "alice", name: "alice" })
      yield* world.session({ sessionId: "bob", name: "bob" })
      assertFailed(
        yield* send(alice2.client, "bob", message("m2", { supersedes: m0.id })),
        "E_SUPERSEDE_TARGET",
        Reason.supersedeCancelled
      )
    }))
})
