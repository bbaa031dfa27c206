/**
 * Review revd (helper mbctl), on a durable broker over the in-memory network
 * (a memory store playing the disk): a cancel of a message back in the
 * mailbox after its client read it and dropped reaches that client's
 * return, as on a memory broker (mailbox-cancel.test.ts): the sender's
 * answer waits for the cancel's commit, the stored copy leaves the store
 * with it, and the copy kept in memory goes to the same instance with the
 * cancel behind it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { RECEIVED_V1, REJOIN_V1 } from "../../src/protocol/features.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { assertDelivered } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { ackFor, message, messageFor, send } from "../support/broker.ts"
import { durableBroker } from "../support/durable.ts"
import { advance, memoryNetwork } from "../support/memory.ts"

/** bob's client: confirms what it reads, and rejoins as instance bob-1. */
const BOB_1 = { frame: { features: [RECEIVED_V1, REJOIN_V1], instanceId: "bob-1" } }

describe("a durable broker: a cancel of a message back in the mailbox after its client read it", () => {
  it.effect("the same instance's return gets the message again and the cancel behind it; the store keeps nothing of it", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      yield* durableBroker(world, disk)
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob = yield* world.session({ sessionId: "bob", name: "bob", ...BOB_1 })
      const m0 = message("read, never confirmed, then cancelled")
      assertDelivered(yield* send(alice.client, "bob", m0))
      yield* messageFor(bob.client, m0.id)
      yield* bob.client.destroy
      yield* settled([alice.client])
      yield* alice.client.send({ type: "cancel_message", messageId: m0.id })
      assert.strictEqual((yield* ackFor(alice.client, m0.id)).type, "delivered")
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(disk.mail.size, 0, "the cancelled copy is still stored")

      const back = yield* world.session({ sessionId: "bob", name: "bob", ...BOB_1 })
      yield* messageFor(back.client, m0.id)
      const control = yield* back.client.next("message_control", (frame) => frame.control.messageId === m0.id)
      assert.strictEqual(control.control.action, "cancel")
      const kinds = back.client.received().flatMap((frame) =>
        frame.type === "message" || frame.type === "message_control" ? [frame.type] : []
      )
      assert.deepStrictEqual(kinds, ["message", "message_control"])
    }))

  it.effect("another client registering the id gets neither", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      yield* durableBroker(world, disk)
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob = yield* world.session({ sessionId: "bob", name: "bob", ...BOB_1 })
      const m0 = message("read, never confirmed, then cancelled")
      assertDelivered(yield* send(alice.client, "bob", m0))
      yield* messageFor(bob.client, m0.id)
      yield* bob.client.destroy
      yield* settled([alice.client])
      yield* alice.client.send({ type: "cancel_message", messageId: m0.id })
      assert.strictEqual((yield* ackFor(alice.client, m0.id)).type, "delivered")
      const other = yield* world.session({
        sessionId: "bob",
        name: "bob",
        frame: { features: [RECEIVED_V1, REJOIN_V1], instanceId: "bob-2" }
      })
      yield* settled([alice.client], [other.client])
      yield* other.client.expectNothing("message")
      yield* other.client.expectNothing("message_control")
    }))
})
