/**
 * superseded-copy-reused-id.test.ts on a durable broker that then restarts,
 * over the in-memory network (a memory store playing the disk): d's m0 is
 * delivered to b-1, which never confirms it; the replay bound
 * (`replayRecords: 1`) pushes m0's record out while its route stays, so d's
 * next message under m0's id, "for z", sent to z (away), is a new message,
 * queued and stored under the same key, each message its own row (m0's,
 * never confirmed, stays: task mailkey2). d then supersedes m0 at b (b-1 is
 * told). The supersede's record rewrite once dropped the stored row under the
 * key — "for z"'s, not m0's — so the broker that restarted after it had lost
 * "for z", though the mailbox still held it in memory. What the mailbox
 * keeps under the key after a supersede, the store keeps too, and m0's own
 * row goes (Router's record observer, SupersedeStage.ts). Nothing waits on time but the store's lazy
 * flush, advanced on the TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { RECEIVED_V1, REJOIN_V1 } from "../../src/protocol/features.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { assertDelivered } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { ackFor, message, messageFor, send } from "../support/broker.ts"
import { durableBroker } from "../support/durable.ts"
import { advance, memoryNetwork } from "../support/memory.ts"

/** b's client: confirms what it reads (never here, as nothing asks it to), and rejoins as instance b-1. */
const B_1 = { features: [RECEIVED_V1, REJOIN_V1], instanceId: "b-1" }

describe("a durable broker: a supersede of a delivered message whose id a later queued message reuses", () => {
  it.effect("keeps the later message stored: z's return after a restart gets it", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* durableBroker(world, disk, { replayRecords: 1 })
      const d = yield* world.session({ sessionId: "d", name: "d" })
      const z = yield* world.session({ sessionId: "z", name: "Z" })
      yield* z.client.destroy
      const b1 = yield* world.session({ sessionId: "b", name: "B", frame: B_1 })
      const m0 = message("m0")
      assertDelivered(yield* send(d.client, "b", m0))
      yield* messageFor(b1.client, m0.id)
      // The replay bound pushes m0's record out; its route (to b-1) stays.
      assertDelivered(yield* send(d.client, "b", message("other")))
      yield* d.client.send({ type: "send", to: "z", message: { ...m0, content: { text: "for z" } } })
      const queued = yield* ackFor(d.client, m0.id)
      assert.strictEqual(queued.type === "delivered" ? queued.delivery : queued.type, "queued", "the message for z was not queued: the test sets up nothing")
      yield* advance(LAZY_FLUSH)
      // The rows stored under m0's id, by whether each holds the text "for z" (a row's text is the encoded mail).
      const stored = () =>
        [...disk.mail.values()].filter((row) => row.recordKey.endsWith(m0.id))
          .map((row) => row.text.includes("for z") ? "for z" : "m0").sort()
      assert.deepStrictEqual(stored(), ["for z", "m0"], "m0, unconfirmed, and the message for z are not both stored: the test sets up nothing")

      const m1 = message("m1", { supersedes: m0.id })
      assertDelivered(yield* send(d.client, "b", m1))
      const control = yield* b1.client.next("message_control", (frame) => frame.control.messageId === m0.id)
      assert.strictEqual(control.control.action, "supersede", "b-1 was not told of the supersede: the test sets up nothing")
      yield* settled([d.client], [b1.client])
      yield* advance(LAZY_FLUSH)
      assert.deepStrictEqual(stored(), ["for z"], "the supersede of m0 dropped the stored row of the message for z, or kept m0's")

      yield* first.crash
      yield* durableBroker(world, disk)
      const zBack = yield* world.session({ sessionId: "z", name: "Z" })
      const got = yield* messageFor(zBack.client, m0.id)
      assert.strictEqual(got.message.content.text, "for z", "z's return after the restart was not given the message for it")
    }))
})
