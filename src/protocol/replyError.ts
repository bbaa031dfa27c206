/**
 * The text form of a correlated failure reply (extension `reply-error-v1`,
 * C-ASK-7), for a party that does not speak the extension: a base asker (the
 * broker rewrites the reply it forwards) or a broker without it (our client
 * rewrites the reply it sends). One definition, so both read the same and
 * nothing of the failure is lost.
 */

/** The marker a failure reply's text starts with when it travels as plain text. */
export const REPLY_ERROR_PREFIX = "Reply error: "

/**
 * The text a base asker sees for a reply that carries `replyError`: the
 * marker and the error, then the reply's own text when it says more.
 *
 * @example
 * ```ts
 * import { replyErrorText } from "effect-intercom/protocol"
 *
 * replyErrorText("stage could not admit the ask", "") // "Reply error: stage could not admit the ask"
 * ```
 */
export const replyErrorText = (replyError: string, text: string): string =>
  text.trim() === "" || text === replyError
    ? `${REPLY_ERROR_PREFIX}${replyError}`
    : `${REPLY_ERROR_PREFIX}${replyError}\n\n${text}`
