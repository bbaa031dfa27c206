/**
 * A durable broker killed after writing a message to its recipient but before
 * its next commit forgets it delivers that message again after its restart
 * (docs/store.md); the recipient's `IntercomClient` passes it on once
 * (RecentMessages.ts). In memory, under TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { RecentMessages } from "../../src/client/RecentMessages.ts"
import type { ConfirmBound } from "../../src/client/ConfirmationPolicy.ts"
import type { InboundMessage } from "../../src/client/events.ts"
import { type MailStoreService, makeMemory, makeMemoryMailState } from "../../src/store/MailStore.ts"
import { message } from "../support/broker.ts"
import { advance, memoryNetwork, settle } from "../support/memory.ts"
import { makeMemoryClient, memoryClientOptions, subscribe } from "./support.ts"

const A_ID = "aaaaaaaa-2222-4000-8000-00000000000a"
const B_ID = "bbbbbbbb-2222-4000-8000-00000000000b"
const C_ID = "cccccccc-2222-4000-8000-00000000000c"

describe("redelivery after a durable broker's crash", () => {
  it.effect("the message is written twice by the brokers, and the recipient's client passes it on once", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const memory = makeMemory(disk)
      // The "disk" takes commits until the message is on it, then the process is as good as dead.
      const store: MailStoreService = {
        ...memory,
        commit: (batch) => Effect.suspend(() => disk.mail.size > 0 ? Effect.void : memory.commit(batch))
      }
      const first = yield* world.startBroker({ idleExit: null, store })
      const { client: bob } = yield* makeMemoryClient(memoryClientOptions(world, B_ID, "bob", { reconnectBaseMs: 500 }))
      const inbox = yield* subscribe(bob.messages, "bob's messages")
      yield* settle(bob.connect)
      const alice = yield* world.session({ sessionId: A_ID, name: "alice" })
      const msg = message("once, please")
      yield* alice.client.send({ type: "send", to: "bob", message: msg })
      assert.strictEqual((yield* inbox.next()).message.id, msg.id)
      assert.strictEqual(disk.mail.size, 1, "test setup: the written message was not forgotten on the disk")
      yield* first.crash

      const second = yield* world.startBroker({ idleExit: null, store: makeMemory(disk) })
      yield* advance("500 millis") // bob reconnects and is handed the restored mail
      yield* settle(bob.list) // a round trip on bob: what the broker queued for it before has been read
      yield* settle(bob.list) // and a second: bob's confirmation of it has been handled
      yield* advance(LAZY_FLUSH)
      assert.strictEqual((yield* second.core.stats).sessions, 1)
      assert.strictEqual(disk.mail.size, 0, "the second broker wrote it (and forgot it)")
      assert.deepStrictEqual(inbox.seen().map((m) => m.message.id), [msg.id])
      // The restored copy carries the message's own timestamp: not taken for a new message under a reused id.
      assert.strictEqual((yield* bob.status).reusedIdDrops, 0, "the restored copy's timestamp differed from the first's")
    }))
})

describe("received-v1: the client confirms what it read", () => {
  it.effect("once the message is in the client, the durable broker forgets it", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      yield* world.startBroker({ idleExit: null, store: makeMemory(disk) })
      const { client: bob } = yield* makeMemoryClient(memoryClientOptions(world, B_ID, "bob"))
      const inbox = yield* subscribe(bob.messages, "bob's messages")
      yield* settle(bob.connect)
      const alice = yield* world.session({ sessionId: A_ID, name: "alice" })
      const msg = message("read it, then say so")
      yield* alice.client.send({ type: "send", to: "bob", message: msg })
      assert.strictEqual((yield* inbox.next()).message.id, msg.id)
      // Two round trips on bob: the first ends after its reader confirmed, the second follows the confirmation.
      yield* settle(bob.list)
      yield* settle(bob.list)
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(disk.mail.size, 0)
    }))
})

describe("received-v1: the client confirms the broker's notices it read", () => {
  it.effect("a batch carrying an expired notice is confirmed: a takeover after it is not sent the notice again", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ idleExit: null, mailboxCapacity: 1 })
      const { client: bob } = yield* makeMemoryClient(memoryClientOptions(world, B_ID, "bob"))
      const controls = yield* subscribe(bob.controls, "bob's controls")
      yield* settle(bob.connect)
      const carol = yield* world.session({ sessionId: C_ID, name: "carol" })
      yield* carol.client.destroy
      yield* settle(bob.list) // carol has left: bob's sends are queued for her
      const evicted = message("pushed out of the mailbox")
      yield* settle(bob.send({ to: "carol", message: evicted }))
      yield* settle(bob.send({ to: "carol", message: message("kept") }))
      const notice = yield* controls.next()
      assert.deepStrictEqual(
        notice._tag === "Receipt" ? [notice.receipt.messageId, notice.receipt.status] : [notice._tag],
        [evicted.id, "expired"]
      )
      // Two round trips on bob: the first ends after its reader confirmed, the second follows the confirmation.
      yield* settle(bob.list)
      yield* settle(bob.list)
      const takeover = yield* world.session({ sessionId: B_ID, name: "bob", frame: { features: [RECEIVED_V1] } })
      yield* takeover.client.roundTrip
      yield* takeover.client.expectNothing("message_receipt")
    }))
})

describe("RecentMessages", () => {
  const all = (): ConfirmBound => "all"

  it("a pair is new once; the oldest is forgotten past the capacity", () => {
    const recent = new RecentMessages(2)
    assert.strictEqual(recent.firstTime("a", "1", all), "new")
    assert.isFalse(recent.firstTime("a", "1", all))
    assert.strictEqual(recent.firstTime("b", "1", all), "new", "the same id from another sender is another message")
    assert.strictEqual(recent.firstTime("a", "2", all), "new")
    assert.strictEqual(recent.firstTime("a", "1", all), "new", "forgotten: capacity 2")
  })

  it("nothing from the message the confirmations stop at onward is forgotten, past the capacity too", () => {
    const recent = new RecentMessages(2)
    const inbound = (senderId: string, id: string): InboundMessage => ({
      from: { id: senderId, name: senderId, cwd: "/", model: "m", pid: 1, startedAt: 0, lastActivity: 0 },
      message: { id, timestamp: 0, content: { text: id } }
    })
    const unconfirmed = inbound("a", "2")
    let bound: ConfirmBound = unconfirmed
    assert.strictEqual(recent.firstTime("a", "1", () => bound), "new")
    assert.strictEqual(recent.firstTime("a", "2", () => bound), "new")
    for (let i = 3; i <= 6; i++) assert.strictEqual(recent.firstTime("a", `${i}`, () => bound), "new")
    assert.isFalse(recent.firstTime("a", "2", () => bound), "the bound's message is remembered")
    assert.isFalse(recent.firstTime("a", "3", () => bound), "and so is every one received after it")
    assert.strictEqual(recent.firstTime("a", "1", () => bound), "new", "one received before it is forgotten past the capacity")
    bound = "all"
    assert.strictEqual(recent.firstTime("a", "7", () => bound), "new")
    assert.strictEqual(recent.firstTime("a", "2", () => bound), "new", "all confirmed: back to the last 2")
  })
})

describe("a reconnect with more unconfirmed messages than the recent window", () => {
  it.effect("under confirmWhenHandled, each of 1,100 unhandled messages sent again reaches messages once", () =>
    Effect.gen(function*() {
      const N = 1100
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* world.startBroker({ idleExit: null, store: makeMemory(disk) })
      const { client: bob } = yield* makeMemoryClient(
        memoryClientOptions(world, B_ID, "bob", { reconnectBaseMs: 500, confirmWhenHandled: true })
      )
      yield* settle(bob.connect)
      const alice = yield* world.session({ sessionId: A_ID, name: "alice" })
      const sent = Array.from({ length: N }, (_, i) => message(`m${i}`))
      // One write, as a client with a burst queued makes it: 1,100 separate writes cost seconds on a loaded machine.
      yield* alice.client.sendAll(sent.map((m) => ({ type: "send", to: "bob", message: m })))
      // Two round trips on bob: all are read; none is handled (no consumer yet), so none is confirmed.
      yield* settle(bob.list)
      yield* settle(bob.list)
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(disk.mail.size, N, "test setup: the broker holds them all")
      yield* first.crash

      yield* world.startBroker({ idleExit: null, store: makeMemory(disk) })
      yield* advance("500 millis") // bob reconnects and is sent every unconfirmed message again
      yield* settle(bob.list)
      yield* settle(bob.list)
      const inbox = yield* subscribe(bob.messages, "bob's messages")
      for (let i = 0; i < N; i++) yield* inbox.next()
      yield* settle(bob.list) // a copy queued behind them would have reached the consumer by now
      const ids = inbox.seen().map((m) => m.message.id)
      assert.strictEqual(ids.length, N, "each message once")
      assert.deepStrictEqual(ids, sent.map((m) => m.id), "in the order sent")
    }))

  it.effect("under confirmWhenHandled, messages handled after a kept one are unconfirmed too, and each reaches messages once", () =>
    Effect.gen(function*() {
      const N = 1100
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* world.startBroker({ idleExit: null, store: makeMemory(disk) })
      const { client: bob } = yield* makeMemoryClient(
        memoryClientOptions(world, B_ID, "bob", { reconnectBaseMs: 500, confirmWhenHandled: true })
      )
      // bob's consumer keeps the first message (its host has not taken it) and handles every other one.
      const seen: Array<string> = []
      yield* Effect.forkScoped(
        Stream.runForEach(bob.messages, (m) =>
          Effect.andThen(
            Effect.sync(() => seen.push(m.message.id)),
            seen.length === 0 ? bob.keep(m) : bob.handled(m)
          )),
        { startImmediately: true }
      )
      yield* settle(bob.connect)
      const alice = yield* world.session({ sessionId: A_ID, name: "alice" })
      const sent = Array.from({ length: N }, (_, i) => message(`m${i}`))
      // One write, as a client with a burst queued makes it: 1,100 separate writes cost seconds on a loaded machine.
      yield* alice.client.sendAll(sent.map((m) => ({ type: "send", to: "bob", message: m })))
      yield* settle(bob.list)
      yield* settle(bob.list)
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(seen.length, N, "test setup: the consumer had them all")
      assert.strictEqual(disk.mail.size, N, "test setup: none is confirmed while the first is kept")
      yield* first.crash

      yield* world.startBroker({ idleExit: null, store: makeMemory(disk) })
      yield* advance("500 millis") // bob reconnects and is sent every unconfirmed message again
      yield* settle(bob.list)
      yield* settle(bob.list)
      assert.deepStrictEqual(seen, sent.map((m) => m.id), "each message once, in the order sent")
    }))
})

/**
 * Bob, on a broker of his own (over `store` when given), has read alice's
 * message `text` while `confirming` was held, or only confirmed once handled;
 * then two round trips on bob, so a confirmation, had one been written, has
 * been handled.
 */
