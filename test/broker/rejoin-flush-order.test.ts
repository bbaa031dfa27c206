/**
 * A session's old connection ends just before the same client registers
 * again (no takeover: the broker saw the session leave first). Its mail goes
 * to the mailbox; the new registration's flush fills the new outbox and parks
 * the rest behind it. The sender's mail still held back for the dead
 * connection is refused there and requeued to the live session: it must
 * queue behind the parked flush (Output.forceEnqueue → parkBehind), not be
 * forced into the outbox ahead of it — the sender's order holds. Likewise a
 * closing sender's parked mail (`OutputEnd.forceParked`) queues behind a
 * recipient's parked flush that holds its older mail; another sender's is
 * forced as before, so it still precedes that sender's `session_left`. A
 * sender that leaves with mail in the recipient's parked flush has its
 * `session_left` withheld from that recipient until the last of it is
 * offered — also across a return: back meanwhile, it is heard to join again
 * and not to leave; gone again, its one `session_left` follows the mail,
 * whichever owners (the parked flush, a due replace message) held it. A live
 * sender's new mail, routed or offered by its drainer, waits until its
 * older mail in the recipient's parked flush is offered (Peer.parkedMail,
 * by sender: another sender's does not wait), so a small new
 * message cannot slip into the outbox ahead of the larger flushed ones. In
 * memory, accepted and adopted (the read pump) connections.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { type BrokerFrame, encodeFrames } from "../../src/protocol/index.ts"
import { DELIVERY_V1, RECEIVED_V1, REJOIN_V1, TAKEOVER_V1 } from "../../src/protocol/features.ts"
import { message, registerFrame, type Session } from "../support/broker.ts"
import { type MemoryNetwork, memoryNetwork, step } from "../support/memory.ts"
import { settle } from "../support/steps.ts"
import { type WireClient, wireOverConnection } from "../support/wire.ts"

const BURST = 40
const features = [RECEIVED_V1, TAKEOVER_V1, REJOIN_V1]
const inOrder = [...Array.from({ length: BURST }, (_, i) => `burst ${i}`), "after the register"]

/**
 * `twin` leaves; `from` queues twenty messages for it in the mailbox; `twin`
 * registers again on a new connection and does not read: four fill its
 * outbox (capacity 4), the rest of the flush is parked with its reader.
 */
const twinBackNotReading = (world: MemoryNetwork, from: Session) =>
  Effect.gen(function*() {
    const first = yield* world.session({ sessionId: "twin" })
    yield* first.client.send({ type: "unregister" })
    yield* first.client.roundTrip
    const queued = Array.from({ length: 20 }, (_, i) => message(`queued ${i}`))
    yield* from.client.sendRaw(encodeFrames(queued.map((msg) => JSON.stringify({ type: "send", to: "twin", message: msg }))))
    yield* from.client.roundTrip
    const conn = yield* settle(world.network.dial(world.address)).pipe(Effect.orDie)
    const twin = yield* wireOverConnection(conn, "twin", (action) => Effect.asVoid(step(action)))
    yield* twin.pause
    yield* step(conn.writeAll([JSON.stringify(registerFrame({ sessionId: "twin" }))]))
    return { twin, queued }
  })

