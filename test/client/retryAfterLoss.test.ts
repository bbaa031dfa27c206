/**
 * A caller's own retry after its connection was lost, against the re-send
 * the client made on its next connection (PendingSends.ts, `retrying` in
 * Resending.ts): the retry completes from that re-send's answer — by
 * joining it while it waits, or by collecting its kept answer once it came —
 * so the message id is written once on the new connection, and the caller
 * does not wait out a 250 ms back-off once the new connection is up. A kept
 * answer nobody collects is dropped when the send's timeout has passed. An
 * ask whose re-send the next broker refuses "target disconnected" is retried
 * through the rejoin grace and ends `ConnectionLost` if the refusal stands
 * (afterLoss.ts: the first write may have been delivered); before task askver it
 * failed at once with `TargetDisconnected`, a "not delivered".
 *
 * The in-memory network runs the real broker core under TestClock; a
 * recording dialer keeps every frame the client writes and reads, per
 * connection: both 'target disconnected' tests check that this is the
 * refusal the client met (with the new broker never knowing beta, "not
 * found", read the same way, every other check passed).
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber } from "effect"
import type { Dialer } from "../../src/client/Dialer.ts"
import { ConnectionLost } from "../../src/client/errors.ts"
import type { IntercomClientOptions } from "../../src/client/options.ts"
import { decodeClientFrame, isFrameDecodeError, parseFrameText } from "../../src/protocol/decode.ts"
import type { Message } from "../../src/protocol/frames.ts"
import { encodeFrames } from "../../src/protocol/index.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message } from "../support/broker.ts"
import { durableBroker, gatedStore } from "../support/durable.ts"
import { advance, type MemoryNetwork, memoryNetwork, now, settle, step } from "../support/memory.ts"
import { makeMemoryClient, memoryClientOptions, recordingWrites } from "./support.ts"

const A_ID = "aaaaaaaa-2222-4000-8000-00000000000a"

/** The rejoin grace of the client whose ask is refused after the loss (`rejoinGraceMs`). */
const REJOIN_GRACE_MS = 2_000

/** A dialer into `world` that keeps each connection it opens, the frames the client writes on it and those it reads. */
const recordingDialer = (world: MemoryNetwork) => {
  const connections: Array<{
    readonly link: Connection
    readonly writes: Array<ReadonlyArray<string>>
    readonly reads: Array<string>
  }> = []
  const dial: Dialer = (address) =>
    Effect.map(world.dial(address), (connection) => {
      const writes: Array<ReadonlyArray<string>> = []
      const reads: Array<string> = []
      connections.push({ link: connection, writes, reads })
      const recorded = recordingWrites(connection, writes).connection
      return { ...recorded, read: Effect.tap(connection.read, (frames) => Effect.sync(() => reads.push(...frames))) }
    })
  return { dial, connections }
}

/** The codes of the `delivery_failed` answers for `messageId` the client read on its `index`th connection, in order. */
const refusalsOn = (recording: ReturnType<typeof recordingDialer>, index: number, messageId: string): Array<string> =>
  (recording.connections[index]?.reads ?? []).flatMap((text) => {
    const parsed = parseFrameText(text)
    return !isFrameDecodeError(parsed) && parsed.type === "delivery_failed" && parsed.messageId === messageId &&
        typeof parsed.code === "string"
      ? [parsed.code]
      : []
  })

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
    return { sending, recording, betaBack, lostAt, world }
  })

/**
 * With the reconnect 10 ms after the loss: 20 ms after it the caller has its
 * outcome (returned), and a second later, long after any back-off, the
 * client has still written the id only once on its new connection.
 */
const outcomeRightAfterReconnect = <A, E>(
  recording: ReturnType<typeof recordingDialer>,
  sending: Fiber.Fiber<A, E>,
  lostAt: number,
  messageId: string
) =>
  Effect.gen(function*() {
    yield* advance("20 millis")
    assert.strictEqual(recording.connections.length, 2, "test setup: the client did not reconnect")
    assert.isDefined(sending.pollUnsafe(), `the send still waited ${(yield* now) - lostAt} ms after the loss, with a connection up`)
    yield* advance("1 second")
    assert.strictEqual(sendsOn(recording, 1, messageId), 1, "the message id was written again on the new connection")
    return yield* Fiber.await(sending)
  })

/**
 * A send lost in a crash whose caller is away when the re-send is answered:
 * it gives up waiting for a connection after 100 ms and backs off 250 ms,
 * while the reconnect comes at 200 ms and its re-send is answered at once.
 * Checks that the caller gets the delivery and beta the message once, and
 * returns how many times the client wrote the id on the new connection.
 */
