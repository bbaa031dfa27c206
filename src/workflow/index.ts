/**
 * `effect-intercom/workflow`: the workflow layer. This part is the inbound
 * ordering of a parent session — the busy-parent idle queue, the terminal
 * ordering barrier for background children, the foreground detach
 * handshake (both sides), parallel-group release and the optional pause
 * model for a child's ask to its parent. Host-independent: an engine plugs
 * in its agents through the ports each constructor takes.
 *
 * @since 0.1.0
 */
export * from "./BarrierRegistry.ts"
export * from "./DetachHandshake.ts"
export * from "./DetachReservations.ts"
export * from "./DetachResponder.ts"
export * from "./DetachRoute.ts"
export * from "./errors.ts"
export * from "./IdleQueue.ts"
export * from "./IdleQueueStore.ts"
export * from "./InboundEntry.ts"
export * from "./ParallelRelease.ts"
export * from "./ParentAskPause.ts"
export * from "./ParentInbox.ts"
export * from "./TerminalBarrier.ts"