describe("the old connection ends just before the same client registers again", () => {
  for (const adopted of [false, true]) {
    it.effect(`${adopted ? "adopted" : "accepted"}: the held-back mail queues behind the parked mailbox flush`, () =>
      Effect.gen(function*() {
        const world = yield* memoryNetwork({ linkCapacity: 4 })
        yield* world.startBroker({ outboxCapacity: 4, adopted })
        const sender = yield* world.session({ sessionId: "sender" })
        const oldConn = yield* settle(world.network.dial(world.address)).pipe(Effect.orDie)
        const old = yield* wireOverConnection(oldConn, "old", (action) => Effect.asVoid(step(action)))
        yield* old.send(registerFrame({ sessionId: "twin", frame: { features, instanceId: "instance-1" } }))
        yield* old.next("registered")
        // The old connection stops reading: its link, its write and its outbox fill, the sender's rest is held back.
        yield* old.pause
        const burst = Array.from({ length: BURST }, (_, i) => message(`burst ${i}`))
        yield* sender.client.sendRaw(encodeFrames(burst.map((msg) => JSON.stringify({ type: "send", to: "twin", message: msg }))))
        const conn = yield* settle(world.network.dial(world.address)).pipe(Effect.orDie)
        const replacement = yield* wireOverConnection(conn, "replacement", (action) => Effect.asVoid(step(action)))
        const reg = JSON.stringify(registerFrame({ sessionId: "twin", frame: { features, instanceId: "instance-1" } }))
        // In one step: a protocol error ends the old connection, and the register follows at once.
        yield* step(Effect.gen(function*() {
          yield* oldConn.writeAll([JSON.stringify({ type: "no-such-frame" })])
          yield* conn.writeAll([reg])
        }))
        yield* replacement.next("registered")
        const later = message("after the register")
        yield* sender.client.send({ type: "send", to: "twin", message: later })
        yield* replacement.next("message", (frame) => frame.message.id === later.id)
        const texts = replacement.received().flatMap((frame) => frame.type === "message" ? [frame.message.content.text] : [])
        assert.deepStrictEqual(texts, inOrder)
      }))
  }
})

describe("a sender closes while its mail waits behind a recipient's parked mailbox flush", () => {
  for (const adopted of [false, true]) {
    it.effect(`${adopted ? "adopted" : "accepted"}: its parked mail, forced through at its close, comes after the flush`, () =>
      Effect.gen(function*() {
        const world = yield* memoryNetwork({ linkCapacity: 4 })
        yield* world.startBroker({ outboxCapacity: 4, adopted })
        const sender = yield* world.session({ sessionId: "sender" })
        const { queued, twin } = yield* twinBackNotReading(world, sender)
        // The sender's newer mail meets the full outbox and is parked with the sender; then the sender is gone.
        const newer = Array.from({ length: 6 }, (_, i) => message(`newer ${i}`))
        yield* step(sender.client.sendRaw(encodeFrames(newer.map((msg) => JSON.stringify({ type: "send", to: "twin", message: msg })))))
        yield* sender.client.roundTrip
        yield* sender.client.destroy
        yield* twin.resume
        yield* twin.next("session_left", (frame) => frame.sessionId === "sender")
        yield* twin.roundTrip
        const seen = twin.received().flatMap((frame) =>
          frame.type === "message"
            ? [frame.message.content.text]
            : frame.type === "session_left" && frame.sessionId === "sender"
            ? ["sender left"]
            : []
        )
        // What the broker read of the newer mail before the close (at least the first) follows the whole flush,
        // and the sender's session_left follows all of it (C-BRK-33): its departure waits for the parked mail.
        const accepted = seen.length - 1 - queued.length
        assert.isAtLeast(accepted, 1)
        assert.deepStrictEqual(seen, [...[...queued, ...newer.slice(0, accepted)].map((msg) => msg.content.text), "sender left"])
      }))
  }
})

describe("another sender closes while a recipient's parked mailbox flush holds none of its mail", () => {
  for (const adopted of [false, true]) {
    it.effect(`${adopted ? "adopted" : "accepted"}: its parked mail is forced through ahead of its session_left`, () =>
      Effect.gen(function*() {
        const world = yield* memoryNetwork({ linkCapacity: 4 })
        yield* world.startBroker({ outboxCapacity: 4, adopted })
        const earlier = yield* world.session({ sessionId: "earlier" })
        const closing = yield* world.session({ sessionId: "closing" })
        const { twin } = yield* twinBackNotReading(world, earlier)
        // `closing`'s mail meets the full outbox and is parked with it; then `closing` is gone.
        const last = Array.from({ length: 3 }, (_, i) => message(`last ${i}`))
        yield* step(closing.client.sendRaw(encodeFrames(last.map((msg) => JSON.stringify({ type: "send", to: "twin", message: msg })))))
        yield* closing.client.roundTrip
        yield* closing.client.destroy
        yield* twin.resume
        yield* twin.roundTrip
        yield* twin.roundTrip
        const seen = twin.received().flatMap((frame) =>
          frame.type === "message" && frame.message.content.text.startsWith("last")
            ? [frame.message.content.text]
            : frame.type === "session_left" && frame.sessionId === "closing"
            ? ["closing left"]
            : []
        )
        assert.deepStrictEqual(seen, [...last.map((msg) => msg.content.text), "closing left"])
      }))
  }
})