const bobHasRead = (text: string, confirming: "held" | "when handled", store?: MailStoreService) =>
  Effect.gen(function*() {
    const world = yield* memoryNetwork()
    yield* world.startBroker({ idleExit: null, ...(store === undefined ? {} : { store }) })
    const { client: bob } = yield* makeMemoryClient(memoryClientOptions(world, B_ID, "bob"))
    const inbox = yield* subscribe(bob.messages, "bob's messages")
    yield* settle(bob.connect)
    yield* confirming === "held" ? bob.holdConfirmations : bob.confirmWhenHandled
    const alice = yield* world.session({ sessionId: A_ID, name: "alice" })
    const msg = message(text)
    yield* alice.client.send({ type: "send", to: "bob", message: msg })
    const read = yield* inbox.next()
    assert.strictEqual(read.message.id, msg.id)
    yield* settle(bob.list)
    yield* settle(bob.list)
    return { world, bob, read }
  })

describe("received-v1: a client whose messages no session takes does not confirm them (known issue 9)", () => {
  it.effect("a message read while confirmations are held is not confirmed: a takeover is sent it again", () =>
    Effect.gen(function*() {
      const { read, world } = yield* bobHasRead("nobody takes this yet", "held")
      const takeover = yield* world.session({ sessionId: B_ID, name: "bob", frame: { features: [RECEIVED_V1] } })
      const again = yield* takeover.client.next("message")
      assert.strictEqual(again.message.id, read.message.id)
    }))

  it.effect("resuming confirms what was read while held: the durable broker forgets it", () =>
    Effect.gen(function*() {
      const disk = makeMemoryMailState()
      const { bob } = yield* bobHasRead("taken later", "held", makeMemory(disk))
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(disk.mail.size, 1, "held: the broker still keeps it")
      yield* bob.resumeConfirmations
      yield* settle(bob.list)
      yield* settle(bob.list)
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(disk.mail.size, 0)
    }))
})

