/**
 * A world action that dies is a `defect` in the report, with its cause: here
 * a session whose host dies while it is built (as `parentHost` does through
 * `Effect.orDie` when its `ParentJournal` cannot open). Before, the step's
 * exit was dropped: the generation silently never started and the ledger
 * blamed the bus with `silent-loss`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { runSimulation, Simulation } from "../../src/testing/index.ts"

describe("a world action that dies", () => {
  it.effect("a host that dies while it is built is a defect, its cause in the report", () =>
    Effect.gen(function*() {
      const report = yield* runSimulation(
        {
          seed: 1,
          sessions: ["A", { name: "B", agent: { host: () => Effect.die(new Error("journal cannot open")) } }]
        },
        Effect.gen(function*() {
          const sim = yield* Simulation
          const sent = yield* sim.session("A").send("B", "hello")
          if (sent !== undefined) yield* sent.result()
        })
      )
      const defects = report.violations.filter((violation) => violation.kind === "defect")
      assert.isNotEmpty(defects, report.violations.map((violation) => violation.kind).join(", "))
      assert.isTrue(defects.some((violation) => violation.message.includes("journal cannot open")), defects.map((d) => d.message).join("\n"))
    }), 30_000)
})
