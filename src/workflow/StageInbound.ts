/**
 * A stage session's inbound path on the bus: the session runtime's
 * `Host.deliver` for a session that is a workflow stage, routing every
 * message through `Stages.deliver` (C-ORD-1…9).
 *
 * The runtime has already de-duplicated the message and resolved its own
 * `ask` waiter (C-ORD-32). What `Stages.deliver` cannot take — a non-ask
 * the open stage could not admit (`StageRetired`, `StageInsertFailed`,
 * C-ORD-4/5), or a message for a stage not opened yet — fails here, and the
 * runtime tries the hand-off again every 100 ms while the session
 * generation lives (C-DLV-12): the retry C-ORD-5 asks for, which lands in
 * the stage's next generation once it is open. Everything else succeeds: an
 * admitted entry is in the stage session, a rejected ask's asker has its
 * correlated `replyError`, and after close the entry went to the
 * closed-stage router (the parent chat or a post-mortem turn). After the
 * stage's run ended that router handles the entry once — an ask gets the
 * C-ORD-8 `replyError`, anything else one attempt at the parent chat — and
 * what it could not deliver is given up with a warning (`Abandoned`), so
 * it never holds the session's hand-off queue.
 *
 * Owner: nothing; the stage's admission actor decides.
 */
import { Effect } from "effect"
import type { Inbound } from "../session/Host.ts"
import type { StageAdmissionError, UnknownWorkflowItem } from "./errors.ts"
import { inboundMessageOf } from "./InboundAdapter.ts"
import { stageMessage } from "./StageEntry.ts"
import type { StagesService } from "./Stages.ts"

/**
 * The `Host.deliver` of a stage session: the message goes to
 * `stages.deliver(stageId, …)`; a failure is the runtime's cue to retry.
 *
 * @example
 * ```ts
 * import { headless, Host } from "effect-intercom/session"
 * import { stageHostDeliver, Stages } from "effect-intercom/workflow"
 *
 * const stageHost = Stages.useSync((stages) =>
 *   Host.layer(headless({ name: "review", cwd: process.cwd(), model: "m" }, stageHostDeliver(stages, "review"))))
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const stageHostDeliver = (
  stages: Pick<StagesService, "deliver">,
  stageId: string
) =>
(inbound: Inbound): Effect.Effect<void, StageAdmissionError | UnknownWorkflowItem> =>
  Effect.asVoid(stages.deliver(stageId, stageMessage(inboundMessageOf(inbound))))
