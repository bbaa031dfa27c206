/**
 * The replay window (P46, our promise): a retry with the same message id
 * within REPLAY_WINDOW_MS of the first attempt is answered from the record and
 * never delivered twice, however many other sends happened meanwhile; records
 * are bounded overall, and a flooding sender loses its own oldest first.
 * In memory under TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DeliveryRecords } from "../../src/broker/DeliveryRecords.ts"
import { DeliveryCode } from "../../src/protocol/delivery.ts"
import { OutboundRecord } from "../../src/broker/OutboundRecord.ts"
import { REPLAY_WINDOW_MS } from "../../src/protocol/constants.ts"
import { encodeFrames } from "../../src/protocol/index.ts"
import { assertDelivered } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { ackFor, message, send } from "../support/broker.ts"
import { advance, patientClock, withMemoryBroker } from "../support/memory.ts"
import type { WireClient } from "../support/wire.ts"

/** `n` sends from `from` to `to` in one write, each acknowledged. */
const flood = (from: WireClient, to: string, n: number) =>
  Effect.gen(function*() {
    const msgs = Array.from({ length: n }, (_, i) => message(`flood ${i}`))
    yield* from.sendRaw(encodeFrames(msgs.map((msg) => JSON.stringify({ type: "send", to, message: msg }))))
    for (const msg of msgs) assertDelivered(yield* ackFor(from, msg.id))
    return msgs
  })

const copiesOf = (client: WireClient, messageId: string) =>
  client.received().filter((frame) => frame.type === "message" && frame.message.id === messageId).length

describe("the replay window", () => {
  it.effect("a retry inside the window after 5,000 other sends is answered from its record, not delivered twice", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const a = yield* broker.session({ sessionId: "a" })
      const b = yield* broker.session({ sessionId: "b" })
      const c = yield* broker.session({ sessionId: "c" })
      const original = message("exactly once")
      assertDelivered(yield* send(a.client, "c", original))
      yield* flood(b.client, "c", 5_000)
      yield* advance(REPLAY_WINDOW_MS - 10_000)
      assertDelivered(yield* send(a.client, "c", original))
      yield* settled([a.client], [c.client])
      assert.strictEqual(copiesOf(c.client, original.id), 1)
      // 5,000 sends in one step can take more than TestClock's one second of real time on a loaded machine.
    }).pipe(patientClock), 60_000)

  it.effect("past the overall bound, the sender with the most records loses its oldest; the others keep their window", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ replayRecords: 100 })
      const a = yield* broker.session({ sessionId: "a" })
      const b = yield* broker.session({ sessionId: "b" })
      const c = yield* broker.session({ sessionId: "c" })
      const kept = message("a's, kept")
      assertDelivered(yield* send(a.client, "c", kept))
      const flooded = yield* flood(b.client, "c", 300)
      // a's record survives b's flood; b's oldest went to make room.
      assertDelivered(yield* send(a.client, "c", kept))
      assertDelivered(yield* send(b.client, "c", flooded[0]!))
      yield* settled([a.client, b.client], [c.client])
      assert.strictEqual(copiesOf(c.client, kept.id), 1)
      assert.strictEqual(copiesOf(c.client, flooded[0]!.id), 2, "b's oldest record was not the one dropped")
    }), 60_000)
})

describe("DeliveryRecords bounds", () => {
  const limits = { windowMs: 1_000, retentionMs: 10_000, maxRecords: 10, maxBytes: 1_000_000 }
  const ok = { ok: true, delivery: "socket_delivered" } as const
  const f = message("f")
  const record = (sender: string, id: string, target = "t") => OutboundRecord.of(sender, target, { ...f, id }, undefined)

  it("keeps a record at least the window, and up to the retention while there is room", () => {
    const records = new DeliveryRecords(limits)
    records.set(record("s", "1"), ok, 0)
    assert.isDefined(records.get("s", "1", 9_999))
    assert.isUndefined(records.get("s", "1", 10_001))
  })

  it("over the bound, drops records past the window first, oldest first", () => {
    const records = new DeliveryRecords(limits)
    for (let i = 0; i < 10; i++) records.set(record("old", `${i}`), ok, i)
    for (let i = 0; i < 3; i++) records.set(record("new", `${i}`), ok, 5_000 + i)
    assert.strictEqual(records.size, 10)
    assert.deepStrictEqual([0, 1, 2, 3].map((i) => records.get("old", `${i}`, 5_010) !== undefined), [false, false, false, true])
    for (let i = 0; i < 3; i++) assert.isDefined(records.get("new", `${i}`, 5_010))
  })

  it("when every record is inside the window, only the heaviest sender loses records", () => {
    const records = new DeliveryRecords(limits)
    records.set(record("light", "1"), ok, 0)
    for (let i = 0; i < 30; i++) records.set(record("heavy", `${i}`), ok, 0)
    assert.isAtMost(records.size, 10)
    assert.isDefined(records.get("light", "1", 0))
    assert.isDefined(records.get("heavy", "29", 0))
    assert.isUndefined(records.get("heavy", "0", 0))
  })

  it("a rewritten outcome's longer reason counts against the byte bound (review revd)", () => {
    // Each record here is estimated at 246 bytes: four fit in 1,000.
    const records = new DeliveryRecords({ ...limits, maxRecords: 1_000, maxBytes: 1_000 })
    for (let i = 0; i < 3; i++) records.set(record("s", `${i}`), ok, 0)
    records.rewrite("s", "0", { ok: false, code: DeliveryCode.DeliverySuperseded, reason: `Superseded by ${"n".repeat(300)}`, retryable: false }, undefined, "t")
    records.set(record("s", "3"), ok, 5_000)
    assert.isUndefined(records.get("s", "0", 5_000), "the rewritten record's reason was not counted")
    assert.strictEqual(records.size, 3)
  })

  it("is bounded in bytes too", () => {
    const records = new DeliveryRecords({ ...limits, maxRecords: 1_000, maxBytes: 10_000 })
    for (let i = 0; i < 200; i++) records.set(record("s", `${i}`, "t".repeat(100)), ok, 0)
    assert.isBelow(records.size, 200)
    assert.isDefined(records.get("s", "199", 0))
  })
})
