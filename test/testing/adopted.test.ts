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
import { Effect, FiberSet } from "effect"
import { Simulation, type SimulationConfig } from "../../src/testing/Simulation.ts"
import { runSimulation, runWorkload } from "../../src/testing/Workload.ts"
import { makeInMemoryPair } from "../../src/transport/InMemory.ts"
import { withReadPump } from "../../src/transport/ReadPump.ts"

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

  it.effect("a connection waits for admission as over a Unix socket: a squatter holds the one place, then leaves", () =>
    Effect.gen(function*() {
      let seen: unknown
      const report = yield* runSimulation(
        world({ broker: { maxUnregistered: 1, registrationTimeout: "1 minute" } }),
        Effect.scoped(Effect.gen(function*() {
          const sim = yield* Simulation
          const core = yield* sim.broker.core
          if (core === undefined) return yield* Effect.die("no broker is up")
          const stats = Effect.map(core.stats, (stats) => [stats.sessions, stats.waiting, stats.adopted] as const)
          // A connection the broker adopts that never registers: it holds the only place.
          const [squatter, server] = yield* makeInMemoryPair()
          const runPump = yield* FiberSet.makeRuntime<never, void, never>()
          core.adopt(withReadPump(server, runPump))
          yield* sim.advance("1 second")
          // B's connection drops; the client dials again and waits, unread but for health.
          yield* sim.session("B").drop("client")
          yield* sim.advance("1 second")
          const waiting = yield* stats
          // The squatter goes: its place passes to B's connection, which registers.
          yield* squatter.destroy
          yield* sim.advance("10 seconds")
          seen = [waiting, yield* stats]
        }))
      )
      assert.isTrue(report.ok, report.trace.join("\n"))
      assert.deepStrictEqual(seen, [[2, 1, 3], [3, 0, 3]])
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
