/**
 * Under a reused id, a cancel whose newest message is staged in replace mode (`delivery-v1`, C-DLV-6: answered
 * `delivery_queued`) withdraws the staged one, as a cancel of a staged message does, not an older message waiting
 * in the mailbox for away b (Cancels.ts, `named`; review rvc2 probe 4). The replay bound (`replayRecords: 1`) makes
 * the second send under m0 a new message. Over the in-memory network; the TestClock advanced past the coalescing
 * window (the staged message falling due, were it still staged) only.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DELIVERY_V1 } from "../../src/protocol/features.ts"
import { assertDelivered } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { ackFor, message, messageFor, send } from "../support/broker.ts"
import { advance, memoryNetwork } from "../support/memory.ts"

const m0 = message("m0")

describe("a cancel under a reused id, its newest staged", () => {
  it.effect("a cancel under a reused id whose newest message is staged withdraws that one, not the older one for b", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ replayRecords: 1 })
      const d = yield* world.session({ sessionId: "d", name: "d", frame: { features: [DELIVERY_V1] } })
      const bAway = yield* world.session({ sessionId: "b", name: "B" })
      yield* bAway.client.destroy
      const z = yield* world.session({ sessionId: "z", name: "Z", frame: { features: [DELIVERY_V1] } })
      assertDelivered(yield* send(d.client, "b", { ...m0, content: { text: "for b" } }), "queued")
      assertDelivered(yield* send(d.client, "z", message("other")))
      yield* d.client.send({
        type: "send", to: "z", message: { ...m0, content: { text: "for z" } },
        delivery: "queue", queueMode: "replace", threadId: "t"
      })
      const staged = yield* d.client.next(["delivered", "delivery_failed", "delivery_queued"], (frame) => frame.messageId === m0.id)
      assert.strictEqual(staged.type, "delivery_queued")
      yield* d.client.send({ type: "cancel_message", messageId: m0.id })
      assert.deepStrictEqual({ ...(yield* ackFor(d.client, m0.id)) }, { type: "delivered", messageId: m0.id })
      yield* advance(10_000)
      yield* settled([d.client], [z.client])
      const bBack = yield* world.session({ sessionId: "b", name: "B" })
      const probe = message("probe")
      assertDelivered(yield* send(d.client, "b", probe))
      yield* messageFor(bBack.client, probe.id)
      const under = (client: typeof z.client) =>
        client.received().flatMap((frame) => frame.type === "message" && frame.message.id === m0.id ? [frame.message.content.text] : [])
      assert.deepStrictEqual({ b: under(bBack.client), z: under(z.client) }, { b: ["for b"], z: [] })
    }))
})
