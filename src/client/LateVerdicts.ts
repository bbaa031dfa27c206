/**
 * The broker's verdicts on a session's asks that came after their sender
 * stopped waiting for them (`IntercomClientService.lateVerdict`): an ask's
 * `send` whose acknowledgement was not read within the send timeout is
 * abandoned by its connection (PendingSends.ts; re-sent after a drop like
 * any unanswered send), so the broker's answer to it, read later — there or
 * on the next connection — finds no caller waiting. The asker settles such an ask
 * with the broker (src/session/Ask.ts `settleUnacknowledged`) and then needs
 * that answer — a refusal it must report as such, a `queued`, a delivery —
 * and whether the broker's `ask_expired` for it was read (it accepted the
 * question, then closed it unanswered).
 *
 * Owns the watched ids and what was read for each. A watch is taken before
 * the question is sent and dropped when the ask ends (its Scope), so the
 * table holds at most one entry per ask in progress; nothing is recorded for
 * an id nobody watches, nor a bare answer (a cancel's, P71: the connection
 * hands on only answers with delivery details, which a broker that settles
 * asks writes to a send). Touched only by synchronous code (the connections'
 * readers and the watch's own acquire and release).
 */
import type { SendAnswer } from "./PendingSends.ts"
import type { SendRequest } from "./requests.ts"

/**
 * What was read for a watched ask after its send stopped waiting: the
 * broker's answer to its `send` (the last one read, if any) and whether its
 * `ask_expired` was read.
 *
 * @category models
 * @since 0.1.0
 */
export interface LateVerdict {
  readonly answer: SendAnswer | undefined
  readonly expired: boolean
}

/** What a watch has read so far, for the ask it was taken for. */
interface Watched {
  readonly request: SendRequest
  answer: SendAnswer | undefined
  expired: boolean
}

/**
 * The late-verdict table of one client (see the module header).
 *
 * @example
 * ```ts
 * const verdicts = new LateVerdicts()
 * verdicts.watch({ to: "B", message: question })
 * verdicts.answered(question.id, answer) // a connection read the broker's late answer
 * verdicts.take(question.id).answer // === answer (taken: a second take gives undefined)
 * verdicts.unwatch(question.id)
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export class LateVerdicts {
  private readonly watched = new Map<string, Watched>()

  /** Starts recording for the ask `request`, with nothing read yet. */
  watch(request: SendRequest): void {
    this.watched.set(request.message.id, { request, answer: undefined, expired: false })
  }

  /** Whether an ask is recording for `messageId` (it still settles with the broker). */
  watches(messageId: string): boolean {
    return this.watched.has(messageId)
  }

  /** Stops recording for `messageId` and forgets what was read. */
  unwatch(messageId: string): void {
    this.watched.delete(messageId)
  }

  /**
   * A connection read the broker's answer to a send of `messageId` that no
   * send waited for: kept when the id is watched, and the watched ask's
   * request returned (undefined otherwise: nothing kept).
   */
  answered(messageId: string, answer: SendAnswer): SendRequest | undefined {
    if (this.watched.size === 0) return undefined
    const watched = this.watched.get(messageId)
    if (watched === undefined) return undefined
    watched.answer = answer
    return watched.request
  }

  /** The broker's `ask_expired` for `messageId` was read. */
  expired(messageId: string): void {
    const watched = this.watched.get(messageId)
    if (watched !== undefined) watched.expired = true
  }

  /**
   * What was read for `messageId` so far (nothing when it is not watched),
   * the answer taken: an answer belongs to the send it answered, and the
   * question may be sent again under its id (a rebound's resend), whose
   * settle must not find the first send's answer (review revap AP1).
   */
  take(messageId: string): LateVerdict {
    const watched = this.watched.get(messageId)
    if (watched === undefined) return { answer: undefined, expired: false }
    const answer = watched.answer
    watched.answer = undefined
    return { answer, expired: watched.expired }
  }
}