describe("a live sender's new mail while its older mail waits in the recipient's parked mailbox flush", () => {
  const pad = "x".repeat(1_000)
  const short = (text: string) => text.split(" x")[0]!

  /** `twin` is away with twelve 1 kB messages of `sender`'s queued; it registers again and does not read. */
  const parkedFlushWith = (senderFeatures: ReadonlyArray<string>) => Effect.gen(function*() {
    const world = yield* memoryNetwork({ linkCapacity: 4 })
    yield* world.startBroker({ outboxChars: 3_500 })
    const sender = yield* world.session({ sessionId: "sender", frame: { features: [...senderFeatures] } })
    const other = yield* world.session({ sessionId: "other" })
    const first = yield* world.session({ sessionId: "twin" })
    yield* first.client.send({ type: "unregister" })
    yield* first.client.roundTrip
    const queued = Array.from({ length: 12 }, (_, i) => message(`queued ${i} ${pad}`))
    yield* sender.client.sendRaw(encodeFrames(queued.map((msg) => JSON.stringify({ type: "send", to: "twin", message: msg }))))
    yield* sender.client.roundTrip
    const conn = yield* settle(world.network.dial(world.address)).pipe(Effect.orDie)
    const twin = yield* wireOverConnection(conn, "twin", (action) => Effect.asVoid(step(action)))
    yield* twin.pause
    // The flush fills the outbox (in characters) and the rest of it is parked with twin's own reader.
    yield* step(conn.writeAll([JSON.stringify(registerFrame({ sessionId: "twin" }))]))
    return { world, sender, other, twin, queued }
  })
  const parkedFlush = parkedFlushWith([])

  /** What twin read of the sender: its messages (shortened), its departures and its joins, in order. */
  const senderSeen = (twin: WireClient) =>
    twin.received().flatMap((frame) =>
      frame.type === "message"
        ? [short(frame.message.content.text)]
        : frame.type === "session_left" && frame.sessionId === "sender"
        ? ["sender left"]
        : frame.type === "session_joined" && frame.session.id === "sender"
        ? ["sender joined"]
        : []
    )

  /**
   * twin reads on to the flush's last message; after the returned sender's
   * round trip, then twin's (anything queued for twin by then is ahead of
   * twin's answer), it has read all of the flush and one `session_joined` of
   * the sender's — back before twin heard it leave, as at a takeover — and no
   * departure at all.
   */
  const readsAllAndOneReturn = (twin: WireClient, back: Session, queued: ReadonlyArray<{ readonly id: string; readonly content: { readonly text: string } }>) =>
    Effect.gen(function*() {
      yield* twin.resume
      const last = queued.at(-1)!
      yield* twin.next("message", (frame) => frame.message.id === last.id)
      yield* back.client.roundTrip
      yield* twin.roundTrip
      const seen = senderSeen(twin)
      assert.deepStrictEqual(seen.filter((text) => text !== "sender joined"), queued.map((msg) => short(msg.content.text)))
      assert.deepStrictEqual(seen.filter((text) => text === "sender joined"), ["sender joined"])
    })

  /** The message texts read, shortened, in order. */
  const textsOf = (frames: ReadonlyArray<BrokerFrame>) =>
    frames.flatMap((frame) => frame.type === "message" ? [short(frame.message.content.text)] : [])

  it.effect("a sender that unregisters with mail in the parked flush: its session_left reaches twin after all of it", () =>
    Effect.gen(function*() {
      const { other, queued, sender, twin } = yield* parkedFlush
      yield* sender.client.send({ type: "unregister" })
      // `other` parks nothing of the sender's: it hears of the departure at once, so the broker has handled it.
      yield* other.client.next("session_left", (frame) => frame.sessionId === "sender")
      yield* twin.resume
      yield* twin.next("session_left", (frame) => frame.sessionId === "sender")
      yield* twin.roundTrip
      const seen = twin.received().flatMap((frame) =>
        frame.type === "message"
          ? [short(frame.message.content.text)]
          : frame.type === "session_left" && frame.sessionId === "sender"
          ? ["sender left"]
          : []
      )
      // All of the sender's mail before its departure.
      assert.deepStrictEqual(seen, [...queued.map((msg) => short(msg.content.text)), "sender left"])
    }))

  it.effect("the sender's new small message, routed while the flush is parked, reaches twin after the whole flush", () =>
    Effect.gen(function*() {
      const { queued, sender, twin } = yield* parkedFlush
      // It would fit twin's outbox (the next flushed message does not): it waits behind the flush instead.
      const tiny = message("tiny")
      yield* step(sender.client.sendRaw(encodeFrames([JSON.stringify({ type: "send", to: "twin", message: tiny })])))
      yield* twin.resume
      yield* twin.next("message", (frame) => frame.message.id === tiny.id)
      assert.deepStrictEqual(textsOf(twin.received()), [...queued.map((msg) => short(msg.content.text)), "tiny"])
    }))

  it.effect("another sender's new message does not wait behind the flush, which holds none of its mail: that sender is not held back", () =>
    Effect.gen(function*() {
      const { other, queued, sender, twin } = yield* parkedFlush
      const tiny = message("o1")
      const next = message("o2")
      yield* step(other.client.sendRaw(encodeFrames([
        JSON.stringify({ type: "send", to: "twin", message: tiny }),
        JSON.stringify({ type: "send", to: "sender", message: next })
      ])))
      // Held behind twin's flush, its frame to the sender would wait until twin reads (a held reader still
      // answers `health` at once, so the round trips end either way).
      yield* other.client.roundTrip
      yield* sender.client.roundTrip
      assert.isTrue(sender.client.received().some((frame) => frame.type === "message" && frame.message.id === next.id))
      yield* twin.resume
      yield* twin.next("message", (frame) => frame.message.id === queued[queued.length - 1]!.id)
      yield* twin.roundTrip
      assert.include(textsOf(twin.received()), "o1")
      assert.deepStrictEqual(
        textsOf(twin.received()).filter((text) => text.startsWith("queued")),
        queued.map((msg) => short(msg.content.text))
      )
    }))

  it.effect("a sender that unregisters right after its new small message: twin reads the flush, the message, then its session_left", () =>
    Effect.gen(function*() {
      const { queued, sender, twin } = yield* parkedFlush
      const tiny = message("tiny")
      yield* step(sender.client.sendRaw(encodeFrames([
        JSON.stringify({ type: "send", to: "twin", message: tiny }),
        JSON.stringify({ type: "unregister" })
      ])))
      yield* twin.resume
      yield* twin.next("session_left", (frame) => frame.sessionId === "sender")
      yield* twin.roundTrip
      const seen = twin.received().flatMap((frame) =>
        frame.type === "message"
          ? [short(frame.message.content.text)]
          : frame.type === "session_left" && frame.sessionId === "sender"
          ? ["sender left"]
          : []
      )
      assert.deepStrictEqual(seen, [...queued.map((msg) => short(msg.content.text)), "tiny", "sender left"])
    }))

  it.effect("twin's connection closes while the sender's new message waits: the mailbox gives it back after the flush", () =>
    Effect.gen(function*() {
      const { other, queued, sender, twin, world } = yield* parkedFlush
      const tiny = message("tiny")
      yield* step(sender.client.sendRaw(encodeFrames([JSON.stringify({ type: "send", to: "twin", message: tiny })])))
      yield* other.client.roundTrip
      other.client.drain()
      yield* twin.destroy
      yield* other.client.next("session_left", (frame) => frame.sessionId === "twin")
      // Back, reading: what the closed connection had not written comes from the mailbox, tiny last.
      const back = yield* world.session({ sessionId: "twin" })
      yield* back.client.next("message", (frame) => frame.message.id === tiny.id)
      const texts = textsOf(back.client.received())
      const flushed = queued.map((msg) => short(msg.content.text))
      assert.isAtLeast(texts.length, 2)
      assert.deepStrictEqual(texts, [...flushed.slice(flushed.length - (texts.length - 1)), "tiny"])
    }))

  it.effect("the sender's new small message, offered by its drainer while the flush is parked, reaches twin after the whole flush", () =>
    Effect.gen(function*() {
      const { other, queued, sender, twin } = yield* parkedFlush
      // `other` does not read: the sender's batch parks at its full outbox, and the small message for twin
      // behind it; once `other` reads, the sender's drainer offers that message while twin's flush is parked.
      yield* other.client.pause
      // Two messages of 2 kB: the first fills other's outbox (3,500 characters), the second is parked.
      const forOther = Array.from({ length: 2 }, (_, i) => message(`for other ${i} ${pad}${pad}`))
      const tiny = message("tiny")
      yield* step(sender.client.sendRaw(encodeFrames([
        ...forOther.map((msg) => JSON.stringify({ type: "send", to: "other", message: msg })),
        JSON.stringify({ type: "send", to: "twin", message: tiny })
      ])))
      yield* step(other.client.resume)
      yield* other.client.next("message", (frame) => frame.message.id === forOther.at(-1)!.id)
      yield* twin.resume
      yield* twin.next("message", (frame) => frame.message.id === tiny.id)
      assert.deepStrictEqual(textsOf(twin.received()), [...queued.map((msg) => short(msg.content.text)), "tiny"])
    }))

  it.effect("a sender that unregisters with mail in the parked flush, registers again and unregisters again: one session_left reaches twin, after all of it", () =>
    Effect.gen(function*() {
      const { other, queued, sender, twin, world } = yield* parkedFlush
      yield* sender.client.send({ type: "unregister" })
      yield* other.client.next("session_left", (frame) => frame.sessionId === "sender")
      // Back on a new connection: twin's hold on the first departure outlives the return (its mail is still parked).
      const again = yield* world.session({ sessionId: "sender" })
      yield* other.client.next("session_joined", (frame) => frame.session.id === "sender")
      yield* again.client.send({ type: "unregister" })
      yield* other.client.next("session_left", (frame) => frame.sessionId === "sender")
      yield* twin.resume
      yield* twin.next("session_left", (frame) => frame.sessionId === "sender")
      yield* twin.roundTrip
      // Twin never saw the return (it joined and left before twin's writer looked): one departure, after the mail.
      assert.deepStrictEqual(senderSeen(twin), [...queued.map((msg) => short(msg.content.text)), "sender left"])
    }))

  it.effect("a sender that unregisters with mail in the parked flush and registers again: twin gets no session_left, and all the mail", () =>
    Effect.gen(function*() {
      const { other, queued, sender, twin, world } = yield* parkedFlush
      yield* sender.client.send({ type: "unregister" })
      yield* other.client.next("session_left", (frame) => frame.sessionId === "sender")
      const again = yield* world.session({ sessionId: "sender" })
      yield* other.client.next("session_joined", (frame) => frame.session.id === "sender")
      yield* readsAllAndOneReturn(twin, again, queued)
    }))

  it.effect("a sender that unregisters with mail in the parked flush and its own output parked, then registers again: twin gets no session_left, and all the mail", () =>
    Effect.gen(function*() {
      const { other, queued, sender, twin, world } = yield* parkedFlush
      const slow = yield* world.session({ sessionId: "slow" })
      yield* slow.client.pause
      // Its mail for slow fills slow's outbox and the rest parks with its batch: its departure is held (not in the feed).
      const toSlow = Array.from({ length: 30 }, (_, i) => message(`slow ${i} ${pad}`))
      yield* step(sender.client.sendRaw(encodeFrames([
        ...toSlow.map((msg) => JSON.stringify({ type: "send", to: "slow", message: msg })),
        JSON.stringify({ type: "unregister" })
      ])))
      yield* other.client.roundTrip
      yield* other.client.expectNothing("session_left", (frame) => frame.sessionId === "sender")
      // Back: the held departure goes into the feed, then the return (other hears both).
      const again = yield* world.session({ sessionId: "sender" })
      yield* other.client.next("session_left", (frame) => frame.sessionId === "sender")
      yield* other.client.next("session_joined", (frame) => frame.session.id === "sender")
      yield* readsAllAndOneReturn(twin, again, queued)
    }))

  it.effect("a sender that closes with a replace message due for twin and mail in its parked flush, registers again and closes again: its session_left reaches twin after all of it", () =>
    Effect.gen(function*() {
      const { other, queued, sender, twin, world } = yield* parkedFlushWith([DELIVERY_V1])
      const staged = message(`staged ${pad}`)
      yield* sender.client.send({ type: "send", to: "twin", message: staged, delivery: "queue", queueMode: "replace", threadId: "t" })
      yield* sender.client.next("delivery_queued", (frame) => frame.messageId === staged.id)
      // Closed with its window open: the staged message falls due into twin's full outbox and waits for room there.
      // Two holds on twin's departure of the sender: the due message's and the parked flush's.
      yield* sender.client.destroy
      yield* other.client.next("session_left", (frame) => frame.sessionId === "sender")
      const again = yield* world.session({ sessionId: "sender", frame: { features: [DELIVERY_V1] } })
      yield* other.client.next("session_joined", (frame) => frame.session.id === "sender")
      // The second departure finds the same mail waiting (the due message too: no batch to park it with): the
      // same two holds cover it.
      yield* again.client.destroy
      yield* other.client.next("session_left", (frame) => frame.sessionId === "sender")
      yield* twin.resume
      yield* twin.next("session_left", (frame) => frame.sessionId === "sender")
      yield* twin.roundTrip
      const seen = senderSeen(twin)
      assert.strictEqual(seen.at(-1), "sender left")
      assert.deepStrictEqual(seen.filter((text) => text !== "staged"), [...queued.map((msg) => short(msg.content.text)), "sender left"])
      assert.include(seen, "staged")
    }))
})

