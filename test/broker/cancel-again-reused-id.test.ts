/**
 * A cancel again under a reused id — a retry of one answered `delivered`, its answer lost with a connection or a
 * broker — is answered from the fate of the id's newest message and withdraws nothing more: not the older message
 * waiting in the mailbox for away b, which its sender never withdrew (Cancels.ts, `named`; review rvc2 probes 1–3).
 * The replay bound (`replayRecords: 1`) makes the second send under m0 a new message. Cases: the newest withdrawn
 * from the mailbox (its record says cancelled, no route); the newest delivered to z and cancelled along its route,
 * its record pushed out since (its route keeps the withdrawal); the same across a durable restart (the restored
 * record says cancelled, no route). Over the in-memory network; no time waited on but the store's lazy flush,
 * advanced on the TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { assertDelivered } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { ackFor, message, messageFor, send } from "../support/broker.ts"
import { durableBroker } from "../support/durable.ts"
import { advance, memoryNetwork } from "../support/memory.ts"
import { cancelAnsweredDelivered, dWithBAway, dWithBAwayAndZ, forBThenForZ, textsOnReturn } from "../support/reusedIdCancel.ts"

const m0 = message("m0")

describe("a cancel again under a reused id", () => {
  it.effect("a cancel again of the newest, withdrawn from the mailbox, is answered delivered and leaves the older one for b", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ replayRecords: 1 })
      const d = yield* dWithBAway(world)
      const cAway = yield* world.session({ sessionId: "c", name: "C" })
      yield* cAway.client.destroy
      assertDelivered(yield* send(d.client, "b", { ...m0, content: { text: "for b" } }), "queued")
      assertDelivered(yield* send(d.client, "c", message("other")), "queued")
      assertDelivered(yield* send(d.client, "c", { ...m0, content: { text: "for c" } }), "queued")
      yield* cancelAnsweredDelivered(d.client, m0)
      // The same cancel again (as after its answer was lost with a connection): answered as the first was.
      yield* d.client.send({ type: "cancel_message", messageId: m0.id })
      const again = yield* ackFor(d.client, m0.id)
      // b's return is flushed what waits for it, the probe last.
      const { texts: forB } = yield* textsOnReturn(world, d.client, m0, { sessionId: "b", name: "B" })
      // Answered as the first was (delivered), and b is given its message.
      assert.deepStrictEqual({ again: again.type, b: forB }, { again: "delivered", b: ["for b"] })
    }))

  it.effect("a cancel again of the delivered newest, its record pushed out since, is answered from its route and leaves the older one for b", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ replayRecords: 1 })
      const { d, z } = yield* dWithBAwayAndZ(world)
      yield* forBThenForZ(d.client, z.client, m0)
      yield* cancelAnsweredDelivered(d.client, m0)
      yield* settled([d.client], [z.client])
      yield* z.client.next("message_control", (frame) => frame.control.messageId === m0.id)
      // Another send pushes the replay record of "for z" out; its route stays, with the cancel's withdrawal.
      assertDelivered(yield* send(d.client, "z", message("other2")))
      // The same cancel again (its answer lost, say): the id's newest was cancelled already.
      yield* d.client.send({ type: "cancel_message", messageId: m0.id })
      const again = yield* ackFor(d.client, m0.id)
      // b's return is flushed what waits for it, the probe last.
      const { texts: forB } = yield* textsOnReturn(world, d.client, m0, { sessionId: "b", name: "B" })
      // Answered as the first was (delivered), and b is given its message.
      assert.deepStrictEqual({ again: again.type, b: forB }, { again: "delivered", b: ["for b"] })
    }))

  it.effect("a cancel again after a durable restart, the first having gone to z, is answered from the restored record and leaves the older one for b", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* durableBroker(world, disk, { replayRecords: 1 })
      const { d, z } = yield* dWithBAwayAndZ(world)
      yield* forBThenForZ(d.client, z.client, m0)
      yield* cancelAnsweredDelivered(d.client, m0)
      yield* settled([d.client], [z.client])
      yield* z.client.next("message_control", (frame) => frame.control.messageId === m0.id)
      yield* advance(LAZY_FLUSH)
      yield* first.crash
      yield* durableBroker(world, disk)
      const dBack = yield* world.session({ sessionId: "d", name: "d" })
      // The same cancel again (as after its answer was lost with the crash).
      yield* dBack.client.send({ type: "cancel_message", messageId: m0.id })
      const again = yield* ackFor(dBack.client, m0.id)
      assert.strictEqual(again.type, "delivered")
      // b's return is given its message (restored in the mailbox): none comes, the world idle, when it was withdrawn.
      const bBack = yield* world.session({ sessionId: "b", name: "B" })
      const forB = yield* messageFor(bBack.client, m0.id)
      assert.strictEqual(forB.message.content.text, "for b")
    }))
})
