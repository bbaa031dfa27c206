/**
 * `rejoin-v1`: a client's own rejoin (docs/protocol.md; docs/testing.md,
 * known issue 22). A client that left its connection (its liveness probe
 * failed) registers again before the broker saw the old one end. With the
 * same `instanceId` the broker knows it is the client's own rejoin: the old
 * connection is ended at once, not told `taken_over`, and the mail it was
 * given and never confirmed, the rest of its write in progress, then its
 * outbox go to the new connection in that order — a sender's order holds.
 * Another instance (or a client without the extension) takes the id over as
 * before. In memory, accepted and adopted (the read pump) connections, and
 * over a real Unix socket.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import { type BrokerFrame, encodeFrames } from "../../src/protocol/index.ts"
import { RECEIVED_V1, REJOIN_V1, TAKEOVER_V1 } from "../../src/protocol/features.ts"
import { MAX_STATUS_LENGTH } from "../../src/protocol/limits.ts"
import { makeMemory, makeMemoryMailState, type MailStoreService } from "../../src/store/MailStore.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { makeInMemoryPair } from "../../src/transport/InMemory.ts"
import { ackFor, message, register, registerFrame, withBroker } from "../support/broker.ts"
import { memoryNetwork, step } from "../support/memory.ts"
import { type WireClient, wireOverConnection } from "../support/wire.ts"

const BURST = 40

/** A client granted `received-v1` (it never confirms here), `takeover-v1` and `rejoin-v1`, as instance `instanceId`. */
const asInstance = (instanceId: string | undefined, features: ReadonlyArray<string> = [RECEIVED_V1, TAKEOVER_V1, REJOIN_V1]) => ({
  features,
  ...(instanceId === undefined ? {} : { instanceId })
})

/** The message texts `client` has received, in order. */
const textsOf = (client: { readonly received: () => ReadonlyArray<BrokerFrame> }): Array<string> =>
  client.received().flatMap((frame) => frame.type === "message" ? [frame.message.content.text] : [])

/**
 * The old connection stops reading with the burst on its way: its link holds four frames, the writer's
 * write in progress waits for room with its rest untaken, its outbox is full and the sender's rest is
 * held back. Then `twin` registers again on a new connection as `frame` says, the sender sends one more,
 * and the new connection's message texts up to that one are returned, with the old connection's frames.
 * With `awaitLater` false the newer one is not waited for (a takeover holds it until the old close).
 */
const replaceWhileStalled = (
  adopted: boolean,
  oldFrame: ReturnType<typeof asInstance>,
  newFrame: ReturnType<typeof asInstance>,
  awaitLater = true
) =>
  Effect.gen(function*() {
    const world = yield* memoryNetwork({ linkCapacity: 4 })
    yield* world.startBroker({ outboxCapacity: 4, adopted })
    const sender = yield* world.session({ sessionId: "sender" })
    const old = yield* world.session({ sessionId: "twin", frame: oldFrame })
    yield* old.client.pause
    const burst = Array.from({ length: BURST }, (_, i) => message(`burst ${i}`))
    yield* sender.client.sendRaw(encodeFrames(burst.map((msg) => JSON.stringify({ type: "send", to: "twin", message: msg }))))
    const replacement = yield* world.session({ sessionId: "twin", label: "replacement", frame: newFrame })
    const later = message("after the register")
    yield* sender.client.send({ type: "send", to: "twin", message: later })
    if (awaitLater) yield* replacement.client.next("message", (frame) => frame.message.id === later.id)
    const texts = textsOf(replacement.client)
    return { texts, old, replacement, registered: replacement.registered }
  })

const inOrder = [...Array.from({ length: BURST }, (_, i) => `burst ${i}`), "after the register"]

/** Waits until every message of the burst and the newer one has reached `client`, then checks each came once, in order. */
const allArrive = (client: WireClient) =>
  Effect.gen(function*() {
    for (const text of inOrder) {
      if (!textsOf(client).includes(text)) yield* client.next("message", (frame) => frame.message.content.text === text)
    }
    assert.deepStrictEqual(textsOf(client), inOrder)
  })

