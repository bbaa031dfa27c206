/**
 * `effect-intercom/testing`: deterministic simulation of many intercom
 * sessions in one process — the real broker, client and session runtime over
 * an in-memory network, driven by TestClock and a seed, with fault injection
 * and invariants; and the workflow simulation (src/testing/workflow) over
 * the workflow layer. See docs/testing.md.
 */
export * from "./BrokenBuilds.ts"
export * from "./FiberWatch.ts"
export * from "./Ledger.ts"
export * from "./Prng.ts"
export * from "./SimAgent.ts"
export * from "./Shrink.ts"
export * from "./simArgs.ts"
export * from "./SimLink.ts"
export * from "./Simulation.ts"
export * from "./Soak.ts"
export * from "./Workload.ts"
export * from "./workflow/BusParent.ts"
export * from "./workflow/BusParentSoak.ts"
export * from "./workflow/WorkflowLedger.ts"
export * from "./workflow/WorkflowShrink.ts"
export * from "./workflow/WorkflowWorld.ts"
export * from "./workflow/WorkflowWorkload.ts"
export { WORKFLOW_BROKEN_BUILDS, type WorkflowBrokenBuild } from "./workflow/links.ts"
