/**
 * `effect-intercom/workflow`: the workflow layer an engine drives its
 * agents through. Host-independent: the engine supplies its stage sessions,
 * foreground handoff, parent chat, retained conversations and the parent
 * session's host as ports.
 *
 * Three parts:
 *
 * - **Stages, runs and children.** Start with the services: `Runs` (run
 *   lifetimes and generated groups), `Stages` (stage generations, admission
 *   and what happens after close) and `Children` (how a delegated child is
 *   launched). `makeStageAdmission`, `makeClosedStage`, the late-ask claims,
 *   generation Scopes and group resolution are exported for engines and
 *   tests that need the same rules without the services.
 * - **Inbound ordering of a parent session**: the busy-parent idle queue,
 *   the terminal ordering barrier for background children, the foreground
 *   detach handshake (both sides), parallel-group release and the optional
 *   pause model for a child's ask to its parent.
 * - **Composition**: `makeParentSession` (a main agent's inbound ordering,
 *   assembled behind the session runtime's `Host.deliver`), `ParentJournal`
 *   (its accepted and consumed messages in a file, so a restarted parent
 *   process gets back what its idle queue held and drops the broker's copy
 *   of what its agent took; its limits are in docs/workflow.md),
 *   `makeForegroundDetach` (both sides of the handshake in process, and a
 *   stage's `ForegroundHandoff`), `stageHostDeliver` (a stage session's
 *   inbound path through `Stages.deliver`) and `inboundEntry` (bus message →
 *   `InboundEntry`, with the source of C-ORD-24).
 * - **Notifications and supervised workers** (C-WFD, C-WKR):
 *   `NotifyOptions` (the `intercom` option and its resolution),
 *   `ControlMonitor` (control thresholds per child), `RunNotifications`
 *   (what a run tells its parent, with `sessionNotifyPort` over a session
 *   runtime), `ResultDelivery` (confirmed phases, capped retry, the
 *   undelivered area) and `LifecycleNotices` (once per occurrence), with
 *   the store's `UndeliveredStore` and `DeliveryMarks`; `WorkerRegistry`, a
 *   ready-made `Workers` port.
 *
 * @since 0.1.0
 */
export * from "./BarrierRegistry.ts"
export * from "./childControl.ts"
export * from "./Children.ts"
export * from "./ClosedStage.ts"
export * from "./ControlMonitor.ts"
export * from "./DetachHandshake.ts"
export * from "./DetachReservations.ts"
export * from "./DetachResponder.ts"
export * from "./DetachRoute.ts"
export * from "./errors.ts"
export * from "./ForegroundDetach.ts"
export * from "./GenerationScope.ts"
export * from "./groupResolution.ts"
export * from "./IdleQueue.ts"
export * from "./IdleQueueStore.ts"
export * from "./InboundAdapter.ts"
export * from "./InboundEntry.ts"
export * from "./LateAskClaims.ts"
export * from "./LifecycleNotices.ts"
export * from "./NotifyOptions.ts"
export * from "./orderingErrors.ts"
export * from "./ParallelRelease.ts"
export * from "./ParentAskPause.ts"
export * from "./ParentInbox.ts"
export * as ParentJournal from "./ParentJournal.ts"
export * from "./ParentSession.ts"
export * from "./ResultDelivery.ts"
export * from "./RunNotifications.ts"
export * from "./Runs.ts"
export * from "./sessionPort.ts"
export * from "./StageAdmission.ts"
export * from "./StageEntry.ts"
export * from "./StageInbound.ts"
export * from "./Stages.ts"
export * from "./TerminalBarrier.ts"
export * from "./WorkerRegistry.ts"
export { DeliveryMarks, DeliveryMarksFailed, DeliveryMarksMemoryState, type DeliveryMarksService } from "../store/DeliveryMarks.ts"
export {
  type UndeliveredEntry,
  type UndeliveredInput,
  UndeliveredMemoryState,
  UndeliveredStore,
  UndeliveredStoreFailed,
  type UndeliveredStoreService
} from "../store/UndeliveredStore.ts"