describe("received-v1: a client that confirms what it handled (confirmWhenHandled, known issue 21)", () => {
  it.effect("a message read and not yet handled is not confirmed: a takeover is sent it again", () =>
    Effect.gen(function*() {
      const { read, world } = yield* bobHasRead("read, its checkpoint still under way", "when handled")
      const takeover = yield* world.session({ sessionId: B_ID, name: "bob", frame: { features: [RECEIVED_V1] } })
      assert.strictEqual((yield* takeover.client.next("message")).message.id, read.message.id)
    }))

  it.effect("once handled it is confirmed: the durable broker forgets it", () =>
    Effect.gen(function*() {
      const disk = makeMemoryMailState()
      const { bob, read } = yield* bobHasRead("handled later", "when handled", makeMemory(disk))
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(disk.mail.size, 1, "read, not handled: the broker still keeps it")
      yield* bob.handled(read)
      yield* settle(bob.list)
      yield* settle(bob.list)
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(disk.mail.size, 0)
    }))

  it.effect("the option covers the mail flushed at the first connection, before anything could turn the mode on", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ idleExit: null })
      const alice = yield* world.session({ sessionId: A_ID, name: "alice" })
      const { client: early } = yield* makeMemoryClient(memoryClientOptions(world, B_ID, "bob"))
      yield* settle(early.connect)
      yield* early.disconnect
      const msg = message("waiting in bob's mailbox")
      yield* alice.client.send({ type: "send", to: B_ID, message: msg })
      const { client: bob } = yield* makeMemoryClient(memoryClientOptions(world, B_ID, "bob", { confirmWhenHandled: true }))
      const inbox = yield* subscribe(bob.messages, "bob's messages")
      yield* settle(bob.connect)
      assert.strictEqual((yield* inbox.next()).message.id, msg.id)
      yield* settle(bob.list)
      yield* settle(bob.list)
      const takeover = yield* world.session({ sessionId: B_ID, name: "bob", frame: { features: [RECEIVED_V1] } })
      assert.strictEqual((yield* takeover.client.next("message")).message.id, msg.id)
    }))
})
