/**
 * A client's receipts (P70) are queued on its connection and written with
 * whatever else the same turn queued: a burst of received messages costs one
 * transport write for all its receipts, not one per receipt, and the caller
 * never waits for the write (in memory, against the fake broker). Posted
 * with no live connection, they are kept by the client (the latest
 * `MAX_KEPT_RECEIPTS`) and written on the next one (known issue 18); and
 * through a real broker, over a Unix socket, such a receipt reaches its
 * sender although the broker saw the old connection close first (a receipt
 * route outlives the receiver's reconnect, src/broker/Receipts.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import { dialUnixSocket } from "../../src/client/Dialer.ts"
import { KeptReceipts, MAX_KEPT_RECEIPTS } from "../../src/client/KeptReceipts.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { assertDelivered } from "../support/assertions.ts"
import { message, send, withBroker } from "../support/broker.ts"
import { brokerClientOptions, makeClient, memoryClientOptions, memoryFakeBroker, recordingWrites } from "./support.ts"

const A_ID = "aaaaaaaa-0000-4000-8000-0000000000d1"

describe("IntercomClient receipts", () => {
  it.effect("receipts queued in one turn reach the broker in one write, in order", () =>
    Effect.gen(function*() {
      const fake = yield* memoryFakeBroker()
      /** The frames of each write the client's connection made. */
      const writes: Array<ReadonlyArray<string>> = []
      const dial = (target: string) =>
        Effect.map(fake.dial(target), (connection) => recordingWrites(connection, writes).connection)
      const a = yield* makeClient(memoryClientOptions({ address: fake.address, dial }, A_ID, "alpha"))
      yield* a.client.connect
      const before = writes.length
      for (const messageId of ["m1", "m2", "m3"]) {
        yield* a.client.receipt({ messageId, status: "receiver_received", timestamp: 1 })
      }
      assert.strictEqual(writes.length, before, "a receipt returns before anything is written")
      yield* fake.until("three receipts", () => fake.ofType("message_receipt").length === 3)
      const batches = writes.slice(before).filter((frames) => frames.some((text) => text.includes("message_receipt")))
      assert.strictEqual(batches.length, 1, "one write carries every receipt of the turn")
      assert.deepStrictEqual(
        fake.ofType("message_receipt").map(({ frame }) => JSON.stringify(frame.receipt)),
        ["m1", "m2", "m3"].map((messageId) => JSON.stringify({ messageId, status: "receiver_received", timestamp: 1 }))
      )
    }))

  it.effect("receipts posted with no live connection wait, without connecting, for the next one: the latest MAX_KEPT_RECEIPTS, in order", () =>
    Effect.gen(function*() {
      const fake = yield* memoryFakeBroker()
      const a = yield* makeClient(memoryClientOptions(fake, A_ID, "alpha"))
      const posted = MAX_KEPT_RECEIPTS + 2
      for (let i = 0; i < posted; i++) {
        yield* a.client.receipt({ messageId: `m${i}`, status: "receiver_received", timestamp: 1 })
      }
      assert.strictEqual(fake.connections(), 0, "a receipt does not connect the client")
      yield* a.client.connect
      yield* fake.until("the kept receipts", () => fake.ofType("message_receipt").length >= MAX_KEPT_RECEIPTS)
      // A round trip behind them: every receipt the client wrote before it has been read.
      yield* a.client.list
      const written = fake.ofType("message_receipt").map(({ frame }) => {
        const receipt = frame.receipt
        return typeof receipt === "object" && receipt !== null && "messageId" in receipt ? receipt.messageId : undefined
      })
      assert.strictEqual(written.length, MAX_KEPT_RECEIPTS)
      assert.strictEqual(written[0], "m2", "the two oldest were dropped")
      assert.strictEqual(written.at(-1), `m${posted - 1}`)
      assert.isTrue(written.every((id, i) => id === `m${i + 2}`), "in the order they were posted")
    }))
})

describe("IntercomClient receipts across a reconnect (real broker)", () => {
  it.live("a receipt posted while disconnected reaches the sender after the reconnect, though the broker saw the old connection close", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const sender = yield* broker.session({ sessionId: "sender" })
      /** The receiver's connections, as dialled; its redials wait for `reopen`. */
      const dialled: Array<Connection> = []
      const redialling = yield* Deferred.make<void>()
      const reopen = yield* Deferred.make<void>()
      const dial = (target: string) =>
        Effect.gen(function*() {
          if (dialled.length > 0) {
            // The client dials again only once it dropped its live connection: a receipt now is kept.
            yield* Deferred.succeed(redialling, undefined)
            yield* Deferred.await(reopen)
          }
          const connection = yield* dialUnixSocket(target)
          dialled.push(connection)
          return connection
        })
      const receiver = yield* makeClient(brokerClientOptions(broker, A_ID, "receiver", { dial, reconnectBaseMs: 1 }))
      yield* receiver.client.connect
      const msg = message("receipt me later")
      assertDelivered(yield* send(sender.client, A_ID, msg))
      // The connection dies; the broker sees it close (the sender gets session_left) before the client is back.
      yield* dialled[0]!.destroy
      yield* Deferred.await(redialling)
      yield* sender.client.next("session_left", (frame) => frame.sessionId === A_ID)
      yield* receiver.client.receipt({ messageId: msg.id, status: "acknowledged", timestamp: 1, detail: "handled" })
      yield* Deferred.succeed(reopen, undefined)
      const forwarded = yield* sender.client.next("message_receipt")
      assert.deepStrictEqual(forwarded.receipt, { messageId: msg.id, status: "acknowledged", timestamp: 1, detail: "handled" })
      assert.strictEqual(forwarded.from.id, A_ID)
      assert.strictEqual(dialled.length, 2, "it came back on a second connection")
    }))
})

describe("KeptReceipts", () => {
  it("keeps at most MAX_KEPT_RECEIPTS, dropping the oldest", () => {
    const kept = new KeptReceipts()
    for (let i = 0; i < MAX_KEPT_RECEIPTS + 5; i++) kept.keep({ i })
    assert.strictEqual(kept.size, MAX_KEPT_RECEIPTS)
    const flushed: Array<unknown> = []
    kept.flush((frame) => flushed.push(frame) > 0)
    assert.deepStrictEqual(flushed[0], { i: 5 })
    assert.strictEqual(kept.size, 0)
  })

  it("a flush stops at the first refusal; that receipt and the rest stay kept, in order", () => {
    const kept = new KeptReceipts()
    for (const i of [1, 2, 3]) kept.keep({ i })
    const posted: Array<unknown> = []
    kept.flush((frame) => posted.length < 1 && posted.push(frame) > 0)
    assert.deepStrictEqual(posted, [{ i: 1 }])
    assert.strictEqual(kept.size, 2)
    const later: Array<unknown> = []
    kept.flush((frame) => later.push(frame) > 0)
    assert.deepStrictEqual(later, [{ i: 2 }, { i: 3 }])
  })
})