describe("rejoin-v1: a client's own rejoin keeps its senders' order", () => {
  for (const adopted of [false, true]) {
    const how = adopted ? "adopted (read pump)" : "accepted"
    it.effect(`${how}: the same instance registers again while its old connection is stalled mid-write: every message, in order, then the newer one`, () =>
      Effect.gen(function*() {
        const { texts, old, registered } = yield* replaceWhileStalled(adopted, asInstance("instance-1"), asInstance("instance-1"))
        assert.include(registered.features ?? [], REJOIN_V1)
        // What the old link took (never confirmed), the write's untaken rest, the outbox, what was held back.
        assert.deepStrictEqual(texts, inOrder)
        // Its client left it: ended at once, not told `taken_over`.
        yield* old.client.resume
        yield* old.client.waitClosed()
        assert.notInclude(old.client.received().map((frame) => frame.type), "taken_over")
      }))
  }

  // A takeover by another instance: the unconfirmed mail and the write's untaken rest come back at the old
  // connection's close, and the sender's mail handed over or sent since waits for them (CustodyHold.ts): the
  // newer message arrives only once the old client, resumed, lets its connection close.
  it.effect("another instance takes the id over: the old connection is told taken_over, and every message reaches the new one once, in order", () =>
    Effect.gen(function*() {
      const { old, replacement } = yield* replaceWhileStalled(false, asInstance("instance-1"), asInstance("instance-2"), false)
      yield* old.client.resume
      yield* old.client.waitClosed()
      assert.strictEqual(old.client.received().at(-1)?.type, "taken_over")
      yield* allArrive(replacement.client)
    }))

  it.effect("the same instanceId without rejoin-v1 asked for is ignored: a takeover as before", () =>
    Effect.gen(function*() {
      const plain = [RECEIVED_V1, TAKEOVER_V1]
      const { old, replacement, registered } = yield* replaceWhileStalled(
        false,
        asInstance("instance-1", plain),
        asInstance("instance-1", plain),
        false
      )
      assert.notInclude(registered.features ?? [], REJOIN_V1)
      yield* old.client.resume
      yield* old.client.waitClosed()
      assert.strictEqual(old.client.received().at(-1)?.type, "taken_over")
      yield* allArrive(replacement.client)
    }))

  // Kept only where granted: an old connection that sent an `instanceId` without asking for `rejoin-v1` is
  // no instance, so a later register with the extension and the same id is a takeover, not its rejoin.
  it.effect("an instanceId sent without rejoin-v1 is not kept: a later rejoin-v1 register with the same id takes the id over", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ idleExit: null })
      const old = yield* world.session({ sessionId: "twin", frame: asInstance("instance-1", [RECEIVED_V1, TAKEOVER_V1]) })
      yield* world.session({ sessionId: "twin", label: "new", frame: asInstance("instance-1") })
      yield* old.client.waitClosed()
      assert.include(old.client.received().map((frame) => frame.type), "taken_over")
    }))
})

