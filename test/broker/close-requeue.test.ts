/**
 * "Acknowledged is a promise" across a receiver's close: every message the
 * broker acknowledged reaches the receiver once — through the old connection
 * (what the socket had accepted before the close) or, after it registers
 * again, from the mailbox (what was still queued or only partly written).
 * Over a real Unix socket, because the fault lives in the kernel's buffer: the
 * receiver stops reading, the broker's write of a batch is left unfinished.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { encodeFrames } from "../../src/protocol/index.ts"
import { ackFor, message, register, registerFrame, withBroker } from "../support/broker.ts"
import type { WireClient } from "../support/wire.ts"

const COUNT = 600

/** Sends `COUNT` messages of about 1 KB from `from` to `to` in one write; returns their ids. */
const flood = (from: WireClient, to: string) =>
  Effect.gen(function*() {
    const msgs = Array.from({ length: COUNT }, (_, i) => message(`m${i}:`.padEnd(1024, ".")))
    yield* from.sendRaw(encodeFrames(msgs.map((msg) => JSON.stringify({ type: "send", to, message: msg }))))
    for (const msg of msgs) assert.strictEqual((yield* ackFor(from, msg.id)).type, "delivered")
    return msgs.map((msg) => msg.id)
  })

/** Every message frame `client` received, in order. */
const messageIds = (client: WireClient) =>
  client.received().flatMap((frame) => frame.type === "message" ? [frame.message.id] : [])

describe("a lagging receiver's close loses nothing acknowledged", () => {
  const leaveAndReturn = (how: "unregister" | "end") =>
    Effect.gen(function*() {
      // Room in the mailbox for everything the socket did not take.
      const broker = yield* withBroker({ idleExit: null, mailboxCapacity: 4096 })
      const receiver = yield* broker.connect("receiver", { allowHalfOpen: true })
      yield* register(receiver, { sessionId: "receiver" })
      const sender = yield* broker.session({ sessionId: "sender" })
      yield* receiver.pause
      const sent = yield* flood(sender.client, "receiver")

      // The receiver leaves while most of the 600 are still in the broker's hands.
      if (how === "unregister") yield* receiver.send({ type: "unregister" })
      yield* receiver.end
      yield* sender.client.next("session_left", (frame) => frame.sessionId === "receiver")
      // It reads what the socket had accepted, to the end of the stream.
      yield* receiver.resume
      yield* receiver.waitClosed("10 seconds")
      const first = messageIds(receiver)

      const back = yield* broker.connect("receiver again")
      yield* back.send(registerFrame({ sessionId: "receiver" }))
      yield* back.next("registered")
      const rest: Array<string> = []
      while (first.length + rest.length < COUNT) rest.push((yield* back.next("message", undefined, "10 seconds")).message.id)
      return { sent, first, rest, back }
    })

  it.live("after unregister and end, every message arrives exactly once, in order, old connection then mailbox", () =>
    Effect.gen(function*() {
      const { back, first, rest, sent } = yield* leaveAndReturn("unregister")
      assert.isAbove(rest.length, 0, "the socket took everything: the test did not exercise a partial write")
      yield* back.roundTrip
      assert.deepStrictEqual([...first, ...messageIds(back)], sent)
    }), 60_000)

  it.live("after a plain end (no unregister), the same", () =>
    Effect.gen(function*() {
      const { back, first, rest, sent } = yield* leaveAndReturn("end")
      assert.isAbove(rest.length, 0)
      yield* back.roundTrip
      assert.deepStrictEqual([...first, ...messageIds(back)], sent)
    }), 60_000)
})
