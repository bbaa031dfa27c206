/**
 * A client writes from many fibers at once (sends, replies, receipts, its
 * `received` confirmations), while a socket `Connection` takes one write at a
 * time: it keeps one waiter for the write the kernel did not take whole. Sends
 * too large for the socket's buffer, started in the same instant, must each
 * complete and arrive in the order they were sent. Before the client queued
 * its writes, every such send but the last waited for a write callback that
 * was never passed on to it, until the connection closed. Sends that one
 * batch of acknowledgements resumes, each sending again at once, write their
 * next frames as one transport write, not one each.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import type { Dialer } from "../../src/client/Dialer.ts"
import { message, withBroker } from "../support/broker.ts"
import { settle } from "../support/memory.ts"
import {
  brokerClientOptions,
  makeClient,
  makeMemoryClient,
  memoryClientOptions,
  memoryFakeBroker,
  recordingWrites,
  subscribe
} from "./support.ts"

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

  it.effect("sends resumed by one batch of acknowledgements send again as one transport write", () =>
    Effect.gen(function*() {
      const fake = yield* memoryFakeBroker()
      const writes: Array<ReadonlyArray<string>> = []
      const dial: Dialer = (target) => Effect.map(fake.dial(target), (connection) => recordingWrites(connection, writes).connection)
      const { client } = yield* makeMemoryClient(memoryClientOptions({ address: fake.address, dial }, A_ID, "alpha"))
      yield* settle(client.connect)
      const send = (text: string) => client.send({ to: "anyone", message: message(text) })
      yield* settle(
        Effect.forEach([0, 1, 2], (i) => Effect.andThen(send(`first ${i}`), send(`second ${i}`)), { concurrency: "unbounded" }),
        "three senders, two sends each"
      )
      const seconds = writes.map((frames) => frames.filter((text) => text.includes('"second ')).length).filter((n) => n > 0)
      // The fake answers the first three sends in one batch: each of their senders sends again from its dispatch.
      assert.deepStrictEqual(fake.sent.filter((f) => f.frame.type === "delivered").length, 6)
      assert.deepStrictEqual(seconds, [3], `writes: ${JSON.stringify(writes.map((frames) => frames.length))}`)
    }))
})