describe("rejoin-v1 while the old connection is closing", () => {
  // The broker closes the old connection (a protocol error) and its close settles the write in progress,
  // then waits in the transport's destroy (a read pump's destroy is asynchronous; a gate holds it here, so
  // the interleaving is exact). The session is still held, so the client's register meanwhile is its rejoin:
  // the write's untaken rest must go to the new connection with the custody, not after it at the close.
  it.effect("the same instance registers again while the old close waits in destroy: every message, in order, then the newer one", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork({ linkCapacity: 4 })
      const { core } = yield* world.startBroker({ outboxCapacity: 4 })
      const sender = yield* world.session({ sessionId: "sender" })
      const [clientEnd, brokerEnd] = yield* makeInMemoryPair({ capacity: 4, ids: [900, 901] })
      const destroying = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      const gated: Connection = {
        ...brokerEnd,
        destroy: Effect.andThen(Deferred.succeed(destroying, undefined), Effect.andThen(Deferred.await(gate), brokerEnd.destroy))
      }
      yield* Effect.forkScoped(core.accept(gated))
      const old = yield* wireOverConnection(clientEnd, "old", (action) => Effect.asVoid(step(action)))
      yield* old.send(registerFrame({ sessionId: "twin", frame: asInstance("instance-1") }))
      yield* old.next("registered")
      yield* old.pause
      const burst = Array.from({ length: BURST }, (_, i) => message(`burst ${i}`))
      yield* sender.client.sendRaw(encodeFrames(burst.map((msg) => JSON.stringify({ type: "send", to: "twin", message: msg }))))
      yield* old.send({ type: "no-such-frame" })
      assert.isTrue(Deferred.isDoneUnsafe(destroying), "the old connection's close reached destroy")
      const replacement = yield* world.session({ sessionId: "twin", label: "replacement", frame: asInstance("instance-1") })
      yield* step(Deferred.succeed(gate, undefined))
      const later = message("after the register")
      yield* sender.client.send({ type: "send", to: "twin", message: later })
      yield* replacement.client.next("message", (frame) => frame.message.id === later.id)
      const texts = textsOf(replacement.client)
      assert.deepStrictEqual(texts, inOrder)
    }))
})

describe("rejoin-v1 while the old connection is ending", () => {
  // The broker refuses the old connection's presence (a status over its limit): an `end` close, which waits
  // for the write in progress (its client reads nothing). The same instance registers again meanwhile: the
  // write is settled then. When the old client reads again, that write completes: it must record nothing,
  // or its frames go into custody a second time and come back again at the close (PeerWriter.completed).
  for (const adopted of [false, true]) {
    const how = adopted ? "adopted (read pump)" : "accepted"
    it.effect(`${how}: a write completing after the rejoin settled it records nothing: every message once, in order`, () =>
      Effect.gen(function*() {
        const world = yield* memoryNetwork({ linkCapacity: 4 })
        yield* world.startBroker({ outboxCapacity: 4, adopted })
        const sender = yield* world.session({ sessionId: "sender" })
        const old = yield* world.session({ sessionId: "twin", frame: asInstance("instance-1") })
        yield* old.client.pause
        const burst = Array.from({ length: BURST }, (_, i) => message(`burst ${i}`))
        yield* sender.client.sendRaw(encodeFrames(burst.map((msg) => JSON.stringify({ type: "send", to: "twin", message: msg }))))
        yield* old.client.send({ type: "presence", status: "x".repeat(MAX_STATUS_LENGTH + 1) })
        const replacement = yield* world.session({ sessionId: "twin", label: "replacement", frame: asInstance("instance-1") })
        yield* old.client.resume
        yield* old.client.waitClosed()
        const later = message("after the register")
        yield* sender.client.send({ type: "send", to: "twin", message: later })
        yield* replacement.client.next("message", (frame) => frame.message.id === later.id)
        assert.deepStrictEqual(textsOf(replacement.client), inOrder)
      }))
  }
})

