/**
 * `state-epoch-v1`: `registered` carries the broker's state epoch to a client
 * that asked for it, and to no other (a base client's strict validator never
 * sees the field, P04). Every session of one broker gets the same epoch; a
 * broker without a store (memory mode) that is replaced has a new one; a
 * durable broker restarted over the same store keeps it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { STATE_EPOCH_V1 } from "../../src/protocol/features.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { durableBroker } from "../support/durable.ts"
import { memoryNetwork } from "../support/memory.ts"

const ASKS = { frame: { features: [STATE_EPOCH_V1] } }

describe("state-epoch-v1", () => {
  it.effect("a base client's registered has no stateEpoch; one that asks gets it, the same for every session", () =>
    Effect.gen(function*() {
      const net = yield* memoryNetwork()
      yield* net.startBroker()
      const base = yield* net.session({ sessionId: "base-1" })
      assert.deepStrictEqual(base.registered.features, ["exact-send-v1"])
      assert.isFalse("stateEpoch" in base.registered)
      const other = yield* net.session({ sessionId: "other-1", frame: { features: ["list-page-v1"] } })
      assert.isFalse("stateEpoch" in other.registered)
      const a = yield* net.session({ sessionId: "a-1", ...ASKS })
      const b = yield* net.session({ sessionId: "b-1", ...ASKS })
      assert.include(a.registered.features ?? [], STATE_EPOCH_V1)
      assert.isString(a.registered.stateEpoch)
      assert.strictEqual(b.registered.stateEpoch, a.registered.stateEpoch)
    }))

  it.effect("memory mode: a restarted broker has a new epoch", () =>
    Effect.gen(function*() {
      const net = yield* memoryNetwork()
      const first = yield* net.startBroker()
      const before = (yield* net.session({ sessionId: "a-1", ...ASKS })).registered.stateEpoch
      yield* first.crash
      yield* net.startBroker()
      const after = (yield* net.session({ sessionId: "a-1", ...ASKS })).registered.stateEpoch
      assert.isString(before)
      assert.isString(after)
      assert.notStrictEqual(after, before)
    }))

  it.effect("durable mode: a broker restarted over the same store keeps its epoch; another store has another", () =>
    Effect.gen(function*() {
      const net = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* durableBroker(net, disk)
      const before = (yield* net.session({ sessionId: "a-1", ...ASKS })).registered.stateEpoch
      yield* first.crash
      const second = yield* durableBroker(net, disk)
      assert.strictEqual((yield* net.session({ sessionId: "a-1", ...ASKS })).registered.stateEpoch, before)
      yield* second.crash
      yield* durableBroker(net, makeMemoryMailState())
      assert.notStrictEqual((yield* net.session({ sessionId: "a-1", ...ASKS })).registered.stateEpoch, before)
    }))
})
