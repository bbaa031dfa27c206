/**
 * A cancel or supersede found by its route (Cancels.ts, SupersedeStage.ts) of a message P49's other holder of the
 * named session's identity took drops that message's stored row, which is keyed by the session the send named, not
 * the route's receiver (Receipts.withdrawnRowKey, OutboundRecords.rowKeyOf): d sends m0 to c (away); b, a live
 * holder of c's identity, is written it and holds it unconfirmed; d withdraws it; after a crash c's return is not
 * given the withdrawn m0 (review rrmk probe 1). Durable broker over the in-memory network (a memory store playing
 * the disk); nothing waits on time but the store's lazy flush, advanced on the TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { assertDelivered } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { ackFor, message, messageFor, send } from "../support/broker.ts"
import { durableBroker } from "../support/durable.ts"
import { holder } from "../support/durableCopyLeft.ts"
import { advance, memoryNetwork } from "../support/memory.ts"

const rowsUnder = (disk: ReturnType<typeof makeMemoryMailState>, id: string): number =>
  [...disk.mail.values()].filter((row) => row.recordKey.endsWith(id)).length

const setUp = Effect.gen(function*() {
  const world = yield* memoryNetwork()
  const disk = makeMemoryMailState()
  const broker = yield* durableBroker(world, disk)
  const d = yield* world.session({ sessionId: "d", name: "d" })
  const c = yield* world.session(holder("c"))
  yield* c.client.destroy
  // b holds c's identity (name B in /tmp) and keeps what it is written in custody until it confirms (never here).
  const b = yield* world.session(holder("b", { features: [RECEIVED_V1] }))
  const m0 = message("m0")
  assertDelivered(yield* send(d.client, "c", m0))
  yield* messageFor(b.client, m0.id)
  yield* settled([d.client], [b.client])
  yield* advance(LAZY_FLUSH)
  assert.strictEqual(rowsUnder(disk, m0.id), 1, "m0 is not stored while b holds it unconfirmed: the probe sets up nothing")
  return { world, disk, broker, d, b, m0 }
})

describe("a withdrawal by route of a message P49's other holder of the named session took", () => {
  it.effect("a cancel drops m0's stored row, so c's return after a crash is not given the cancelled m0", () =>
    Effect.gen(function*() {
      const { world, disk, broker, d, b, m0 } = yield* setUp
      yield* d.client.send({ type: "cancel_message", messageId: m0.id })
      assert.deepStrictEqual({ ...(yield* ackFor(d.client, m0.id)) }, { type: "delivered", messageId: m0.id }, "the cancel was not done")
      yield* b.client.next("message_control", (frame) => frame.control.messageId === m0.id)
      yield* settled([d.client], [b.client])
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(rowsUnder(disk, m0.id), 0, "the cancel left m0's stored row (for c) in the store")

      yield* broker.crash
      yield* durableBroker(world, disk)
      const cBack = yield* world.session(holder("c"))
      yield* settled([cBack.client])
      yield* cBack.client.expectNothing("message", (frame) => frame.message.id === m0.id)
    }))

  it.effect("a supersede drops m0's stored row, so c's return after a crash is not given the superseded m0", () =>
    Effect.gen(function*() {
      const { world, disk, broker, d, b, m0 } = yield* setUp
      assertDelivered(yield* send(d.client, "b", message("m1", { supersedes: m0.id })))
      yield* b.client.next("message_control", (frame) => frame.control.messageId === m0.id)
      yield* settled([d.client], [b.client])
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(rowsUnder(disk, m0.id), 0, "the supersede left m0's stored row (for c) in the store")

      yield* broker.crash
      yield* durableBroker(world, disk)
      const cBack = yield* world.session(holder("c"))
      yield* settled([cBack.client])
      yield* cBack.client.expectNothing("message", (frame) => frame.message.id === m0.id)
    }))
})
