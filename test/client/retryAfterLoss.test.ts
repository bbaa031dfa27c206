/**
 * A caller's own retry after its connection was lost, against the re-send
 * the client made on its next connection (PendingSends.ts, `resending` in
 * IntercomClient.ts): the retry completes from that re-send's answer — by
 * joining it while it waits, or by collecting its kept answer once it came —
 * so the message id is written once on the new connection, and the caller
 * does not wait out a 250 ms back-off once the new connection is up. A kept
 * answer nobody collects is dropped when the send's timeout has passed.
 *
 * The in-memory network runs the real broker core under TestClock; a
 * recording dialer keeps every frame the client writes, per connection.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber } from "effect"
import type { Dialer } from "../../src/client/Dialer.ts"
import type { IntercomClientOptions } from "../../src/client/options.ts"
import { decodeClientFrame, isFrameDecodeError, parseFrameText } from "../../src/protocol/decode.ts"
import type { Message } from "../../src/protocol/frames.ts"
import { encodeFrames } from "../../src/protocol/index.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message } from "../support/broker.ts"
import { gatedStore } from "../support/durable.ts"
import { advance, type MemoryNetwork, memoryNetwork, now, settle, step } from "../support/memory.ts"
import { makeMemoryClient, memoryClientOptions, recordingWrites } from "./support.ts"

const A_ID = "aaaaaaaa-2222-4000-8000-00000000000a"

/** A dialer into `world` that keeps each connection it opens and the frames the client writes on it. */
const recordingDialer = (world: MemoryNetwork) => {
  const connections: Array<{ readonly link: Connection; readonly writes: Array<ReadonlyArray<string>> }> = []
  const dial: Dialer = (address) =>
    Effect.map(world.dial(address), (connection) => {
      const writes: Array<ReadonlyArray<string>> = []
      connections.push({ link: connection, writes })
      return recordingWrites(connection, writes).connection
    })
  return { dial, connections }
}

/** How many `send` frames for `messageId` the client wrote on its `index`th connection. */
const sendsOn = (recording: ReturnType<typeof recordingDialer>, index: number, messageId: string): number =>
  (recording.connections[index]?.writes ?? []).flat().filter((text) => {
    const parsed = parseFrameText(text)
    if (isFrameDecodeError(parsed) || parsed.type !== "send") return false
    const send = decodeClientFrame.send(parsed)
    return !isFrameDecodeError(send) && send.message.id === messageId
  }).length

/**
 * alpha, recording its writes, on a broker with tiny links where beta stopped
 * reading and a filler filled everything up to beta: a send to beta stays in
 * flight. The send is made, the broker crashes, and a new one is started
 * before alpha's reconnect; beta's new session is `betaBack` (unless
 * `betaLeaves`: then beta registers with the new broker and leaves it).
 */
const sendLostInCrash = (
  inFlight: Message,
  clientOptions: Partial<IntercomClientOptions>,
  betaLeaves = false
) =>
  Effect.gen(function*() {
    const world = yield* memoryNetwork({ linkCapacity: 1 })
    const first = yield* world.startBroker({ idleExit: null, outboxCapacity: 1 })
    const recording = recordingDialer(world)
    const { client: a } = yield* makeMemoryClient(
      memoryClientOptions({ address: world.address, dial: recording.dial }, A_ID, "alpha", clientOptions)
    )
    yield* settle(a.connect)
    const beta = yield* world.session({ sessionId: "beta" })
    yield* beta.client.pause
    const filler = yield* world.session({ sessionId: "filler" })
    yield* filler.client.sendRaw(encodeFrames(Array.from({ length: 8 }, (_, i) =>
      JSON.stringify({ type: "send", to: "beta", message: message(`fill ${i}`) }))))

    const sending = yield* step(a.send({ to: "beta", message: inFlight }))
    assert.isUndefined(sending.pollUnsafe(), "test setup: the send was answered; it is not in flight")
    yield* first.crash
    const lostAt = yield* now
    yield* world.startBroker({ idleExit: null })
    const betaBack = yield* world.session({ sessionId: "beta" })
    if (betaLeaves) yield* betaBack.client.destroy
    return { sending, recording, betaBack, lostAt }
  })

