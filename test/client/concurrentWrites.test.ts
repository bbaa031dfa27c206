/**
 * A client writes from many fibers at once (sends, replies, receipts, its
 * `received` confirmations), while a socket `Connection` takes one write at a
 * time: it keeps one waiter for the write the kernel did not take whole. Sends
 * too large for the socket's buffer, started in the same instant, must each
 * complete and arrive in the order they were sent. Before the client queued
 * its writes, every such send but the last waited for a write callback that
 * was never passed on to it, until the connection closed.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { message, withBroker } from "../support/broker.ts"
import { brokerClientOptions, makeClient, subscribe } from "./support.ts"

const A_ID = "aaaaaaaa-0000-4000-8000-0000000000c1"
const B_ID = "bbbbbbbb-0000-4000-8000-0000000000c2"

describe("IntercomClient writes from many fibers", () => {
  it.live("three sends larger than the socket's buffer, started at once, all complete and arrive in order", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const a = yield* makeClient(brokerClientOptions(broker, A_ID, "alpha"))
      const b = yield* makeClient(brokerClientOptions(broker, B_ID, "beta"))
      yield* a.client.connect
      yield* b.client.connect
      const inbox = yield* subscribe(b.client.messages, "beta's messages")
      // ~600 KB each: far past a Unix socket's send buffer, so no write is taken whole and the
      // next send's write starts while the one before it still waits.
      const sent = [0, 1, 2].map((i) => message(`${i}:${"x".repeat(600_000)}`))
      const sending = yield* Effect.forEach(sent, (m) =>
        Effect.forkChild(a.client.send({ to: "beta", message: m }), { startImmediately: true }))
      for (const fiber of sending) {
        const outcome = yield* Fiber.join(fiber).pipe(Effect.timeoutOption("15 seconds"))
        assert.strictEqual(outcome._tag, "Some", "a send whose write was overtaken never completed")
      }
      for (const m of sent) assert.strictEqual((yield* inbox.next()).message.id, m.id)
    }))
})
