/**
 * `effect-intercom/workflow`: the workflow layer, host-independent. An
 * engine supplies its agents and the bus through ports.
 *
 * Notifications (C-WFD): `NotifyOptions` (the `intercom` option and its
 * resolution), `ControlMonitor` (control thresholds per child),
 * `RunNotifications` (what a run tells its parent, with `sessionNotifyPort`
 * over a session runtime), `ResultDelivery` (confirmed phases, capped
 * retry, the undelivered area) and `LifecycleNotices` (once per occurrence),
 * with the store's `UndeliveredStore` and `DeliveryMarks`. Supervised
 * workers: `WorkerRegistry`, a ready-made `Workers` port.
 *
 * @since 0.1.0
 */
export * from "./childControl.ts"
export * from "./ControlMonitor.ts"
export * from "./LifecycleNotices.ts"
export * from "./NotifyOptions.ts"
export * from "./ResultDelivery.ts"
export * from "./RunNotifications.ts"
export * from "./sessionPort.ts"
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
