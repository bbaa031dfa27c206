/**
 * A client's receipts (P70) are queued on its connection and written with
 * whatever else the same turn queued: a burst of received messages costs one
 * transport write for all its receipts, not one per receipt, and the caller
 * never waits for the write (in memory, against the fake broker).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { makeClient, memoryClientOptions, memoryFakeBroker, recordingWrites } from "./support.ts"

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
})
