/**
 * `effect-intercom/session`: the session runtime — one agent session on the
 * bus, over an `IntercomClient` and a `Host`.
 *
 * Start with `IntercomSession` (the service, `make` and `layer`), `Host` and
 * `headless` (the port a host implements), and `sessionRegistration` (the
 * client's `register` payload). The other exports are the pure pieces the
 * runtime is built from — target resolution, renderings, validation, the
 * reply tracker and waiter slot — for hosts and tests that need the same
 * rules, and the typed errors.
 *
 * The modules behind `IntercomSession` that are not exported here (the
 * actions, the outgoing path, inbound handling, the host hand-off, the
 * presence publisher, the tool adapter) are its implementation.
 *
 * @since 0.1.0
 */
export * from "./contactSupervisor.ts"
export { QUESTION_RECHECK, QuestionStopped } from "./DurableQuestion.ts"
export * from "./errors.ts"
export * as HandledLog from "./HandledLog.ts"
export * from "./health.ts"
export * from "./Host.ts"
export { HANDOFF_RETRY_INTERVAL, inboundAbandoned } from "./HostHandoff.ts"
export * from "./InboundAdmission.ts"
export { JournalRecordSchema } from "./InboundJournal.ts"
export * from "./IntercomSession.ts"
export * from "./interview.ts"
export * from "./interviewReply.ts"
export * from "./oldMail.ts"
export * from "./QuestionReviver.ts"
export * from "./render.ts"
export * from "./ReplyTracker.ts"
export * from "./ReplyWaiter.ts"
export * from "./supervisorBridge.ts"
export { type GrantedChildBridge, hasSupervisorGrant, type SupervisorContactError } from "./SupervisorContact.ts"
export * from "./supervisorMessages.ts"
export * from "./SupervisorLaunch.ts"
export * from "./targets.ts"
export * from "./validation.ts"
export { renderPeek, renderResult as renderWorkerResult, renderSteer, renderStop, WAKE_NOTE } from "./WorkerActions.ts"
export * from "./Workers.ts"
