/**
 * A cancel or supersede found by its route (Cancels.ts, SupersedeStage.ts) under a reused id drops the stored row
 * of the message it withdraws — its receiver's — and no other: another message under the id, for another session,
 * written and held unconfirmed in that session's custody, keeps its row, and after a crash is given to that
 * session's return (review revmailkey2 probe 1). Durable broker over the in-memory network (a memory store playing
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
import { advance, memoryNetwork } from "../support/memory.ts"

/** The texts of the stored rows under `id`. */
const rowsUnder = (disk: ReturnType<typeof makeMemoryMailState>, id: string): Array<string> =>
  [...disk.mail.values()].filter((row) => row.recordKey.endsWith(id))
    .map((row) => row.text.includes("for z") ? "for z" : row.text.includes("for b") ? "for b" : "other").sort()

const zAs = { sessionId: "z", name: "Z", frame: { features: [RECEIVED_V1] } }
const bAs = { sessionId: "b", name: "B", frame: { features: [RECEIVED_V1] } }

describe("a withdrawal found by its route under a reused id", () => {
  it.effect("a cancel by route keeps the stored row of the other message under the id held unconfirmed by another session", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* durableBroker(world, disk, { replayRecords: 1 })
      const d = yield* world.session({ sessionId: "d", name: "d" })
      const z = yield* world.session(zAs)
      const b = yield* world.session(bAs)
      const m0 = message("m0")
      // "for z": written to z, read, never confirmed (z's custody keeps its row).
      assertDelivered(yield* send(d.client, "z", { ...m0, content: { text: "for z" } }))
      yield* messageFor(z.client, m0.id)
      // The replay bound pushes m0's record out, so the next send under m0's id is a new message.
      assertDelivered(yield* send(d.client, "b", message("other")))
      assertDelivered(yield* send(d.client, "b", { ...m0, content: { text: "for b" } }))
      yield* messageFor(b.client, m0.id)
      yield* settled([d.client], [z.client, b.client])
      yield* advance(LAZY_FLUSH)
      const before = rowsUnder(disk, m0.id)
      assert.deepStrictEqual(before, ["for b", "for z"], "the store does not hold both messages: the test sets up nothing")
      // d cancels its message under m0 (the one it sent last, for b): found by its route.
      yield* d.client.send({ type: "cancel_message", messageId: m0.id })
      assert.deepStrictEqual({ ...(yield* ackFor(d.client, m0.id)) }, { type: "delivered", messageId: m0.id })
      yield* b.client.next("message_control", (frame) => frame.control.messageId === m0.id)
      yield* settled([d.client], [z.client, b.client])
      yield* advance(LAZY_FLUSH)
      const after = rowsUnder(disk, m0.id)
      assert.deepStrictEqual(after, ["for z"], "the cancel of b's message dropped the stored row of z's, never withdrawn")

      yield* first.crash
      yield* durableBroker(world, disk)
      const zBack = yield* world.session(zAs)
      const forZ = yield* messageFor(zBack.client, m0.id)
      assert.strictEqual(forZ.message.content.text, "for z", "z's return after the restart was not given its unconfirmed message")
    }))

  it.effect("a supersede by route keeps the stored row of the other message under the id held unconfirmed by another session", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* durableBroker(world, disk, { replayRecords: 1 })
      const d = yield* world.session({ sessionId: "d", name: "d" })
      const z = yield* world.session(zAs)
      const b = yield* world.session(bAs)
      const m0 = message("m0")
      // "for z": written to z, read, never confirmed (z's custody keeps its row).
      assertDelivered(yield* send(d.client, "z", { ...m0, content: { text: "for z" } }))
      yield* messageFor(z.client, m0.id)
      // The replay bound pushes m0's record out, so the next send under m0's id is a new message.
      assertDelivered(yield* send(d.client, "b", message("other")))
      assertDelivered(yield* send(d.client, "b", { ...m0, content: { text: "for b" } }))
      yield* messageFor(b.client, m0.id)
      yield* settled([d.client], [z.client, b.client])
      yield* advance(LAZY_FLUSH)
      const before = rowsUnder(disk, m0.id)
      assert.deepStrictEqual(before, ["for b", "for z"], "the store does not hold both messages: the test sets up nothing")
      // d supersedes its message under m0 at b (the one it sent last): found by its route.
      assertDelivered(yield* send(d.client, "b", message("m1", { supersedes: m0.id })))
      yield* b.client.next("message_control", (frame) => frame.control.messageId === m0.id)
      yield* settled([d.client], [z.client, b.client])
      yield* advance(LAZY_FLUSH)
      const after = rowsUnder(disk, m0.id)
      assert.deepStrictEqual(after, ["for z"], "the supersede of b's message dropped the stored row of z's, never withdrawn")

      yield* first.crash
      yield* durableBroker(world, disk)
      const zBack = yield* world.session(zAs)
      const forZ = yield* messageFor(zBack.client, m0.id)
      assert.strictEqual(forZ.message.content.text, "for z", "z's return after the restart was not given its unconfirmed message")
    }))
})
