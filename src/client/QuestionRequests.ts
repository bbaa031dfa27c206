/**
 * One connection's question requests (`questions-v1`): each waits for the
 * broker's `question_result` or `question_failed` by `requestId`, and every
 * one still waiting fails with `ConnectionLost` when the connection closes.
 * Owned by one `ClientConnection`; touched only synchronously. The waiting
 * and settling are PendingRequests.ts's; this module gives the frames.
 */
import type { QuestionFailedFrame, QuestionResultFrame } from "../protocol/questions.ts"
import { type ConnectionLost, QuestionRefused, type RequestTimeout } from "./errors.ts"
import { PendingRequests } from "./PendingRequests.ts"

/**
 * A question request as it goes on the wire, without its `requestId`.
 *
 * @category models
 * @since 0.1.0
 */
export type QuestionRequestFrame =
  | { readonly type: "question_ask"; readonly questionId: string; readonly reason: string; readonly text: string }
  | { readonly type: "question_answer"; readonly questionId: string; readonly text: string; readonly owner?: string }
  | { readonly type: "question_stop"; readonly questionId: string; readonly owner?: string }
  | { readonly type: "question_get"; readonly questionId: string; readonly owner?: string }
  | { readonly type: "question_list"; readonly offset?: number; readonly limit?: number; readonly owner?: string }

/**
 * Why a question request on a connection failed.
 *
 * @category errors
 * @since 0.1.0
 */
export type QuestionRequestError = QuestionRefused | RequestTimeout | ConnectionLost

/**
 * Pending question requests of one connection (PendingRequests.ts): a refusal
 * (`question_failed`) fails the request with `QuestionRefused`.
 *
 * @category models
 * @since 0.1.0
 */
export class QuestionRequests extends PendingRequests<QuestionRequestFrame, QuestionResultFrame, QuestionFailedFrame, QuestionRefused> {
  constructor() {
    super({
      operation: "question",
      isRefusal: (frame): frame is QuestionFailedFrame => frame.type === "question_failed",
      refused: (frame) => new QuestionRefused({ error: frame.error, reason: frame.reason })
    })
  }
}
