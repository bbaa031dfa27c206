/**
 * `fetchBrokerStats` (`intercom broker stats`'s client) asks for `stats-rows-cut-v1` beside `stats-v1`, so the
 * snapshot it returns says how many rows of `byGroupStatus` the broker left out to fit its answer in one frame
 * (test/broker/stats-rows-cut.test.ts has the cut itself). Against the real broker core over the in-memory network,
 * each exchange run in one step of simulated time.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { fetchBrokerStats } from "../../src/client/BrokerStats.ts"
import { settle, withMemoryBroker } from "../support/memory.ts"

describe("fetchBrokerStats", () => {
  it.effect("asks for stats-rows-cut-v1: its snapshot carries byGroupStatusOmitted (zero rows and sessions when nothing was cut)", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ idleExit: null })
      yield* broker.session({ sessionId: "alice", status: "busy" })
      const stats = yield* settle(fetchBrokerStats({ socketPath: broker.address, dial: broker.dial }), "fetchBrokerStats")
      // alice and the stats connection itself.
      assert.strictEqual(stats.sessions.live, 2)
      assert.deepStrictEqual(stats.sessions.byGroupStatus.map((row) => [row.status, row.count]), [["", 1], ["busy", 1]])
      assert.deepStrictEqual(stats.sessions.byGroupStatusOmitted, { rows: 0, sessions: 0 })
    }))
})