describe("a caller's retry after its connection was lost", () => {
  it.effect("completes from the re-send's answer once the new connection is up: one write of the id there, no 250 ms wait", () =>
    Effect.gen(function*() {
      const inFlight = message("still there?")
      const { betaBack, lostAt, recording, sending } = yield* sendLostInCrash(inFlight, { reconnectBaseMs: 10 })

      // The reconnect comes 10 ms after the loss and sends the message again; its answer is the caller's.
      yield* advance("20 millis")
      assert.strictEqual(recording.connections.length, 2, "test setup: the client did not reconnect")
      assert.isDefined(sending.pollUnsafe(), `the send still waited ${(yield* now) - lostAt} ms after the loss, with a connection up`)
      assert.strictEqual((yield* Fiber.join(sending)).delivery, "socket_delivered")
      // Long after any back-off: the caller wrote nothing more itself.
      yield* advance("1 second")
      assert.strictEqual(sendsOn(recording, 1, inFlight.id), 1, "the message id was written again on the new connection")
      assert.strictEqual((yield* betaBack.client.next("message")).message.id, inFlight.id)
      yield* betaBack.client.roundTrip
      yield* betaBack.client.expectNothing("message")
    }))

  it.effect("a refusal of the re-send is the caller's outcome, with one write of the id and no 250 ms wait", () =>
    Effect.gen(function*() {
      // An ask: the new broker knows beta only as gone, and refuses it.
      const ask = message("which branch?", { expectsReply: true })
      const { lostAt, recording, sending } = yield* sendLostInCrash(ask, { reconnectBaseMs: 10 }, true)

      yield* advance("20 millis")
      assert.strictEqual(recording.connections.length, 2, "test setup: the client did not reconnect")
      const exit = sending.pollUnsafe()
      assert.isDefined(exit, `the ask still waited ${(yield* now) - lostAt} ms after the loss, with a connection up`)
      const error = exit !== undefined && Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
      assert.deepInclude(error, { _tag: "TargetDisconnected", code: "E_TARGET_DISCONNECTED", messageId: ask.id })
      yield* advance("1 second")
      assert.strictEqual(sendsOn(recording, 1, ask.id), 1, "the message id was written again on the new connection")
    }))

  it.effect("a retry that comes back after the re-send was answered collects its kept answer and writes nothing", () =>
    Effect.gen(function*() {
      const inFlight = message("are you there now?")
      // The caller gives up waiting for a connection after 100 ms and backs off 250 ms; the reconnect
      // comes at 200 ms and its re-send is answered while the caller is away.
      const { betaBack, recording, sending } = yield* sendLostInCrash(inFlight, { reconnectBaseMs: 200, connectTimeoutMs: 100 })

      yield* advance("400 millis")
      assert.strictEqual(recording.connections.length, 2, "test setup: the client did not reconnect")
      assert.strictEqual((yield* Fiber.join(sending)).delivery, "socket_delivered")
      assert.strictEqual(sendsOn(recording, 1, inFlight.id), 1, "the message id was written again on the new connection")
      assert.strictEqual((yield* betaBack.client.next("message")).message.id, inFlight.id)
      yield* betaBack.client.roundTrip
      yield* betaBack.client.expectNothing("message")
    }))

  it.effect("a kept answer nobody collects within the send timeout is dropped: a later retry writes again, answered from the broker's record", () =>
    Effect.gen(function*() {
      const inFlight = message("late")
      // As above, with a 50 ms send timeout: the answer kept at 200 ms is dropped at 250 ms, the caller is back at 350.
      const { betaBack, recording, sending } = yield* sendLostInCrash(inFlight, {
        reconnectBaseMs: 200,
        connectTimeoutMs: 100,
        sendTimeoutMs: 50
      })

      yield* advance("400 millis")
      assert.strictEqual(recording.connections.length, 2, "test setup: the client did not reconnect")
      assert.strictEqual((yield* Fiber.join(sending)).delivery, "socket_delivered")
      assert.strictEqual(sendsOn(recording, 1, inFlight.id), 2, "the kept answer outlived the send timeout")
      assert.strictEqual((yield* betaBack.client.next("message")).message.id, inFlight.id)
      yield* betaBack.client.roundTrip
      yield* betaBack.client.expectNothing("message")
    }))

  it.effect("a send a durable broker stored, whose connection closed before its answer: one write on the next connection, answered from the record", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const { gate, store } = yield* gatedStore(disk)
      yield* world.startBroker({ idleExit: null, store })
      // r3 registers and leaves: mail to it waits in the mailbox, acknowledged once stored.
      const r3 = yield* world.session({ sessionId: "r3" })
      yield* r3.client.destroy
      const recording = recordingDialer(world)
      const { client: a } = yield* makeMemoryClient(
        memoryClientOptions({ address: world.address, dial: recording.dial }, A_ID, "alpha", { reconnectBaseMs: 10 })
      )
      yield* settle(a.connect)

      const stored = message("for when you are back")
      const sending = yield* step(a.send({ to: "r3", message: stored }))
      assert.isUndefined(sending.pollUnsafe(), "test setup: the send was answered before its commit")
      // The connection dies with the answer still held for the commit; then the commit stores the send.
      yield* step(recording.connections[0]!.link.destroy)
      yield* step(Deferred.succeed(gate, undefined))
      const lostAt = yield* now

      yield* advance("20 millis")
      assert.strictEqual(recording.connections.length, 2, "test setup: the client did not reconnect")
      assert.isDefined(sending.pollUnsafe(), `the send still waited ${(yield* now) - lostAt} ms after the loss, with a connection up`)
      assert.strictEqual((yield* Fiber.join(sending)).delivery, "queued")
      yield* advance("1 second")
      assert.strictEqual(sendsOn(recording, 1, stored.id), 1, "the message id was written again on the new connection")
      const r3Back = yield* world.session({ sessionId: "r3" })
      assert.strictEqual((yield* r3Back.client.next("message")).message.id, stored.id)
      yield* r3Back.client.roundTrip
      yield* r3Back.client.expectNothing("message")
    }))
})
