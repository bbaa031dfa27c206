/**
 * A message the reader took from the socket before the client dropped it (a
 * liveness probe unanswered: P96) but dispatched only after: under
 * `received-v1` it is the broker's still (unconfirmed: requeued for the
 * session's next connection, or withdrawn if its sender cancelled it), so it
 * is not handed to the consumer — else the session handles a message its
 * sender may have been told is cancelled (simulation seed 10425). A base
 * broker counted it delivered: handed on, or it is lost.
 *
 * The reader's stall is the simulation's: the transport's `read` has
 * returned the frames, then the reading fiber waits before it dispatches
 * them. On the in-memory network under TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Latch } from "effect"
import type { Dialer } from "../../src/client/Dialer.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { advance, settle } from "../support/memory.ts"
import { makeMemoryClient, memoryClientOptions, memoryFakeBroker, subscribe } from "./support.ts"

const ID = "dddddddd-1042-4000-8000-00000000000d"
const peer = { id: "peer", cwd: "/tmp", model: "m", pid: 1, startedAt: 0, lastActivity: 0 }

/**
 * A fake broker granting `features` writes a message just before its answer to the client's next liveness
 * probe; the client's reader takes both from the socket and stalls before dispatching them, the probe times out
 * (the client drops the socket), then the reader goes on. What the client's consumer got.
 */
const readThenDropped = (features: ReadonlyArray<string> | undefined) =>
  Effect.gen(function*() {
    const late = message("read before the drop, dispatched after")
    let armed = false
    const fake = yield* memoryFakeBroker({
      features,
      beforeList: () => {
        if (!armed) return []
        armed = false
        return [{ type: "message", from: peer, message: late }]
      }
    })
    // Open: reads go on. Closed: a read that has taken frames waits here before returning them.
    const gate = yield* Latch.make(true)
    let taken = 0
    const dial: Dialer = (address) =>
      Effect.map(fake.dial(address), (connection) => ({
        ...connection,
        read: connection.read.pipe(
          Effect.tap(() => Effect.sync(() => taken++)),
          Effect.tap(() => gate.await)
        )
      }))
    const { client } = yield* makeMemoryClient(memoryClientOptions(fake, ID, "reader", {
      dial,
      livenessIntervalMs: 1_000,
      livenessTimeoutMs: 500,
      reconnectBaseMs: 600_000
    }))
    const inbox = yield* subscribe(client.messages, "messages")
    yield* settle(client.connect)
    armed = true
    gate.closeUnsafe()
    const before = taken
    yield* advance(1_000) // the probe: the fake answers it with the message first, in one write
    assert.isFalse(armed, "the fake wrote the message")
    assert.strictEqual(taken, before + 1, "the reader took the probe's answer and the message from the socket")
    yield* advance(500) // the probe timed out: the client dropped the socket
    assert.deepStrictEqual(fake.ended(), [1], "the client dropped its connection")
    yield* settle(gate.open) // the stalled reader goes on with what it took
    return { late, seen: inbox.seen().map((m) => m.message.id) }
  })

describe("a message read before the client dropped its connection, dispatched after", () => {
  it.effect("granted received-v1: not handed to the consumer (unconfirmed: the broker requeues or withdraws it)", () =>
    Effect.gen(function*() {
      const { seen } = yield* readThenDropped([RECEIVED_V1])
      assert.deepStrictEqual(seen, [])
    }))

  it.effect("a base broker (no received-v1): still handed to the consumer, or it would be lost", () =>
    Effect.gen(function*() {
      const { late, seen } = yield* readThenDropped(undefined)
      assert.deepStrictEqual(seen, [late.id])
    }))
})