describe("a drainer whose reader's own list holds mail for that reader, offering a message that must wait behind a recipient's parked flush", () => {
  const textsOf = (client: WireClient) =>
    client.received().flatMap((frame) => frame.type === "message" ? [frame.message.content.text] : [])

  for (const adopted of [false, true]) {
    it.effect(`parks it at the end of that flush instead of waiting, so its reader's own flush goes on (${adopted ? "adopted" : "accepted"})`, () =>
      Effect.gen(function*() {
        const world = yield* memoryNetwork({ linkCapacity: 4 })
        yield* world.startBroker({ outboxCapacity: 4, adopted })
        const mover = yield* world.session({ sessionId: "mover" })
        const sender = yield* world.session({ sessionId: "sender" })
        // "other" is away with twelve messages in the mailbox.
        const otherFirst = yield* world.session({ sessionId: "other" })
        yield* otherFirst.client.send({ type: "unregister" })
        yield* otherFirst.client.roundTrip
        const forOther = Array.from({ length: 12 }, (_, i) => message(`for other ${i}`))
        yield* sender.client.sendRaw(encodeFrames(forOther.map((msg) => JSON.stringify({ type: "send", to: "other", message: msg }))))
        yield* sender.client.roundTrip
        // twin's parked flush holds mover's older mail.
        const { queued, twin } = yield* twinBackNotReading(world, mover)
        // In one chunk: a message for twin (parked: twin's outbox is full), then mover becomes "other", whose
        // flush (mail for itself) is parked behind it on the same list.
        yield* mover.client.pause
        const fromMover = message("from mover")
        yield* step(mover.client.sendRaw(encodeFrames([
          JSON.stringify({ type: "send", to: "twin", message: fromMover }),
          JSON.stringify({ type: "unregister" }),
          JSON.stringify(registerFrame({ sessionId: "other" }))
        ])))
        yield* mover.client.resume
        // Waiting on twin, which does not read, the drainer would hold this flush back too.
        const lastOther = forOther[forOther.length - 1]!
        yield* mover.client.next("message", (frame) => frame.message.id === lastOther.id)
        assert.deepStrictEqual(textsOf(mover.client).filter((text) => text.startsWith("for other")), forOther.map((m) => m.content.text))
        yield* twin.resume
        yield* twin.next("message", (frame) => frame.message.id === fromMover.id)
        yield* twin.roundTrip
        assert.deepStrictEqual(textsOf(twin), [...queued.map((m) => m.content.text), "from mover"])
      }))
  }
})