const retryBackAfterTheAnswer = (inFlight: Message, sendTimeoutMs?: number) =>
  Effect.gen(function*() {
    const { betaBack, recording, sending } = yield* sendLostInCrash(inFlight, {
      reconnectBaseMs: 200,
      connectTimeoutMs: 100,
      ...(sendTimeoutMs === undefined ? {} : { sendTimeoutMs })
    })
    yield* advance("400 millis")
    assert.strictEqual(recording.connections.length, 2, "test setup: the client did not reconnect")
    assert.strictEqual((yield* Fiber.join(sending)).delivery, "socket_delivered")
    assert.strictEqual((yield* betaBack.client.next("message")).message.id, inFlight.id)
    yield* betaBack.client.roundTrip
    yield* betaBack.client.expectNothing("message")
    return sendsOn(recording, 1, inFlight.id)
  })

describe("a caller's retry after its connection was lost", () => {
  it.effect("completes from the re-send's answer once the new connection is up: one write of the id there, no 250 ms wait", () =>
    Effect.gen(function*() {
      const inFlight = message("still there?")
      const { betaBack, lostAt, recording, sending } = yield* sendLostInCrash(inFlight, { reconnectBaseMs: 10 })

      // The reconnect sends the message again; its answer is the caller's.
      const outcome = yield* outcomeRightAfterReconnect(recording, sending, lostAt, inFlight.id)
      assert.strictEqual((yield* outcome).delivery, "socket_delivered")
      assert.strictEqual((yield* betaBack.client.next("message")).message.id, inFlight.id)
      yield* betaBack.client.roundTrip
      yield* betaBack.client.expectNothing("message")
    }))

  it.effect("an ask whose re-send is refused 'target disconnected' is retried through the rejoin grace, then ends ConnectionLost (maybe delivered), not a plain refusal", () =>
    Effect.gen(function*() {
      // An ask: the new broker knows beta only as gone, and refuses it; the first write may have been delivered by a
      // broker that is gone, so that refusal says nothing of it (afterLoss.ts). It failed at once TargetDisconnected.
      const ask = message("which branch?", { expectsReply: true })
      const { recording, sending } = yield* sendLostInCrash(ask, { reconnectBaseMs: 10, rejoinGraceMs: REJOIN_GRACE_MS }, true)

      yield* advance("20 millis")
      assert.strictEqual(recording.connections.length, 2, "test setup: the client did not reconnect")
      assert.isUndefined(sending.pollUnsafe(), "the refusal of the re-send stood at once, inside the rejoin grace")
      // In steps of 100 ms (each retry a round trip on the network) to a second past the grace's end.
      let endedAfterMs: number | undefined
      for (let elapsed = 100; elapsed <= REJOIN_GRACE_MS + 1_000; elapsed += 100) {
        yield* advance("100 millis")
        if (endedAfterMs === undefined && sending.pollUnsafe() !== undefined) endedAfterMs = elapsed
      }
      const outcome = sending.pollUnsafe()
      assert.isDefined(outcome, "the ask still waited a second after the rejoin grace")
      assert.isAtLeast(endedAfterMs ?? 0, REJOIN_GRACE_MS - 100, "ended before the rejoin grace was over")
      const error = outcome !== undefined && Exit.isFailure(outcome) ? Cause.squash(outcome.cause) : undefined
      assert.instanceOf(error, ConnectionLost, `the ask got ${String(error)}`)
      assert.deepInclude(error, { operation: "send", messageId: ask.id })
      // The refusal that stood is the one this test is about, not a "not found" read the same way.
      const refusal = error instanceof ConnectionLost ? error.refusal : undefined
      assert.deepInclude(refusal, { _tag: "TargetDisconnected", code: "E_TARGET_DISCONNECTED", messageId: ask.id })
      assert.isAbove(sendsOn(recording, 1, ask.id), 1, "not written again in the rejoin grace")
    }))

  it.effect("an ask whose re-send is refused 'target disconnected' reaches its target when it comes back within the rejoin grace", () =>
    Effect.gen(function*() {
      const ask = message("which branch?", { expectsReply: true })
      const { recording, sending, world } = yield* sendLostInCrash(ask, { reconnectBaseMs: 10, rejoinGraceMs: REJOIN_GRACE_MS }, true)

      yield* advance("500 millis")
      assert.strictEqual(recording.connections.length, 2, "test setup: the client did not reconnect")
      assert.isUndefined(sending.pollUnsafe(), "the refusal of the re-send stood at once, inside the rejoin grace")
      // Every write of the ask so far was refused 'target disconnected' — not a "not found", retried the same way.
      const refusals = refusalsOn(recording, 1, ask.id)
      assert.isNotEmpty(refusals, "test setup: no write of the ask was refused before beta came back")
      assert.deepStrictEqual(new Set(refusals), new Set(["E_TARGET_DISCONNECTED"]), `refused ${refusals.join(", ")}`)
      // beta registers again half-way through the grace: the next retry finds it.
      const betaAgain = yield* world.session({ sessionId: "beta" })
      yield* advance("1 second")
      const outcome = sending.pollUnsafe()
      assert.isDefined(outcome, "the ask still waited a second after its target came back")
      assert.isTrue(outcome !== undefined && Exit.isSuccess(outcome), `the ask failed: ${outcome !== undefined && Exit.isFailure(outcome) ? Cause.pretty(outcome.cause) : ""}`)
      assert.strictEqual((yield* betaAgain.client.next("message")).message.id, ask.id)
      yield* betaAgain.client.roundTrip
      yield* betaAgain.client.expectNothing("message")
    }))

  it.effect("a retry that comes back after the re-send was answered collects its kept answer and writes nothing", () =>
    Effect.gen(function*() {
      const written = yield* retryBackAfterTheAnswer(message("are you there now?"))
      assert.strictEqual(written, 1, "the message id was written again on the new connection")
    }))

  it.effect("a kept answer nobody collects within the send timeout is dropped: a later retry writes again, answered from the broker's record", () =>
    Effect.gen(function*() {
      // A 50 ms send timeout: the answer kept at 200 ms is dropped at 250 ms, before the caller is back.
      const written = yield* retryBackAfterTheAnswer(message("late"), 50)
      assert.strictEqual(written, 2, "the kept answer outlived the send timeout")
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

      const outcome = yield* outcomeRightAfterReconnect(recording, sending, lostAt, stored.id)
      assert.strictEqual((yield* outcome).delivery, "queued")
      const r3Back = yield* world.session({ sessionId: "r3" })
      assert.strictEqual((yield* r3Back.client.next("message")).message.id, stored.id)
      yield* r3Back.client.roundTrip
      yield* r3Back.client.expectNothing("message")
    }))

  it.effect("a send a durable broker stored, answer lost, then the broker restarted: the re-send to a target it does not know yet is answered queued", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const { gate, store } = yield* gatedStore(disk)
      const first = yield* world.startBroker({ idleExit: null, store })
      const r3 = yield* world.session({ sessionId: "r3" })
      yield* r3.client.destroy
      const recording = recordingDialer(world)
      const { client: a } = yield* makeMemoryClient(
        memoryClientOptions({ address: world.address, dial: recording.dial }, A_ID, "alpha", { reconnectBaseMs: 200 })
      )
      yield* settle(a.connect)

      const stored = message("for when you are back")
      const sending = yield* step(a.send({ to: "r3", message: stored }))
      assert.isUndefined(sending.pollUnsafe(), "test setup: the send was answered before its commit")
      // The connection dies with the answer held for the commit; the commit stores the send; the broker
      // restarts before the client reconnects, and r3 has not registered with the new one.
      yield* step(recording.connections[0]!.link.destroy)
      yield* step(Deferred.succeed(gate, undefined))
      yield* first.crash
      yield* durableBroker(world, disk, { idleExit: null })

      yield* advance("1 second")
      assert.strictEqual(recording.connections.length, 2, "test setup: the client did not reconnect")
      const outcome = sending.pollUnsafe()
      assert.isDefined(outcome, "the send still waited a second after the reconnect")
      if (outcome === undefined) return
      assert.isTrue(Exit.isSuccess(outcome), `the re-send was refused: ${Exit.isFailure(outcome) ? Cause.pretty(outcome.cause) : ""}`)
      if (Exit.isSuccess(outcome)) assert.strictEqual(outcome.value.delivery, "queued")
      assert.strictEqual(sendsOn(recording, 1, stored.id), 1, "the message id was written more than once on the new connection")
      const r3Back = yield* world.session({ sessionId: "r3" })
      assert.strictEqual((yield* r3Back.client.next("message")).message.id, stored.id)
      yield* r3Back.client.roundTrip
      yield* r3Back.client.expectNothing("message")
    }))
})
