/**
 * A durable broker that restarted answers a sender's retry from what it
 * stored (P46's replay records), before the sessions it routed to come
 * back: a resend whose target the new broker does not know yet gets the
 * message's stored fate, not `E_TARGET_NOT_FOUND`. Over the in-memory network,
 * with a memory store playing the disk (../support/durable.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { assertDelivered, assertFailed } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { ackFor, message, messageFor, send } from "../support/broker.ts"
import { durableBroker } from "../support/durable.ts"
import { advance, memoryNetwork } from "../support/memory.ts"

/**
 * A durable broker over a memory disk with alice and bob registered, alice's
 * message to bob delivered, read and its mail's delete committed: after a
 * crash only its replay record is left of it.
 */
const deliveredThenCrash = (text: string) =>
  Effect.gen(function*() {
    const world = yield* memoryNetwork()
    const disk = makeMemoryMailState()
    const first = yield* durableBroker(world, disk)
    const alice = yield* world.session({ sessionId: "alice", name: "alice" })
    const bob = yield* world.session({ sessionId: "bob", name: "bob" })
    const msg = message(text)
    assertDelivered(yield* send(alice.client, "bob", msg))
    yield* messageFor(bob.client, msg.id)
    yield* advance(LAZY_FLUSH)
    yield* first.crash
    yield* durableBroker(world, disk)
    return { world, disk, msg }
  })

/** A durable broker over a memory disk with alice registered and bob gone (his client destroyed). */
const bobAway = Effect.gen(function*() {
  const world = yield* memoryNetwork()
  const disk = makeMemoryMailState()
  const first = yield* durableBroker(world, disk)
  const alice = yield* world.session({ sessionId: "alice", name: "alice" })
  const bob = yield* world.session({ sessionId: "bob", name: "bob" })
  yield* bob.client.destroy
  yield* settled([alice.client])
  return { world, disk, first, alice }
})

describe("durable broker restarted: a resend to a target it does not know yet", () => {
  it.effect("of a message delivered and read before the crash is answered delivered, and not delivered again", () =>
    Effect.gen(function*() {
      const { world, msg } = yield* deliveredThenCrash("exactly once")
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      assertDelivered(yield* send(alice.client, "bob", msg))
      const bob = yield* world.session({ sessionId: "bob", name: "bob" })
      yield* settled([alice.client], [bob.client])
      yield* bob.client.expectNothing("message")
    }))

  it.effect("of a message queued before the crash is answered queued, and bob gets it once", () =>
    Effect.gen(function*() {
      const { world, disk, first, alice } = yield* bobAway
      const msg = message("while you were out")
      assertDelivered(yield* send(alice.client, "bob", msg), "queued")
      yield* first.crash
      yield* durableBroker(world, disk)
      const alice2 = yield* world.session({ sessionId: "alice", name: "alice" })
      assertDelivered(yield* send(alice2.client, "bob", msg), "queued")
      const bob = yield* world.session({ sessionId: "bob", name: "bob" })
      yield* messageFor(bob.client, msg.id)
      yield* settled([alice2.client], [bob.client])
      yield* bob.client.expectNothing("message")
    }))

  it.effect("of a message cancelled before the crash is answered E_DELIVERY_CANCELLED", () =>
    Effect.gen(function*() {
      const { world, disk, first, alice } = yield* bobAway
      const msg = message("never mind")
      assertDelivered(yield* send(alice.client, "bob", msg), "queued")
      yield* alice.client.send({ type: "cancel_message", messageId: msg.id })
      assert.deepStrictEqual({ ...(yield* ackFor(alice.client, msg.id)) }, { type: "delivered", messageId: msg.id })
      yield* first.crash
      yield* durableBroker(world, disk)
      const alice2 = yield* world.session({ sessionId: "alice", name: "alice" })
      assertFailed(yield* send(alice2.client, "bob", msg), "E_DELIVERY_CANCELLED", "Sender cancelled the queued delivery")
    }))

  it.effect("is matched by id and content against the record's own target: another `to` cannot be told apart", () =>
    Effect.gen(function*() {
      const { world, msg } = yield* deliveredThenCrash("to bob")
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      // Neither name resolves now: the record's target (bob) cannot be compared with `to`.
      assertDelivered(yield* send(alice.client, "carol", msg))
    }))

  it.effect("under a kept id with other content is judged afresh: E_TARGET_NOT_FOUND", () =>
    Effect.gen(function*() {
      const { world, msg } = yield* deliveredThenCrash("the first text")
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      assertFailed(yield* send(alice.client, "bob", { ...msg, content: { text: "another text" } }), "E_TARGET_NOT_FOUND")
    }))
})
