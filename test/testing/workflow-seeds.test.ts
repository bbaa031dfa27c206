/**
 * The workflow simulation's random workloads (docs/testing.md, "Workflow
 * simulation"): a sweep of seeds in which no workflow invariant may break,
 * and each broken build caught by the invariant it is there for.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { WorkflowBrokenBuild } from "../../src/testing/workflow/links.ts"
import type { WorkflowViolationKind } from "../../src/testing/workflow/WorkflowLedger.ts"
import { shrinkWorkflowWorkload } from "../../src/testing/workflow/WorkflowShrink.ts"
import { runWorkflowScenario } from "../../src/testing/workflow/WorkflowWorld.ts"
import {
  formatWorkflowSummary,
  generateWorkflowWorkload,
  runWorkflowWorkload,
  workflowSoak
} from "../../src/testing/workflow/WorkflowWorkload.ts"
import { blockBudget, blocksOf } from "./sweep.ts"

const SWEEP = 600

/** Workflow seeds one `it` block runs (about 19 ms a seed on an idle 2-core machine). */
const WORKFLOW_BLOCK = 150

/** The time one workflow seed may take in its block's limit: about 60 times its 19 ms on an idle machine (sweep.ts). */
const WORKFLOW_SEED_BUDGET_MS = 1_200

describe("workflow workloads", () => {
  it("a seed makes the same workload every time", () => {
    expect(generateWorkflowWorkload(42)).toEqual(generateWorkflowWorkload(42))
    expect(generateWorkflowWorkload(42)).not.toEqual(generateWorkflowWorkload(43))
  })

  it.effect("a run replays exactly", () =>
    Effect.gen(function*() {
      const first = yield* runWorkflowWorkload({ seed: 14 })
      const second = yield* runWorkflowWorkload({ seed: 14 })
      expect(second.trace).toEqual(first.trace)
    }))

  // In blocks of WORKFLOW_BLOCK seeds, each with a limit proportional to its seeds (sweep.ts: a loaded machine still ends each in time).
  for (const [from, seeds] of blocksOf(1, SWEEP, WORKFLOW_BLOCK)) {
    it.effect(`seeds ${from}–${from + seeds - 1}: every workflow invariant holds under stages, children, handshakes, terminals and faults`, () =>
      Effect.gen(function*() {
        const summary = yield* workflowSoak({ from, seeds, maxFailures: 3 })
        expect(formatWorkflowSummary(summary, 0).split("\n").filter((line) => line.startsWith("seed ") || line.startsWith("  "))).toEqual([])
        // Each block does reach what the sweep claims to exercise (a quarter of what all 600 seeds once had to).
        expect(summary.tally.terminals).toBeGreaterThan(25)
        expect(summary.tally.detached).toBeGreaterThan(5)
        expect(summary.tally.stagesClosed).toBeGreaterThan(12)
        expect(summary.tally.lateAsks).toBeGreaterThan(5)
      }), blockBudget(seeds, WORKFLOW_SEED_BUDGET_MS))
  }
})

describe("workflow broken builds are caught", () => {
  const cases: ReadonlyArray<readonly [WorkflowBrokenBuild, WorkflowViolationKind]> = [
    ["barrier-without-prelude", "wf-terminal-order"],
    ["publish-before-drain", "wf-snapshot-early"],
    ["close-without-drain", "wf-lost-at-close"],
    ["handshake-ignores-generation", "wf-stale-ack"],
    ["unshared-late-ask-claims", "wf-late-ask"]
  ]
  for (const [broken, kind] of cases) {
    it.effect(`${broken}: the sweep catches it (${kind}) within 30 seeds`, () =>
      Effect.gen(function*() {
        const summary = yield* workflowSoak({ seeds: 30, broken, maxFailures: 30 })
        expect(summary.violations[kind] ?? 0).toBeGreaterThan(0)
      }), 60_000)
  }

  it.effect("a fiber that outlives the world is reported (wf-fiber-leak)", () =>
    Effect.gen(function*() {
      const report = yield* runWorkflowScenario({ seed: 1 }, () => Effect.asVoid(Effect.forkDetach(Effect.never)))
      expect(report.violations.map((v) => v.kind)).toEqual(["wf-fiber-leak"])
    }))

  it.effect("a failing workflow seed shrinks to a few operations that still fail the same way", () =>
    Effect.gen(function*() {
      const summary = yield* workflowSoak({ seeds: 30, broken: "barrier-without-prelude", maxFailures: 30 })
      const seed = summary.failures.find((failure) => failure.violations[0]?.startsWith("wf-terminal-order"))?.seed ?? 0
      const config = { seed, broken: "barrier-without-prelude" as const }
      const ops = generateWorkflowWorkload(seed)
      const failing = yield* runWorkflowWorkload(config, ops)
      expect(failing.violations[0]?.kind).toBe("wf-terminal-order")
      const shrunk = yield* shrinkWorkflowWorkload(config, ops, failing)
      expect(shrunk.ops.length).toBeLessThanOrEqual(4)
      expect(shrunk.report.violations.map((v) => v.kind)).toContain("wf-terminal-order")
    }), 60_000)

  it.effect("the scripted race each stage build breaks: a foreground child's message in flight at close", () =>
    Effect.gen(function*() {
      const script = (broken: WorkflowBrokenBuild | undefined) =>
        runWorkflowScenario({ seed: 1, broken }, (sim) =>
          Effect.gen(function*() {
            const stage = sim.stage("s1")
            yield* stage.open
            yield* stage.busy(true)
            yield* stage.foreground
            yield* stage.send({ from: "child" })
            yield* stage.close
          }))
      expect((yield* script(undefined)).violations).toEqual([])
      const early = yield* script("publish-before-drain")
      expect(early.violations.map((v) => v.kind)).toContain("wf-snapshot-early")
      const lost = yield* script("close-without-drain")
      expect(lost.violations.map((v) => v.kind)).toContain("wf-lost-at-close")
    }))
})
