/**
 * Shrinking a failing workflow workload to a minimal one, by the same delta
 * debugging as the bus simulation's `shrinkWorkload`: drop halves, quarters,
 * … single operations, then zero the pauses, keeping each candidate that
 * still fails with the same violation kind. Every candidate is a full
 * deterministic rerun.
 */
import { Effect } from "effect"
import type { WorkflowViolationKind } from "./WorkflowLedger.ts"
import { runWorkflowWorkload, type WorkflowOp } from "./WorkflowWorkload.ts"
import type { WorkflowConfig, WorkflowReport } from "./WorkflowWorld.ts"

/**
 * A minimal failing workload, its report, and how many reruns it took.
 *
 * @since 0.1.0
 */
export interface WorkflowShrunk {
  readonly ops: ReadonlyArray<WorkflowOp>
  readonly report: WorkflowReport
  readonly runs: number
}

/**
 * Shrinks `ops`, which failed as `failing` under `config`, to a minimal
 * workload that still fails with the same violation kind.
 *
 * @example
 * const ops = generateWorkflowWorkload(6)
 * const report = yield* runWorkflowWorkload({ seed: 6, broken: "barrier-without-prelude" }, ops)
 * const shrunk = yield* shrinkWorkflowWorkload({ seed: 6, broken: "barrier-without-prelude" }, ops, report)
 * shrunk.ops.length // a handful
 *
 * @since 0.1.0
 */
export const shrinkWorkflowWorkload = (
  config: Omit<WorkflowConfig, "children" | "stages">,
  ops: ReadonlyArray<WorkflowOp>,
  failing: WorkflowReport,
  maxRuns = 300
): Effect.Effect<WorkflowShrunk> =>
  Effect.gen(function*() {
    const kind: WorkflowViolationKind | undefined = failing.violations[0]?.kind
    let runs = 0
    let best = { ops, report: failing }
    const stillFails = (candidate: ReadonlyArray<WorkflowOp>) =>
      Effect.gen(function*() {
        runs++
        const report = yield* runWorkflowWorkload(config, candidate)
        const same = report.violations.some((violation) => violation.kind === kind)
        if (same) best = { ops: candidate, report }
        return same
      })
    let chunk = Math.max(1, Math.ceil(best.ops.length / 2))
    while (runs < maxRuns) {
      let progressed = false
      let i = 0
      while (i < best.ops.length && runs < maxRuns) {
        const candidate = [...best.ops.slice(0, i), ...best.ops.slice(i + chunk)]
        if (candidate.length > 0 && (yield* stillFails(candidate))) progressed = true
        else i += chunk
      }
      if (!progressed) {
        if (chunk === 1) break
        chunk = Math.max(1, Math.floor(chunk / 2))
      }
    }
    for (let i = 0; i < best.ops.length && runs < maxRuns; i++) {
      if (best.ops[i]?.pause === 0) continue
      yield* stillFails(best.ops.map((op, j) => j === i ? { ...op, pause: 0 } : op))
    }
    return { ...best, runs }
  })
