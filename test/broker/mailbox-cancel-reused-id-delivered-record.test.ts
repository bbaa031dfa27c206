/**
 * A cancel under a reused id and the replay records of the two messages under it: d's first message under m0 waits
 * for b (away); past its replay record d sends a second under m0 to z, delivered, its record kept. d's cancel of m0
 * names the delivered message for z, the newest under the id (task cancel2; it withdrew the one for b before, which
 * review revmailkey2 probe 3 found rewriting z's record too): a retry of the message for z is answered from its
 * record, cancelled, and the message for b was not withdrawn — its record is not the one rewritten.
 * Durable broker over the in-memory network; no time waited on.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { assertDelivered, assertFailed } from "../support/assertions.ts"
import { ackFor, message, messageFor, send } from "../support/broker.ts"
import { durableBroker } from "../support/durable.ts"
import { memoryNetwork } from "../support/memory.ts"
import { dWithBAwayAndZ } from "../support/reusedIdCancel.ts"

describe("a mailbox cancel under a reused id and the record of the other message", () => {
  it.effect("a retry of the delivered message for z, which the cancel named, is answered cancelled; b's return gets its own", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      yield* durableBroker(world, disk, { replayRecords: 1 })
      const { d, z } = yield* dWithBAwayAndZ(world)
      const m0 = message("m0")
      assertDelivered(yield* send(d.client, "b", { ...m0, content: { text: "for b" } }), "queued")
      // The replay bound pushes m0's record out, so the next send under m0's id is a new message.
      assertDelivered(yield* send(d.client, "z", message("other")))
      const forZ = { ...m0, content: { text: "for z" } }
      assertDelivered(yield* send(d.client, "z", forZ))
      yield* messageFor(z.client, m0.id)
      yield* d.client.send({ type: "cancel_message", messageId: m0.id })
      assert.deepStrictEqual({ ...(yield* ackFor(d.client, m0.id)) }, { type: "delivered", messageId: m0.id })
      // Its retry (same id, same content, same target): answered from its replay record, as the cancel rewrote it.
      assertFailed(yield* send(d.client, "z", forZ), "E_DELIVERY_CANCELLED")
      const bBack = yield* world.session({ sessionId: "b", name: "B" })
      const forB = yield* messageFor(bBack.client, m0.id)
      assert.strictEqual(forB.message.content.text, "for b")
    }))
})
