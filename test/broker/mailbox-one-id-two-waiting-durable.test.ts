/**
 * mailbox-one-id-two-waiting.test.ts's second case on a durable broker that then restarts, over the in-memory
 * network (a memory store playing the disk): d's m0 is delivered to b, read and never confirmed; the replay bound
 * (`replayRecords: 1`) pushes m0's record out, so d's next message under m0's id, "for z", sent to z (away), is a
 * new message, queued and stored. b's connection then drops and m0 goes back to the mailbox while "for z" waits
 * there (a probe queued for b behind it proves the close was handled). Both must be stored, and each session's
 * return after the restart given its own message. Nothing waits on time but the store's lazy flush, advanced on
 * the TestClock.
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

const bAs = { sessionId: "b", name: "B", frame: { features: [RECEIVED_V1] } }

describe("a durable broker: a message given back while another under its id is queued", () => {
  it.effect("stores both: after a restart, z's return gets its message and b's return gets m0", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* durableBroker(world, disk, { replayRecords: 1 })
      const d = yield* world.session({ sessionId: "d", name: "d" })
      const z = yield* world.session({ sessionId: "z", name: "Z" })
      yield* z.client.destroy
      const b = yield* world.session(bAs)
      const m0 = message("m0")
      assertDelivered(yield* send(d.client, "b", m0))
      yield* messageFor(b.client, m0.id)
      // The replay bound pushes m0's record out; its route (to b) stays.
      assertDelivered(yield* send(d.client, "b", message("other")))
      yield* d.client.send({ type: "send", to: "z", message: { ...m0, content: { text: "for z" } } })
      const queued = yield* ackFor(d.client, m0.id)
      assert.strictEqual(queued.type === "delivered" ? queued.delivery : queued.type, "queued", "the message for z was not queued: the test sets up nothing")
      yield* settled([d.client, b.client])
      yield* b.client.destroy
      assertDelivered(yield* send(d.client, "b", message("probe")), "queued")
      yield* advance(LAZY_FLUSH)
      const texts = [...disk.mail.values()].filter((row) => row.recordKey.endsWith(m0.id))
        .map((row) => row.text.includes("for z") ? "for z" : "m0").sort()
      assert.deepStrictEqual(texts, ["for z", "m0"], "the store does not hold both messages under m0's id")

      yield* first.crash
      yield* durableBroker(world, disk)
      const zBack = yield* world.session({ sessionId: "z", name: "Z" })
      const forZ = yield* messageFor(zBack.client, m0.id)
      assert.strictEqual(forZ.message.content.text, "for z", "z's return after the restart was not given the message for it")
      const bBack = yield* world.session(bAs)
      const forB = yield* messageFor(bBack.client, m0.id)
      assert.strictEqual(forB.message.content.text, m0.content.text, "b's return after the restart was not given m0 back")
    }))
})
