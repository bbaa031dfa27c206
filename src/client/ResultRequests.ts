/**
 * One connection's result archive requests (`results-v1`): each waits for
 * the broker's answer by `requestId`, and every one still waiting fails with
 * `ConnectionLost` when the connection closes — a store never vanishes
 * silently (it may or may not have been stored then; the error says so).
 * Owned by one `ClientConnection`; touched only synchronously. The waiting
 * and settling are PendingRequests.ts's; this module gives the frames.
 */
import type { ResultFailedFrame, ResultListedFrame, ResultPageFrame, ResultStoredFrame } from "../protocol/results.ts"
import { type ConnectionLost, type RequestTimeout, ResultRefused } from "./errors.ts"
import { PendingRequests } from "./PendingRequests.ts"

/** A broker answer to a result request. */
export type ResultAnswer = ResultStoredFrame | ResultListedFrame | ResultPageFrame

/** A result request as it goes on the wire, without its `requestId`. */
export type ResultRequestFrame =
  | {
    readonly type: "result_store"
    readonly body: string
    readonly originalLength?: number
    readonly title?: string
    readonly run?: string
    readonly child?: string
  }
  | { readonly type: "result_list"; readonly offset?: number; readonly limit?: number }
  | { readonly type: "result_read"; readonly ref: string; readonly offset?: number; readonly limit?: number }

/** Why a result request on a connection failed. */
export type ResultRequestError = ResultRefused | RequestTimeout | ConnectionLost

/**
 * Pending result requests of one connection (PendingRequests.ts): a refusal
 * (`result_failed`) fails the request with `ResultRefused`.
 *
 * @category models
 * @since 0.1.0
 */
export class ResultRequests extends PendingRequests<ResultRequestFrame, ResultAnswer, ResultFailedFrame, ResultRefused> {
  constructor() {
    super({
      operation: "result",
      isRefusal: (frame): frame is ResultFailedFrame => frame.type === "result_failed",
      refused: (frame) => new ResultRefused({ reason: frame.reason })
    })
  }
}
