/**
 * `effect-intercom/workflow`: the workflow layer an engine drives its
 * agents through. Host-independent: the engine supplies its stage sessions,
 * foreground handoff, parent chat and retained conversations as ports.
 *
 * Start with the services: `Runs` (run lifetimes and generated groups),
 * `Stages` (stage generations, admission and what happens after close) and
 * `Children` (how a delegated child is launched). The modules below them —
 * `makeStageAdmission`, `makeClosedStage`, the late-ask claims, generation
 * Scopes and group resolution — are exported for engines and tests that
 * need the same rules without the services.
 *
 * @since 0.1.0
 */
export * from "./Children.ts"
export * from "./ClosedStage.ts"
export * from "./errors.ts"
export * from "./GenerationScope.ts"
export * from "./groupResolution.ts"
export * from "./LateAskClaims.ts"
export * from "./Runs.ts"
export * from "./StageAdmission.ts"
export * from "./StageEntry.ts"
export * from "./Stages.ts"
