/**
 * Pressure in generated workloads (docs/testing.md, "Pressure"): a
 * registration storm makes connections wait for admission (AdmissionGate), and
 * a flood to a recipient whose writes are slow makes its sender's reader hold
 * its frames, stop reading past its held limit and read on once the parked
 * output fits (PeerReader.ts). Scripted, each with its counter; then a seed
 * whose generated workload reaches both, which it does not without pressure,
 * and replays exactly.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Simulation, type SimulationConfig } from "../../src/testing/Simulation.ts"
import { floodText } from "../../src/testing/simulation/pressure.ts"
import { generateWorkload, runSimulation, runWorkload } from "../../src/testing/Workload.ts"

/** A sends B `count` messages of 3,000 characters while B's broker-side writes take 500 ms; B's inbox after. */
const flood = (broker: NonNullable<SimulationConfig["broker"]>, count = 10) => {
  let inbox: ReadonlyArray<string> = []
  const sent = Array.from({ length: count }, (_, i) => floodText(1, i + 1, "A", "B", 3000))
  const run = runSimulation(
    { seed: 1, sessions: ["A", { name: "B", agent: { mode: "manual" } }], broker },
    Effect.gen(function*() {
      const sim = yield* Simulation
      yield* sim.session("B").delayWrites("broker", 500, "10 seconds")
      for (const text of sent) yield* sim.session("A").send("B", text)
      yield* sim.advance("20 seconds")
      inbox = (yield* sim.session("B").inbox).map((inbound) => inbound.message.content.text)
    })
  )
  return Effect.map(run, (report) => ({ report, inbox, sent }))
}

describe("pressure on the broker's connection path", () => {
  it.effect("a registration storm against maxUnregistered 1: connections wait for admission, and a dropped session still registers again", () =>
    Effect.gen(function*() {
      let waitingDuringStorm = -1
      const report = yield* runSimulation(
        { seed: 1, sessions: ["A", "B"], broker: { maxUnregistered: 1 } },
        Effect.gen(function*() {
          const sim = yield* Simulation
          yield* sim.storm(3, 2500)
          yield* sim.session("B").drop("client")
          yield* sim.advance("500 millis")
          const core = yield* sim.broker.core
          waitingDuringStorm = core === undefined ? -1 : (yield* core.stats).waiting
          yield* sim.advance("10 seconds")
        })
      )
      assert.isTrue(report.ok, report.trace.join("\n"))
      // Two of the three storm connections waited behind the first, and B's reconnection behind them.
      assert.isAtLeast(waitingDuringStorm, 2, report.trace.join("\n"))
      assert.isAtLeast(report.paths.admissionWaits, 3, report.trace.join("\n"))
    }))

  for (const brokerConnections of ["adopted", "accepted"] as const) {
    it.effect(`a session's reconnection dropped while it waits in a storm is withdrawn, never registered (seeds 215, 277; ${brokerConnections})`, () =>
      Effect.gen(function*() {
        // In each, the dropped connection's `register` was held; the session registers on its next one.
        for (const seed of [215, 277]) {
          const report = yield* runWorkload({ seed, brokerConnections })
          assert.deepStrictEqual(report.violations, [], `seed ${seed}`)
          assert.strictEqual(report.paths.waitsWithdrawn, 1, `seed ${seed}`)
        }
      }))
  }

  it.effect("a flood to a slow recipient: the sender's reader stops reading past heldLimit, then reads on; every message arrives once, in order", () =>
    Effect.gen(function*() {
      const { inbox, report, sent } = yield* flood({ outboxChars: 4096, heldLimit: 2048 })
      assert.isTrue(report.ok, report.trace.join("\n"))
      assert.isAtLeast(report.paths.readPauses, 1, report.trace.join("\n"))
      assert.deepStrictEqual(inbox, sent)
    }))

  it.effect("the same flood under the default held limit (1 MiB) never stops the reader", () =>
    Effect.gen(function*() {
      const { inbox, report, sent } = yield* flood({ outboxChars: 4096 })
      assert.isTrue(report.ok, report.trace.join("\n"))
      assert.strictEqual(report.paths.readPauses, 0)
      assert.deepStrictEqual(inbox, sent)
    }))

  it.effect("seed 12's workload has a storm and a flood and reaches both branches; without pressure it reaches neither", () =>
    Effect.gen(function*() {
      const kinds = generateWorkload(12, 4).map((op) => op._tag)
      assert.includeMembers(kinds, ["Storm", "Flood"])
      const report = yield* runWorkload({ seed: 12 })
      assert.isTrue(report.ok, report.trace.join("\n"))
      assert.isAbove(report.paths.admissionWaits, 0)
      assert.isAbove(report.paths.readPauses, 0)
      const without = yield* runWorkload({ seed: 12 }, undefined, { pressure: false })
      assert.notInclude(generateWorkload(12, 4, { pressure: false }).map((op) => op._tag), "Storm")
      assert.deepStrictEqual([without.paths.admissionWaits, without.paths.readPauses], [0, 0])
    }), 60_000)

  it.effect("a seed with pressure replays exactly: the same trace, frame for frame", () =>
    Effect.gen(function*() {
      const first = yield* runWorkload({ seed: 12, traceFrames: true })
      const second = yield* runWorkload({ seed: 12, traceFrames: true })
      assert.deepStrictEqual(second.trace, first.trace)
      assert.deepStrictEqual(second.paths, first.paths)
    }), 60_000)
})
