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
 * it never holds the session's hand-off queue. A stage ended so long ago
 * that `Stages` no longer keeps it (`StageForgotten`) cannot take anything,
 * and a retry cannot change that: the message is given up with a warning,
 * and an ask's asker gets the correlated `replyError` "Completed workflow
 * stage could not process intercom ask: the stage's run ended too long ago
 * for the stage to be remembered" (C-ORD-8) when the host was given the
 * `replyError` port (one attempt; without it the asker waits out its
 * timeout).
 *
 * Owner: nothing; the stage's admission actor decides.
 */
import { Cause, Effect } from "effect"
import type { Inbound } from "../session/Host.ts"
import {
  completedStageAskError,
  describeFailure,
  FORGOTTEN_STAGE_REASON,
  type StageAdmissionError,
  type UnknownWorkflowItem
} from "./errors.ts"
import { inboundMessageOf } from "./InboundAdapter.ts"
import type { ReplyErrorPort } from "./StageAdmission.ts"
import { isAsk, stageMessage } from "./StageEntry.ts"
import type { StagesService } from "./Stages.ts"

/**
 * What `stageHostDeliver` may be given besides the stage.
 *
 * @category models
 * @since 0.1.0
 */
export interface StageHostOptions {
  /**
   * Answers an ask with a correlated `replyError` (the stage's own
   * `StagePorts.replyError` will do): used for an ask to a stage `Stages`
   * has forgotten, whose ports are gone with it.
   */
  readonly replyError?: ReplyErrorPort | undefined
}

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
  stageId: string,
  options: StageHostOptions = {}
) =>
(inbound: Inbound): Effect.Effect<void, StageAdmissionError | UnknownWorkflowItem> => {
  const message = inboundMessageOf(inbound)
  const entry = stageMessage(message)
  return Effect.asVoid(stages.deliver(stageId, entry)).pipe(
    Effect.catchTag("StageForgotten", (forgotten) => {
      const what = `Message ${message.message.id} from ${message.from.id} to stage ${stageId}`
      const replyError = options.replyError
      if (!isAsk(entry) || replyError === undefined) {
        const asker = isAsk(entry) ? " (its asker is not told: this host has no replyError port)" : ""
        return Effect.logWarning(`${what} was given up: ${forgotten.message}${asker}`)
      }
      return replyError(message, completedStageAskError(FORGOTTEN_STAGE_REASON)).pipe(
        Effect.andThen(Effect.logWarning(`${what} was given up and its asker told: ${forgotten.message}`)),
        Effect.catchCause((cause) =>
          Effect.logWarning(
            `${what} was given up: ${forgotten.message}; its replyError could not be sent (${describeFailure(Cause.squash(cause))})`
          )
        )
      )
    })
  )
}
