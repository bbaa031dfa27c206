/**
 * Which connection path the simulation drives (docs/testing.md, "The
 * world"): by default the broker adopts each connection as the Unix-socket
 * broker does (`BrokerService.adopt`: no fiber per connection, frames pushed
 * from the link as data events, ReadPump.ts); `brokerConnections:
 * "accepted"` keeps the fiber path (`BrokerService.accept`), which the
 * in-memory broker tests (test/support/memory.ts) use. Either way a seed
 * replays exactly.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Simulation, type SimulationConfig } from "../../src/testing/Simulation.ts"
import { runSimulation, runWorkload } from "../../src/testing/Workload.ts"

/** Live sessions and adopted connections of the broker that is up, after a restart and the reconnects. */
const connectionsAcrossARestart = Effect.gen(function*() {
  const sim = yield* Simulation
  const counts = Effect.gen(function*() {
    const core = yield* sim.broker.core
    if (core === undefined) return yield* Effect.die("no broker is up")
    const stats = yield* core.stats
    return [stats.sessions, stats.adopted] as const
  })
  const before = yield* counts
  yield* sim.broker.restart
  yield* sim.advance("10 seconds")
  return [before, yield* counts] as const
})

const world = (extra: Partial<SimulationConfig> = {}): SimulationConfig => ({ seed: 1, sessions: ["A", "B", "C"], ...extra })

describe("the connection path the simulation drives", () => {
  it.effect("by default the broker adopts every connection, as the Unix-socket broker does, after a restart too", () =>
    Effect.gen(function*() {
      let seen: unknown
      const report = yield* runSimulation(world(), Effect.map(connectionsAcrossARestart, (counts) => seen = counts))
      assert.isTrue(report.ok, report.trace.join("\n"))
      assert.deepStrictEqual(seen, [[3, 3], [3, 3]])
    }))

  it.effect("brokerConnections: accepted keeps the fiber path: nothing is adopted", () =>
    Effect.gen(function*() {
      let seen: unknown
      const report = yield* runSimulation(
        world({ brokerConnections: "accepted" }),
        Effect.map(connectionsAcrossARestart, (counts) => seen = counts)
      )
      assert.isTrue(report.ok, report.trace.join("\n"))
      assert.deepStrictEqual(seen, [[3, 0], [3, 0]])
    }))

  it.effect("a seed replays exactly on the adopted path: the same trace, frame for frame", () =>
    Effect.gen(function*() {
      for (const seed of [5, 9]) {
        const first = yield* runWorkload({ seed, traceFrames: true })
        const second = yield* runWorkload({ seed, traceFrames: true })
        assert.deepStrictEqual(second.trace, first.trace)
        assert.isTrue(first.ok, first.trace.join("\n"))
      }
    }), 60_000)
})
