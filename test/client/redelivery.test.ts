/**
 * A durable broker killed after writing a message to its recipient but before
 * committing its replay record delivers it again when the sender re-sends it
 * after the restart (docs/store.md); the sender's `IntercomClient` gets one
 * outcome and the recipient's passes the message on once (RecentMessages.ts).
 * In memory, under TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { RecentMessages } from "../../src/client/RecentMessages.ts"
import { MailStoreError, type MailStoreService, makeMemory, makeMemoryMailState } from "../../src/store/MailStore.ts"
import { message } from "../support/broker.ts"
import { advance, memoryNetwork, settle, step } from "../support/memory.ts"
import { makeMemoryClient, memoryClientOptions, subscribe } from "./support.ts"

const A_ID = "aaaaaaaa-2222-4000-8000-00000000000a"
const B_ID = "bbbbbbbb-2222-4000-8000-00000000000b"

describe("redelivery after a durable broker's crash", () => {
  it.effect("a message delivered before its commit, then re-sent after the crash: one outcome for the sender, one copy for the recipient's client", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const memory = makeMemory(disk)
      // The first broker's commits never land (it dies first): the delivery went out, the record never did.
      const lost: MailStoreService = {
        ...memory,
        commit: () => Effect.fail(new MailStoreError({ operation: "commit", detail: "the process is dying" }))
      }
      const first = yield* world.startBroker({ idleExit: null, store: lost })
      const timings = { reconnectBaseMs: 500 }
      const { client: bob } = yield* makeMemoryClient(memoryClientOptions(world, B_ID, "bob", timings))
      const { client: alice } = yield* makeMemoryClient(memoryClientOptions(world, A_ID, "alice", timings))
      const inbox = yield* subscribe(bob.messages, "bob's messages")
      yield* settle(bob.connect)
      yield* settle(alice.connect)
      const msg = message("once, please")
      const sending = yield* step(alice.send({ to: B_ID, message: msg }))
      assert.strictEqual((yield* inbox.next()).message.id, msg.id)
      assert.isUndefined(sending.pollUnsafe(), "test setup: the send was acknowledged before its commit")
      yield* first.crash

      yield* world.startBroker({ idleExit: null, store: makeMemory(disk) })
      yield* advance("500 millis") // both reconnect; alice sends the message again, same id
      assert.strictEqual((yield* Fiber.join(sending)).delivery, "socket_delivered")
      yield* settle(bob.list) // a round trip on bob: what the broker queued for it before has been read
      assert.deepStrictEqual(inbox.seen().map((m) => m.message.id), [msg.id])
    }))
})

describe("RecentMessages", () => {
  it("a pair is new once; the oldest is forgotten past the capacity", () => {
    const recent = new RecentMessages(2)
    assert.isTrue(recent.firstTime("a", "1"))
    assert.isFalse(recent.firstTime("a", "1"))
    assert.isTrue(recent.firstTime("b", "1"), "the same id from another sender is another message")
    assert.isTrue(recent.firstTime("a", "2"))
    assert.isTrue(recent.firstTime("a", "1"), "forgotten: capacity 2")
  })
})
