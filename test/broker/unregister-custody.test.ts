/**
 * A `received-v1` receiver that leaves by `unregister` (docs/architecture.md,
 * "a receiver stops reading, then leaves": it gets the mail, in order, when it
 * registers again). Its client confirms nothing after its `unregister`, so
 * what the broker gave it and it never confirmed goes back at the
 * `unregister` (Custody.handBack) — custody first, then its write in
 * progress, then its outbox — and mail sent to the session afterwards queues
 * behind it. It used to go back only when the connection closed, behind that
 * newer mail. In memory mode and durable (a memory "disk"), in memory.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { RECEIVED_V1, TAKEOVER_V1 } from "../../src/protocol/features.ts"
import { encodeFrames } from "../../src/protocol/index.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { assertDelivered } from "../support/assertions.ts"
import { message, messageFor, registerFrame, send, type Session } from "../support/broker.ts"
import { durableBroker } from "../support/durable.ts"
import { type MemoryNetwork, memoryNetwork } from "../support/memory.ts"
import type { WireClient } from "../support/wire.ts"

const CONFIRMING = { frame: { features: [RECEIVED_V1] } }

/** A broker in `mode` on a fresh memory network (durable: over a memory "disk"). */
const brokerIn = (mode: "memory" | "durable", options: { readonly linkCapacity?: number; readonly outboxCapacity?: number } = {}) =>
  Effect.gen(function*() {
    const world = yield* memoryNetwork(options.linkCapacity === undefined ? {} : { linkCapacity: options.linkCapacity })
    const disk = makeMemoryMailState()
    const core = options.outboxCapacity === undefined ? {} : { outboxCapacity: options.outboxCapacity }
    const broker = mode === "durable" ? yield* durableBroker(world, disk, core) : yield* world.startBroker(core)
    return { world, disk, broker }
  })

/** `receiver` unregisters; `sender` sees it leave (the broker handled the `unregister`). */
const unregister = (receiver: WireClient, sender: Session) =>
  Effect.gen(function*() {
    yield* receiver.send({ type: "unregister" })
    yield* sender.client.next("session_left", (frame) => frame.sessionId === "r1")
  })

/** The texts of the next `count` messages `client` reads. */
const nextTexts = (client: WireClient, count: number) =>
  Effect.gen(function*() {
    const texts: Array<string> = []
    for (let i = 0; i < count; i++) texts.push((yield* client.next("message")).message.content.text)
    return texts
  })

/** r1 reads `a` without confirming it and unregisters; s1 then sends `b`, queued. */
const readThenLeave = (world: MemoryNetwork) =>
  Effect.gen(function*() {
    const receiver = yield* world.session({ sessionId: "r1", ...CONFIRMING })
    const sender = yield* world.session({ sessionId: "s1" })
    const a = message("a")
    assertDelivered(yield* send(sender.client, "r1", a))
    yield* messageFor(receiver.client, a.id)
    yield* unregister(receiver.client, sender)
    const ack = yield* send(sender.client, "r1", message("b"))
    assert.strictEqual(ack.type === "delivered" ? ack.delivery : ack.type, "queued")
    return { receiver, sender }
  })

