/**
 * Under `confirmWhenHandled` the client confirms what came before the oldest
 * message its consumer has not handled, as it goes, not only once nothing is
 * unhandled: a consumer slower than the stream (a host's checkpoints) leaves
 * the broker holding the unhandled messages, not everything read since the
 * stream last ran dry. A durable broker on the in-memory network, under
 * TestClock: its store shows what it still holds. A client made to withhold
 * its confirmations (its consumer's journal is not durable yet) confirms
 * nothing until it is released, or until more than its `withholdLimit` of
 * messages are withheld.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { makeMemory, makeMemoryMailState } from "../../src/store/MailStore.ts"
import { message } from "../support/broker.ts"
import { advance, memoryNetwork, settle } from "../support/memory.ts"
import type { Dialer } from "../../src/client/Dialer.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { makeMemoryClient, memoryClientOptions } from "./support.ts"

const A_ID = "aaaaaaaa-8888-4000-8000-00000000000a"
const B_ID = "bbbbbbbb-8888-4000-8000-00000000000b"

describe("confirmWhenHandled: the client confirms up to the oldest unhandled message", () => {
  it.effect("the broker forgets what the consumer handled and keeps the message it is on and those after it", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      yield* world.startBroker({ idleExit: null, store: makeMemory(disk) })
      const { client: bob } = yield* makeMemoryClient(memoryClientOptions(world, B_ID, "bob", { confirmWhenHandled: true }))
      yield* settle(bob.connect)
      const alice = yield* world.session({ sessionId: A_ID, name: "alice" })
      const sent = [message("handled"), message("being handled"), message("waiting")]
      for (const m of sent) yield* alice.client.send({ type: "send", to: "bob", message: m })
      // A round trip on bob: all three are read, and none is handled (no consumer yet), so none is confirmed.
      yield* settle(bob.list)
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(disk.mail.size, 3, "test setup: the broker holds all three")
      // bob's consumer handles the first and never finishes the second (a checkpoint that takes its time).
      yield* Effect.forkScoped(
        Stream.runForEach(bob.messages, (m) => m.message.id === sent[0]?.id ? bob.handled(m) : Effect.never),
        { startImmediately: true }
      )
      // Two round trips on bob: the confirmation went out before the first ended, the broker handled it before the second.
      yield* settle(bob.list)
      yield* settle(bob.list)
      yield* advance(LAZY_FLUSH)
      const held = [...disk.mail.values()].map((stored) => sent.findIndex((m) => stored.text.includes(m.id)))
      assert.deepStrictEqual(held.sort(), [1, 2], "the broker keeps the second and third, not the first")
    }))

  it.effect("a message an earlier connection read and nobody handled bounds the next connection at nothing, until it is handled", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      yield* world.startBroker({ idleExit: null, store: makeMemory(disk) })
      const dialed: Array<Connection> = []
      const dial: Dialer = (address) => Effect.tap(world.dial(address), (connection) => Effect.sync(() => void dialed.push(connection)))
      const { client: bob } = yield* makeMemoryClient(
        memoryClientOptions(world, B_ID, "bob", { confirmWhenHandled: true, dial, reconnectBaseMs: 20 })
      )
      yield* settle(bob.connect)
      const alice = yield* world.session({ sessionId: A_ID, name: "alice" })
      const first = message("read on the first connection")
      yield* alice.client.send({ type: "send", to: "bob", message: first })
      yield* settle(bob.list)
      // The connection drops; bob reconnects and is sent the unconfirmed first message again, then a second.
      yield* settle(Effect.forEach(dialed, (c) => c.destroy, { discard: true }))
      yield* advance("20 millis")
      yield* settle(bob.connect)
      const second = message("read on the second connection")
      yield* alice.client.send({ type: "send", to: "bob", message: second })
      yield* settle(bob.list)
      yield* settle(bob.list)
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(dialed.length, 2, "test setup: bob reconnected")
      assert.strictEqual(disk.mail.size, 2, "nothing is confirmed while the first connection's message is unhandled")

      // The consumer handles the first and stays on the second: the copy of the first is confirmed now.
      yield* Effect.forkScoped(
        Stream.runForEach(bob.messages, (m) => m.message.id === first.id ? bob.handled(m) : Effect.never),
        { startImmediately: true }
      )
      yield* settle(bob.list)
      yield* settle(bob.list)
      yield* advance(LAZY_FLUSH)
      const held = [...disk.mail.values()].map((stored) => stored.text.includes(second.id) ? "second" : "other")
      assert.deepStrictEqual(held, ["second"])
    }))

  it.effect("a message handled while a new connection restores its topics is confirmed once the connection is adopted", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      yield* world.startBroker({ idleExit: null, store: makeMemory(disk) })
      const alice = yield* world.session({ sessionId: A_ID, name: "alice" })
      // bob was here once, so mail for him waits in his mailbox while he is away.
      const before = yield* makeMemoryClient(memoryClientOptions(world, B_ID, "bob"))
      yield* settle(before.client.connect)
      yield* before.close
      const waiting = message("waiting in the mailbox")
      yield* alice.client.send({ type: "send", to: "bob", message: waiting })

      // bob's next client gets it with its registration and handles it at once, while it still restores a topic.
      const { client: bob } = yield* makeMemoryClient(memoryClientOptions(world, B_ID, "bob", { confirmWhenHandled: true }))
      yield* bob.seedTopics({ subscriptions: [{ topic: "builds", awaitRelease: false }], publications: [] })
      yield* Effect.forkScoped(Stream.runForEach(bob.messages, (m) => bob.handled(m)), { startImmediately: true })
      yield* settle(bob.connect)
      yield* settle(bob.list)
      yield* settle(bob.list)
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(disk.mail.size, 0, "the broker forgot it: it was confirmed")
    }))

  it.effect("withheld (a journal not durable yet): nothing is confirmed, handled or not, until released; then what was handled is", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      yield* world.startBroker({ idleExit: null, store: makeMemory(disk) })
      const { client: bob } = yield* makeMemoryClient(
        memoryClientOptions(world, B_ID, "bob", { confirmWhenHandled: true, withholdConfirmations: true })
      )
      yield* settle(bob.connect)
      const alice = yield* world.session({ sessionId: A_ID, name: "alice" })
      const sent = [message("handled"), message("also handled"), message("being handled")]
      for (const m of sent) yield* alice.client.send({ type: "send", to: "bob", message: m })
      // bob's consumer handles the first two and never finishes the third.
      yield* Effect.forkScoped(
        Stream.runForEach(bob.messages, (m) => m.message.id === sent[2]?.id ? Effect.never : bob.handled(m)),
        { startImmediately: true }
      )
      yield* settle(bob.list)
      yield* settle(bob.list)
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(disk.mail.size, 3, "withheld: the broker keeps what was handled too")

      yield* bob.releaseConfirmations
      // Two round trips on bob: the confirmation went out before the first ended, the broker handled it before the second.
      yield* settle(bob.list)
      yield* settle(bob.list)
      yield* advance(LAZY_FLUSH)
      const held = [...disk.mail.values()].map((stored) => sent.findIndex((m) => stored.text.includes(m.id)))
      assert.deepStrictEqual(held, [2], "released: the handled ones are confirmed, the one in hand is not")
    }))

  it.effect("withheld with a limit: the count is reported, and the first message past it releases all of them, so the broker forgets them", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      yield* world.startBroker({ idleExit: null, store: makeMemory(disk) })
      const { client: bob } = yield* makeMemoryClient(
        memoryClientOptions(world, B_ID, "bob", { confirmWhenHandled: true, withholdConfirmations: true, withholdLimit: 2 })
      )
      yield* settle(bob.connect)
      assert.deepStrictEqual(yield* bob.withheld, { withholding: true, messages: 0, limitReleased: undefined })
      const alice = yield* world.session({ sessionId: A_ID, name: "alice" })
      yield* Effect.forkScoped(Stream.runForEach(bob.messages, bob.handled), { startImmediately: true })
      for (const text of ["one", "two"]) yield* alice.client.send({ type: "send", to: "bob", message: message(text) })
      // Two round trips on bob: both read and handled, and a confirmation would have reached the broker.
      yield* settle(bob.list)
      yield* settle(bob.list)
      yield* advance(LAZY_FLUSH)
      assert.deepStrictEqual(yield* bob.withheld, { withholding: true, messages: 2, limitReleased: undefined })
      assert.strictEqual(disk.mail.size, 2, "at the limit: both withheld, the broker keeps them")

      yield* alice.client.send({ type: "send", to: "bob", message: message("three") })
      yield* settle(bob.list)
      yield* settle(bob.list)
      yield* advance(LAZY_FLUSH)
      assert.deepStrictEqual(yield* bob.withheld, { withholding: false, messages: 0, limitReleased: 3 })
      assert.strictEqual(disk.mail.size, 0, "past the limit: released, all three confirmed")

      // Released for good: what comes next is confirmed as it is handled, and not counted.
      yield* alice.client.send({ type: "send", to: "bob", message: message("four") })
      yield* settle(bob.list)
      yield* settle(bob.list)
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(disk.mail.size, 0)
      assert.deepStrictEqual(yield* bob.withheld, { withholding: false, messages: 0, limitReleased: 3 })
    }))

  it.effect("withheld with a limit: the copies a restarted broker delivers again are not counted twice", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* world.startBroker({ idleExit: null, store: makeMemory(disk) })
      const { client: bob } = yield* makeMemoryClient(
        memoryClientOptions(world, B_ID, "bob", { confirmWhenHandled: true, withholdConfirmations: true, withholdLimit: 2, reconnectBaseMs: 500 })
      )
      yield* settle(bob.connect)
      const alice = yield* world.session({ sessionId: A_ID, name: "alice" })
      yield* Effect.forkScoped(Stream.runForEach(bob.messages, bob.handled), { startImmediately: true })
      for (const text of ["one", "two"]) yield* alice.client.send({ type: "send", to: "bob", message: message(text) })
      yield* settle(bob.list)
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(disk.mail.size, 2, "test setup: both stored, unconfirmed")
      // The broker dies; the next one restores both from its store and delivers them to bob again.
      yield* first.crash
      yield* world.startBroker({ idleExit: null, store: makeMemory(disk) })
      yield* advance("500 millis")
      assert.deepInclude(yield* bob.status, { connected: true, connections: 2 })
      yield* settle(bob.list)
      yield* settle(bob.list)
      assert.deepStrictEqual(yield* bob.withheld, { withholding: true, messages: 2, limitReleased: undefined })
      assert.strictEqual(disk.mail.size, 2, "still withheld: the copies did not pass the limit")
    }))
})
