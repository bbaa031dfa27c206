/**
 * Shrinking a failing workflow workload to a minimal one, by the same delta
 * debugging as the bus simulation's `shrinkWorkload`: drop halves, quarters,
 * … single operations, then zero the pauses, keeping each candidate that
 * still fails with the same violation kind. Every candidate is a full
 * deterministic rerun.
 */
import type { Effect } from "effect"
import { deltaShrink } from "../Shrink.ts"
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
): Effect.Effect<WorkflowShrunk> => {
  const kind: WorkflowViolationKind | undefined = failing.violations[0]?.kind
  return deltaShrink({
    ops,
    failing,
    rerun: (candidate) => runWorkflowWorkload(config, candidate),
    stillFailing: (report) => !report.ok && report.violations.some((violation) => violation.kind === kind),
    withoutPause: (op) => op.pause === 0 ? undefined : { ...op, pause: 0 },
    maxRuns
  })
}