describe("received-v1: a receiver that unregisters gets its unconfirmed mail back first when it registers again", () => {
  for (const mode of ["memory", "durable"] as const) {
    it.effect(`${mode}: its connection closes, then it registers again: the sender's mail in send order`, () =>
      Effect.gen(function*() {
        const { world } = yield* brokerIn(mode)
        const { receiver } = yield* readThenLeave(world)
        yield* receiver.client.destroy
        yield* receiver.client.waitGone()
        const back = yield* world.session({ sessionId: "r1", label: "r1 again", ...CONFIRMING })
        assert.deepStrictEqual(yield* nextTexts(back.client, 2), ["a", "b"])
      }))

    it.effect(`${mode}: it registers again on a new connection before the old one closed: the sender's mail in send order`, () =>
      Effect.gen(function*() {
        const { world } = yield* brokerIn(mode)
        const receiver = yield* world.session({ sessionId: "r1", ...CONFIRMING })
        const sender = yield* world.session({ sessionId: "s1" })
        const a = message("a")
        assertDelivered(yield* send(sender.client, "r1", a))
        yield* messageFor(receiver.client, a.id)
        yield* unregister(receiver.client, sender)
        const back = yield* world.session({ sessionId: "r1", label: "r1 again", ...CONFIRMING })
        // Live now: b goes straight out, after the flush that gave back a.
        assertDelivered(yield* send(sender.client, "r1", message("b")))
        yield* receiver.client.destroy
        assert.deepStrictEqual(yield* nextTexts(back.client, 2), ["a", "b"])
      }))
  }

  it.effect("durable: a broker killed after the unregister restores the mail in the same order", () =>
    Effect.gen(function*() {
      const { world, disk, broker } = yield* brokerIn("durable")
      yield* readThenLeave(world)
      yield* broker.crash
      yield* durableBroker(world, disk)
      const back = yield* world.session({ sessionId: "r1", label: "r1 again", ...CONFIRMING })
      assert.deepStrictEqual(yield* nextTexts(back.client, 2), ["a", "b"])
    }))

  it.effect("mail its client confirmed before the unregister is not given back", () =>
    Effect.gen(function*() {
      const { world } = yield* brokerIn("memory")
      const receiver = yield* world.session({ sessionId: "r1", ...CONFIRMING })
      const sender = yield* world.session({ sessionId: "s1" })
      const a = message("a")
      assertDelivered(yield* send(sender.client, "r1", a))
      yield* messageFor(receiver.client, a.id)
      // Every frame it read, a's among them.
      yield* receiver.client.send({ type: "received", frames: receiver.client.received().length })
      yield* unregister(receiver.client, sender)
      yield* send(sender.client, "r1", message("b"))
      const back = yield* world.session({ sessionId: "r1", label: "r1 again", ...CONFIRMING })
      assert.deepStrictEqual(yield* nextTexts(back.client, 1), ["b"])
      yield* back.client.roundTrip
      yield* back.client.expectNothing("message")
    }))

  it.effect("a receiver stalled mid-write unregisters, and registers again on a new connection: what its link took, the write's rest, its outbox and what was held back come first, in order", () =>
    Effect.gen(function*() {
      const { world } = yield* brokerIn("memory", { linkCapacity: 4, outboxCapacity: 4 })
      const sender = yield* world.session({ sessionId: "s1" })
      const receiver = yield* world.session({ sessionId: "r1", frame: { features: [RECEIVED_V1, TAKEOVER_V1] } })
      yield* receiver.client.pause
      const burst = Array.from({ length: 40 }, (_, i) => message(`burst ${i}`))
      yield* sender.client.sendRaw(encodeFrames(burst.map((msg) => JSON.stringify({ type: "send", to: "r1", message: msg }))))
      yield* unregister(receiver.client, sender)
      const later = message("after the unregister")
      yield* send(sender.client, "r1", later)
      // The old connection is still open, and still not read: nothing comes back from its close.
      const back = yield* world.session({ sessionId: "r1", label: "r1 again", ...CONFIRMING })
      yield* back.client.next("message", (frame) => frame.message.id === later.id)
      const texts = back.client.received().flatMap((frame) => frame.type === "message" ? [frame.message.content.text] : [])
      assert.deepStrictEqual(texts, [...burst.map((msg) => msg.content.text), later.content.text])
    }))
})

describe("received-v1 custody on a connection that registers again without it", () => {
  for (const leave of ["unregister", "close"] as const) {
    it.effect(`a base session after a received-v1 one on the same connection gets its mail once (it leaves by ${leave})`, () =>
      Effect.gen(function*() {
        const world = yield* memoryNetwork()
        yield* world.startBroker()
        const sender = yield* world.session({ sessionId: "s1" })
        const conn = yield* world.session({ sessionId: "r1", ...CONFIRMING })
        yield* unregister(conn.client, sender)
        yield* conn.client.send(registerFrame({ sessionId: "r2" }))
        const registered = yield* conn.client.next("registered", (frame) => frame.sessionId === "r2")
        assert.notInclude(registered.features ?? [], RECEIVED_V1, "r2 is a base registration")
        const m = message("for the base session")
        assertDelivered(yield* send(sender.client, "r2", m))
        yield* messageFor(conn.client, m.id)
        if (leave === "unregister") yield* conn.client.send({ type: "unregister" })
        else yield* conn.client.destroy
        yield* sender.client.next("session_left", (frame) => frame.sessionId === "r2")
        // Written to a base registration, it was delivered: custody must not have kept it to hand back.
        const back = yield* world.session({ sessionId: "r2", label: "r2 again" })
        yield* back.client.roundTrip
        yield* back.client.expectNothing("message")
      }))
  }
})
