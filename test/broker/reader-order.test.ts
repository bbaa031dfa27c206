/**
 * The two orders a connection's reader keeps now that it runs from the
 * socket's events, not in a fiber of its own (PeerReader.ts):
 * - a batch that changes membership announces it as it ends, so a session
 *   that registers and leaves in two quick batches is announced joined, then
 *   left (Membership.announce);
 * - a connection admitted by AdmissionGate goes on on a stack of its own, so
 *   a queue of waiters released one by one does not nest their batches.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { decodeBrokerFrameText, encodeFrames, FrameDecoder, isFrameDecodeError } from "../../src/protocol/index.ts"
import { connectUnixSocket } from "../../src/transport/UnixSocket.ts"
import { registerFrame, withBroker } from "../support/broker.ts"

describe("a batch that changes membership announces it as it ends", () => {
  it.live("a session that registers, then leaves as soon as it is registered, is announced joined, then left", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const observer = yield* broker.session({ sessionId: "observer" })
      const socket = yield* connectUnixSocket(broker.socketPath)
      // From the `data` event that brings `registered`, with no fiber in between, the second batch:
      // `unregister` (then a health probe, to know when it was handled).
      yield* Effect.callback<void>((resume) => {
        const decoder = new FrameDecoder(1_048_576)
        socket.on("data", (chunk: Buffer) => {
          const texts: Array<string> = []
          decoder.push(chunk, texts)
          for (const text of texts) {
            const frame = decodeBrokerFrameText(text)
            if (isFrameDecodeError(frame)) continue
            if (frame.type === "registered") {
              socket.write(encodeFrames([JSON.stringify({ type: "unregister" }), JSON.stringify({ type: "health", requestId: "h" })]))
            }
            if (frame.type === "health_ok") resume(Effect.void)
          }
        })
        socket.write(encodeFrames([JSON.stringify(registerFrame({ sessionId: "brief" }))]))
      })
      // Both batches are handled; the observer's writer collects the feed before its answer.
      yield* observer.client.roundTrip
      const seen = observer.client.received().flatMap((frame) =>
        frame.type === "session_joined" && frame.session.id === "brief"
          ? ["joined"]
          : frame.type === "session_left" && frame.sessionId === "brief"
          ? ["left"]
          : []
      )
      assert.deepStrictEqual(seen, ["joined", "left"])
    }))
})

describe("admission", () => {
  it.live("2,000 connections waiting behind one place each register in turn, none nested in another's batch", () =>
    Effect.gen(function*() {
      // One place: every other connection waits, its `register` held, and each registration passes
      // the place to the next waiter, from inside its own batch. A scope each: no membership traffic.
      const broker = yield* withBroker({ idleExit: null, maxUnregistered: 1, registrationTimeout: "10 minutes" })
      const clients = yield* Effect.forEach(Array.from({ length: 2_000 }, (_, i) => `w${i}`), (id) => broker.connect(id))
      // Barrier: each is accepted and waits (its health probe is answered while it waits).
      yield* Effect.forEach(clients, (client) => client.roundTrip, { discard: true })
      assert.strictEqual((yield* broker.handle.stats).waiting, 1_999)
      for (let i = 1; i < clients.length; i++) {
        yield* clients[i]!.send(registerFrame({ sessionId: `w${i}`, scopeId: `scope-${i}` }))
      }
      // The first one's registration releases the chain.
      yield* clients[0]!.send(registerFrame({ sessionId: "w0", scopeId: "scope-0" }))
      const registered = yield* Effect.forEach(clients, (client) => client.next("registered", undefined, "100 seconds"))
      assert.deepStrictEqual(registered.map((frame) => frame.sessionId), clients.map((_, i) => `w${i}`))
      assert.isFalse(clients.some((client) => client.isClosed()))
    }), 120_000)
})
