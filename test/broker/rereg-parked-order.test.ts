/**
 * A session registers again (a takeover, P16, or the client's own rejoin,
 * `rejoin-v1`) while its old connection still holds its mailbox flush parked
 * with that connection's own reader (counted in the old connection's
 * `Peer.parkedMail`), and nothing has given it back yet: the old
 * connection's drainer waits for room at another recipient (the flush is
 * parked behind a message the same batch sent to a session that does not
 * read), so it does not refuse the flush as stranded, and the old close,
 * which takes the flush back, runs after the registering batch. The new
 * connection's own counts are empty, so a sender's NEW message for the
 * session reaches it directly and would overtake the sender's OLDER mail
 * in that flush: at a takeover, routed while the old close waits for its
 * `end` flush grace (its client does not read); at a rejoin, held behind
 * the flush on the old connection until the hand-over of the old outbox
 * made room there, then refused as stranded and taken back to the new
 * connection before the old close ran. `OutputEnd.handOver` takes the parked
 * flush back to the new connection at the registration, in order, ahead of
 * anything newer. Also a regression guard (it passes without the hand-over
 * too): a takeover while the old drainer offers the flush's first message
 * to the old connection itself — the hand-over takes that message while it
 * is offered, and nothing is lost or doubled. In memory, accepted and
 * adopted (the read pump) connections.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { type BrokerFrame, encodeFrames } from "../../src/protocol/index.ts"
import { REJOIN_V1 } from "../../src/protocol/features.ts"
import { message, registerFrame } from "../support/broker.ts"
import { memoryNetwork, step } from "../support/memory.ts"

/** The texts of the messages `sessionId` sent, in the order read. */
const textsFrom = (frames: ReadonlyArray<BrokerFrame>, sessionId: string) =>
  frames.flatMap((frame) => frame.type === "message" && frame.from.id === sessionId ? [frame.message.content.text] : [])

const sendFrame = (to: string, text: string) => JSON.stringify({ type: "send", to, message: message(text) })

/**
 * `twin` is away with twelve messages of `sender`'s in the mailbox; `slow`
 * does not read and its outbox is full. The old connection, registered as
 * `mover` and not reading (twelve `health` answers fill its link and its
 * writer waits), sends `slow` a message (parked: slow's outbox is full),
 * then unregisters and registers as `twin` (with `frame`'s fields) in one
 * batch: its `registered` and the whole flush are parked behind that
 * message, and its drainer waits for room at `slow`.
 */
const flushParkedBehindSlow = (adopted: boolean, frame: Record<string, unknown>) =>
  Effect.gen(function*() {
    const world = yield* memoryNetwork({ linkCapacity: 4 })
    yield* world.startBroker({ outboxCapacity: 4, adopted })
    const sender = yield* world.session({ sessionId: "sender" })
    const other = yield* world.session({ sessionId: "other" })
    const filler = yield* world.session({ sessionId: "filler" })
    const slow = yield* world.session({ sessionId: "slow" })
    yield* slow.client.pause
    const first = yield* world.session({ sessionId: "twin" })
    yield* first.client.send({ type: "unregister" })
    yield* first.client.roundTrip
    const queued = Array.from({ length: 12 }, (_, i) => `queued ${i}`)
    yield* sender.client.sendRaw(encodeFrames(queued.map((text) => sendFrame("twin", text))))
    yield* sender.client.roundTrip
    // slow's link and outbox fill; the filler's rest waits with the filler.
    yield* step(filler.client.sendRaw(encodeFrames(Array.from({ length: 12 }, (_, i) => sendFrame("slow", `fill ${i}`)))))
    const old = yield* world.session({ sessionId: "mover" })
    yield* old.client.pause
    // Four frames a chunk: the link carries four at a time, and each chunk is one batch.
    for (const chunk of [0, 4, 8]) {
      yield* step(old.client.sendRaw(encodeFrames(
        Array.from({ length: 4 }, (_, i) => JSON.stringify({ type: "health", requestId: `h${chunk + i}` }))
      )))
    }
    yield* step(old.client.sendRaw(encodeFrames([
      sendFrame("slow", "from mover"),
      JSON.stringify({ type: "unregister" }),
      JSON.stringify(registerFrame({ sessionId: "twin", frame }))
    ])))
    const fresh = yield* world.connect("new")
    return { sender: sender.client, other: other.client, old: old.client, fresh, queued }
  })

