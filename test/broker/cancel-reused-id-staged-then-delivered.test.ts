/**
 * Under a reused id, a cancel whose newest message was delivered (to c) after an older one was staged in `replace`
 * mode (for z) names the delivered one: c is sent the cancel and the staged "for z" stays, delivered when its window
 * closes — with an older message under the id waiting in the mailbox for away b (`Cancels.named`) and with none
 * (`Cancels.namedPastStaged`). Both withdrew the staged one, answered `delivered`, and left the id's newest live
 * (review rvlate2 probe 1). `replayRecords: 1` makes each send under m0 a new message. In-memory network; the
 * TestClock is advanced past the coalescing window only (the staged message falling due: modelled time, not a
 * barrier); barriers are round trips.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DELIVERY_V1 } from "../../src/protocol/features.ts"
import { assertDelivered } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { ackFor, message, messageFor, send } from "../support/broker.ts"
import { advance, memoryNetwork } from "../support/memory.ts"

const m0 = message("m0")

/** d's cancel of m0 after "for z" staged and "for c" delivered under it (and "for b" queued first, when `olderWaiting`). */
const stagedThenDelivered = (olderWaiting: boolean) =>
  Effect.gen(function*() {
    const world = yield* memoryNetwork()
    yield* world.startBroker({ replayRecords: 1 })
    const d = yield* world.session({ sessionId: "d", name: "d", frame: { features: [DELIVERY_V1] } })
    const bAway = yield* world.session({ sessionId: "b", name: "B" })
    yield* bAway.client.destroy
    const z = yield* world.session({ sessionId: "z", name: "Z", frame: { features: [DELIVERY_V1] } })
    const c = yield* world.session({ sessionId: "c", name: "C" })
    if (olderWaiting) {
      assertDelivered(yield* send(d.client, "b", { ...m0, content: { text: "for b" } }), "queued")
      assertDelivered(yield* send(d.client, "z", message("other")))
    }
    yield* d.client.send({
      type: "send", to: "z", message: { ...m0, content: { text: "for z" } },
      delivery: "queue", queueMode: "replace", threadId: "t"
    })
    const staged = yield* d.client.next(["delivered", "delivery_failed", "delivery_queued"], (frame) => frame.messageId === m0.id)
    assert.strictEqual(staged.type, "delivery_queued", "for z was not staged: the test sets up nothing")
    assertDelivered(yield* send(d.client, "c", message("other2")))
    // The id's newest message: "for c", delivered now.
    assertDelivered(yield* send(d.client, "c", { ...m0, content: { text: "for c" } }))
    yield* messageFor(c.client, m0.id)
    yield* d.client.send({ type: "cancel_message", messageId: m0.id })
    const answer = yield* ackFor(d.client, m0.id)
    yield* settled([d.client], [c.client])
    yield* advance(10_000)
    yield* settled([d.client], [z.client])
    const controls = c.client.received().flatMap((frame) =>
      frame.type === "message_control" && frame.control.messageId === m0.id ? [frame.control.action] : []
    )
    const forZ = z.client.received().flatMap((frame) =>
      frame.type === "message" && frame.message.id === m0.id ? [frame.message.content.text] : []
    )
    assert.deepStrictEqual({ answer: answer.type, c: controls, z: forZ }, { answer: "delivered", c: ["cancel"], z: ["for z"] })
  })

describe("a cancel under a reused id: staged, then a later message delivered", () => {
  it.effect("with an older message waiting in the mailbox, the delivered one is cancelled and the staged one stays", () =>
    stagedThenDelivered(true))
  it.effect("with nothing waiting, the delivered one is cancelled and the staged one stays", () => stagedThenDelivered(false))
})