describe("rejoin-v1 while the old connection's writer waits for the store", () => {
  // A durable broker writes a delivery to a client without `received-v1` only once its changes are stored; the
  // store is held here, so the old connection's writer waits with the message queued. Its presence is refused:
  // the error frame is queued behind it and the `end` close waits for that writer. The same instance registers
  // again (the message goes to the new connection); then the store commits. Nothing more is written to the old
  // connection (protocol.md): its writer, going on after the store, finds writing over (PeerWriter.step).
  for (const adopted of [false, true]) {
    const how = adopted ? "adopted (read pump)" : "accepted"
    it.effect(`${how}: nothing is written to the old connection after the rejoin, though its writer was waiting`, () =>
      Effect.gen(function*() {
        const world = yield* memoryNetwork({ linkCapacity: 4 })
        const memory = makeMemory(makeMemoryMailState())
        const stored = yield* Deferred.make<void>()
        const hold = { commits: false }
        const store: MailStoreService = {
          ...memory,
          commit: (batch) => Effect.suspend(() => hold.commits ? Effect.andThen(Deferred.await(stored), memory.commit(batch)) : memory.commit(batch))
        }
        yield* world.startBroker({ outboxCapacity: 4, adopted, store })
        const sender = yield* world.session({ sessionId: "sender" })
        const plain = [TAKEOVER_V1, REJOIN_V1]
        const old = yield* world.session({ sessionId: "twin", frame: asInstance("instance-1", plain) })
        hold.commits = true
        const hello = message("hello")
        yield* sender.client.send({ type: "send", to: "twin", message: hello })
        yield* old.client.send({ type: "presence", status: "x".repeat(MAX_STATUS_LENGTH + 1) })
        const replacement = yield* world.session({ sessionId: "twin", label: "replacement", frame: asInstance("instance-1", plain) })
        hold.commits = false
        yield* step(Deferred.succeed(stored, undefined))
        yield* old.client.waitClosed()
        yield* replacement.client.next("message", (frame) => frame.message.id === hello.id)
        assert.deepStrictEqual(old.client.received().map((frame) => frame.type), ["registered"])
      }))
  }
})

describe("rejoin-v1 over a Unix socket", () => {
  // The old client stopped reading with 800 KB on its way (400 messages of 2 KB): the socket's buffers hold part of it (written,
  // never confirmed), a write waits with its rest, the outbox holds more. The same instance registers again.
  it.live("the same instance registers again while its old socket is full: the whole burst, in order, then the newer message", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null, mailboxCapacity: 4096 })
      const sender = yield* broker.session({ sessionId: "sender" })
      const old = yield* broker.session({ sessionId: "twin", frame: asInstance("instance-1") })
      yield* old.client.pause
      const burst = Array.from({ length: 400 }, (_, i) => message(`burst ${i}:`.padEnd(2048, ".")))
      yield* sender.client.sendRaw(encodeFrames(burst.map((msg) => JSON.stringify({ type: "send", to: "twin", message: msg }))))
      for (const msg of burst) assert.strictEqual((yield* ackFor(sender.client, msg.id)).type, "delivered")
      const replacement = yield* broker.connect("replacement")
      yield* register(replacement, { sessionId: "twin", frame: asInstance("instance-1") })
      const later = message("after the register")
      yield* sender.client.send({ type: "send", to: "twin", message: later })
      yield* replacement.next("message", (frame) => frame.message.id === later.id)
      const texts = textsOf(replacement)
      assert.strictEqual(texts.length, burst.length + 1)
      assert.deepStrictEqual(texts.slice(0, -1).map((text) => Number(/^burst (\d+):/.exec(text)?.[1])), burst.map((_, i) => i))
      assert.strictEqual(texts.at(-1), "after the register")
      yield* old.client.resume
      yield* old.client.waitClosed()
      assert.notInclude(old.client.received().map((frame) => frame.type), "taken_over")
    }))
})

describe("rejoin-v1: negotiation", () => {
  it.effect("a base client (no features) is granted nothing new and its `instanceId` changes nothing", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ idleExit: null })
      const base = yield* world.session({ sessionId: "base", frame: { instanceId: "instance-1" } })
      assert.deepStrictEqual(base.registered.features, ["exact-send-v1"])
      assert.deepStrictEqual(Object.keys(base.registered).sort(), ["features", "sessionId", "type"])
      const asking = yield* world.session({ sessionId: "asking", frame: asInstance("instance-2", [REJOIN_V1]) })
      assert.deepStrictEqual(asking.registered.features, ["exact-send-v1", REJOIN_V1])
    }))

  // "" would make every client that sends it one instance: two separate clients would be taken for one's rejoin.
  it.effect("an empty `instanceId` is refused: a protocol error, the connection is closed without `registered`", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ idleExit: null })
      const client = yield* world.connect("empty")
      yield* client.send(registerFrame({ sessionId: "twin", frame: asInstance("") }))
      yield* client.waitClosed()
      assert.notInclude(client.received().map((frame) => frame.type), "registered")
    }))
})