describe("a session registers again while its old connection's drainer holds its mailbox flush behind another recipient", () => {
  for (const adopted of [false, true]) {
    const how = adopted ? "adopted" : "accepted"

    it.effect(`${how}: at a takeover, the sender's new message, routed while the old close waits, reaches the new connection after all its older mail`, () =>
      Effect.gen(function*() {
        const { fresh, old, queued, sender } = yield* flushParkedBehindSlow(adopted, {})
        yield* fresh.send(registerFrame({ sessionId: "twin" }))
        yield* fresh.next("registered")
        // The old connection's close waits on its `end` flush (its client does not read).
        yield* sender.send({ type: "send", to: "twin", message: message("tiny") })
        yield* sender.roundTrip
        // The old client reads: its close runs, and gives back what it still held.
        yield* old.resume
        yield* old.waitClosed()
        yield* fresh.roundTrip
        assert.deepStrictEqual(textsFrom(old.received(), "sender"), [])
        assert.deepStrictEqual(textsFrom(fresh.received(), "sender"), [...queued, "tiny"])
      }))

    it.effect(`${how}: at the client's own rejoin, the sender's new message held behind the old flush reaches the new connection after all its older mail`, () =>
      Effect.gen(function*() {
        const features = { features: [REJOIN_V1], instanceId: "instance-1" }
        const { fresh, old, other, queued, sender } = yield* flushParkedBehindSlow(adopted, features)
        // Another sender's message has none of its mail to wait behind: it is queued in the old outbox.
        yield* other.send({ type: "send", to: "twin", message: message("from other") })
        yield* other.roundTrip
        // The sender's waits behind its older mail in the old connection's parked flush (its drainer waits).
        yield* sender.send({ type: "send", to: "twin", message: message("tiny") })
        yield* sender.roundTrip
        // The rejoin hands the old outbox over (room there: the sender's drainer tries again), then destroys it.
        yield* fresh.send(registerFrame({ sessionId: "twin", frame: features }))
        yield* fresh.next("registered")
        yield* sender.roundTrip
        yield* fresh.roundTrip
        assert.deepStrictEqual(textsFrom(old.received(), "sender"), [])
        assert.deepStrictEqual(textsFrom(fresh.received(), "sender"), [...queued, "tiny"])
        assert.deepStrictEqual(textsFrom(fresh.received(), "other"), ["from other"])
      }))
  }
})

describe("a takeover while the old connection's drainer offers its own parked mailbox flush", () => {
  const pad = "x".repeat(1_000)
  const short = (text: string) => text.split(" x")[0]!

  for (const adopted of [false, true]) {
    it.effect(`${adopted ? "adopted" : "accepted"}: the flush reaches the old and the new client once each, in order, ahead of the sender's new message`, () =>
      Effect.gen(function*() {
        const world = yield* memoryNetwork({ linkCapacity: 4 })
        yield* world.startBroker({ outboxChars: 3_500, adopted })
        const sender = yield* world.session({ sessionId: "sender" })
        const first = yield* world.session({ sessionId: "twin" })
        yield* first.client.send({ type: "unregister" })
        yield* first.client.roundTrip
        const queued = Array.from({ length: 12 }, (_, i) => `queued ${i}`)
        yield* sender.client.sendRaw(encodeFrames(queued.map((text) => sendFrame("twin", `${text} ${pad}`))))
        yield* sender.client.roundTrip
        // twin registers again and does not read: the flush fills its outbox (in characters), the rest is
        // parked with its own reader, whose drainer waits for room in that outbox with the first of it: the
        // takeover takes that message back while it is offered.
        const old = yield* world.connect("old")
        yield* old.pause
        yield* old.send(registerFrame({ sessionId: "twin" }))
        const fresh = yield* world.connect("new")
        yield* fresh.send(registerFrame({ sessionId: "twin" }))
        yield* fresh.next("registered")
        yield* sender.client.send({ type: "send", to: "twin", message: message("tiny") })
        yield* sender.client.roundTrip
        yield* old.resume
        yield* old.waitClosed()
        yield* fresh.roundTrip
        const gotOld = textsFrom(old.received(), "sender").map(short)
        const gotNew = textsFrom(fresh.received(), "sender").map(short)
        // The old client read a prefix of the mail (what its socket took), the new one the rest, tiny last.
        assert.deepStrictEqual([...gotOld, ...gotNew], [...queued, "tiny"])
      }))
  }
})
