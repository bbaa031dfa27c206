/**
 * Issues the simulation found in the broker, kept visible: each test shows
 * the issue with a script (and the seed of the sweep that first found it),
 * and asserts the harness reports it. When the broker is fixed, these tests
 * fail — then drop the issue from `KNOWN_ISSUES` (sweep.ts) and invert them.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { Simulation } from "../../src/testing/Simulation.ts"
import { runSimulation, runWorkload } from "../../src/testing/Workload.ts"

describe("known issue: a sender that is away is never told its queued message was evicted", () => {
  it.effect("A queues mail for stopped D and stops; C's mail evicts A's (mailbox of 1); A comes back and hears nothing", () =>
    Effect.gen(function*() {
      const report = yield* runSimulation(
        { seed: 1, sessions: ["A", "B", "C", "D"], broker: { mailboxCapacity: 1 } },
        Effect.gen(function*() {
          const sim = yield* Simulation
          const [a, b, c, d] = [sim.session("A"), sim.session("B"), sim.session("C"), sim.session("D")]
          yield* d.stop
          yield* b.stop
          const queued = yield* a.send("D", "for D, later")
          const exit = yield* queued!.result()
          assert.isTrue(Exit.isSuccess(exit) && exit.value._tag === "Sent" && exit.value.delivery === "queued")
          yield* a.stop
          yield* c.send("B", "for B, later") // evicts A's message: A is not connected to hear it
          yield* sim.advance("1 second")
        })
      )
      assert.deepStrictEqual(report.violations.map((violation) => violation.kind), ["untold-eviction"])
      assert.match(report.violations[0]?.message ?? "", /dropped from the broker's mailbox \(E_DELIVERY_EVICTED\) while A was away/)
    }))

  it.effect("found by the random sweep: seed 327", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 327 })
      assert.deepStrictEqual(report.violations.map((violation) => violation.kind), ["untold-eviction"])
      assert.match(report.violations[0]?.message ?? "", /^m4 \(send C → B\) was dropped from the broker's mailbox \(E_DELIVERY_EVICTED\) while C was away/)
    }))
})
