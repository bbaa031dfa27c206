/**
 * A cancel under a reused id names the message the id stands for now: the sender's newest under it, whether that
 * one waits in the mailbox or was delivered (Cancels.ts, `deliveredLater`; review revmailkey2 probe 2). The replay
 * bound (`replayRecords: 1`) pushes a message's record out, so the next send under its id is a new message. Cases:
 * the newest delivered while an older one waits for an away session (the probe: the cancel withdrew the older one,
 * and the receiver of the newest was told nothing); the mirror (the newest waits, the older was delivered); a
 * mailbox cancel that, with the later message's record gone, leaves that message's route unmarked (it was marked
 * cancelled, and the message, given back unconfirmed, came with a cancel); and a durable restart between the sends and
 * the cancel (a restored mailbox copy rewrote the later message's record to `queued`). Over the in-memory network;
 * no time waited on but the store's lazy flush, advanced on the TestClock.
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
import { cancelAnsweredDelivered, dWithBAwayAndZ, forBThenForZ, textsOnReturn } from "../support/reusedIdCancel.ts"

const m0 = message("m0")

describe("a cancel under a reused id names the sender's newest message under it", () => {
  it.effect("the newest delivered (to z): z is sent the cancel, and b's return still gets the older one", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      yield* durableBroker(world, disk, { replayRecords: 1 })
      const { d, z } = yield* dWithBAwayAndZ(world)
      yield* forBThenForZ(d.client, z.client, m0)
      yield* cancelAnsweredDelivered(d.client, m0)
      yield* settled([d.client], [z.client])
      // Fails as "[z] no message_control ... arrived" when the cancel withdrew the older message waiting for b.
      const control = yield* z.client.next("message_control", (frame) => frame.control.messageId === m0.id)
      assert.strictEqual(control.control.action, "cancel")
      const bBack = yield* world.session({ sessionId: "b", name: "B" })
      const forB = yield* messageFor(bBack.client, m0.id)
      assert.strictEqual(forB.message.content.text, "for b")
    }))

  it.effect("the newest waiting (for b): it is withdrawn, z, given the older one, is told nothing", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ replayRecords: 1 })
      const { d, z } = yield* dWithBAwayAndZ(world)
      assertDelivered(yield* send(d.client, "z", { ...m0, content: { text: "for z" } }))
      yield* messageFor(z.client, m0.id)
      assertDelivered(yield* send(d.client, "z", message("other")))
      assertDelivered(yield* send(d.client, "b", { ...m0, content: { text: "for b" } }), "queued")
      yield* cancelAnsweredDelivered(d.client, m0)
      yield* settled([d.client], [z.client])
      yield* z.client.expectNothing("message_control", (frame) => frame.control.messageId === m0.id)
      // b's return is flushed what waits for it, the probe last: the withdrawn message is not among it.
      assert.deepStrictEqual((yield* textsOnReturn(world, d.client, m0, { sessionId: "b", name: "B" })).texts, [])
    }))

  it.effect("a mailbox cancel leaves a later message's route unmarked: given back unconfirmed, it reaches its receiver's return with no cancel behind it", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ replayRecords: 1 })
      const zAs = { sessionId: "z", name: "Z", frame: { features: [RECEIVED_V1] } }
      const { d, z } = yield* dWithBAwayAndZ(world, zAs)
      yield* forBThenForZ(d.client, z.client, m0)
      // The later message's record is pushed out too (its route stays): the cancel cannot tell it is later, and
      // the mailbox settles it — its route, another message's, must not take the cancel's fate.
      assertDelivered(yield* send(d.client, "z", message("other2")))
      yield* d.client.send({ type: "cancel_message", messageId: m0.id })
      yield* ackFor(d.client, m0.id)
      yield* settled([d.client], [z.client])
      // z read "for z" and never confirmed it: its close gives it back, for z's return.
      yield* z.client.destroy
      const { back: zBack, texts } = yield* textsOnReturn(world, d.client, m0, zAs)
      assert.deepStrictEqual(texts, ["for z"])
      // Fails when the mailbox cancel marked the route of "for z" cancelled: given back so, it came with a cancel.
      yield* zBack.client.expectNothing("message_control", (frame) => frame.control.messageId === m0.id)
    }))

  it.effect("after a durable restart: the restored record still names the delivered message, and z is sent the cancel", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* durableBroker(world, disk, { replayRecords: 1 })
      const { d, z } = yield* dWithBAwayAndZ(world)
      yield* forBThenForZ(d.client, z.client, m0)
      yield* advance(LAZY_FLUSH)
      yield* first.crash
      yield* durableBroker(world, disk)
      const dBack = yield* world.session({ sessionId: "d", name: "d" })
      const zBack = yield* world.session({ sessionId: "z", name: "Z" })
      // A retry of the delivered send is still answered delivered (the restored mail for b rewrote it `queued`).
      assertDelivered(yield* send(dBack.client, "z", { ...m0, content: { text: "for z" } }))
      yield* cancelAnsweredDelivered(dBack.client, m0)
      yield* settled([dBack.client], [zBack.client])
      const control = yield* zBack.client.next("message_control", (frame) => frame.control.messageId === m0.id)
      assert.strictEqual(control.control.action, "cancel")
      const bBack = yield* world.session({ sessionId: "b", name: "B" })
      const forB = yield* messageFor(bBack.client, m0.id)
      assert.strictEqual(forB.message.content.text, "for b")
    }))
})
