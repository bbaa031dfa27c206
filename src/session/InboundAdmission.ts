/**
 * Inbound de-duplication (C-DLV-11, P50): a message is identified by
 * (sender id, message id). A duplicate broker delivery is dropped; the mark is
 * committed only once the host took the message. Bounded by age and by count.
 *
 * Between arrival and the host taking it, a message is *held*: a redelivery
 * that arrives while the first copy is still being handed over (or retried,
 * C-DLV-12) joins it instead of reaching the host twice, and `commit` says how
 * many copies joined, so each can be answered once the first was taken.
 *
 * Synchronous; owned by the session's inbound handling (`Inbound.ts`, which
 * passes it to its restore and control rules: InboundRestore.ts,
 * InboundControls.ts), whose fibers call it only from synchronous code.
 */

/**
 * The de-duplication window of one session generation.
 *
 * @category models
 * @since 0.1.0
 */
export interface InboundAdmission {
  /** True when this message was already handled (and is still remembered). */
  readonly seen: (fromId: string, messageId: string, now: number) => boolean
  /** Marks it as being handed over, until `commit`. */
  readonly hold: (fromId: string, messageId: string) => void
  /** True when it is held (being handed over); unlike `join`, counts nothing. */
  readonly holds: (fromId: string, messageId: string) => boolean
  /** True when it is held: this copy joins the held one (and is counted). */
  readonly join: (fromId: string, messageId: string) => boolean
  /** Marks it handled (and no longer held); returns how many copies joined it while it was held. */
  readonly commit: (fromId: string, messageId: string, now: number) => number
  /**
   * Marks it handled by an earlier process or generation at `at` (its host's
   * history holds it, `InboundJournal.handled`): remembered like a commit at
   * that time, unless that is already past the window. Call oldest first,
   * before any message arrives: the window forgets in insertion order.
   */
  readonly remember: (fromId: string, messageId: string, at: number, now: number) => void
  /** How many handled messages are remembered (holds not counted). */
  readonly size: () => number
}

/**
 * How long and how many handled messages are remembered (`inboundDedupe`).
 *
 * @category models
 * @since 0.1.0
 */
export interface AdmissionLimits {
  /** How long a handled message is remembered. Default 1 hour. */
  readonly windowMs?: number
  /** How many are remembered at most (oldest forgotten first). Default 1000. */
  readonly capacity?: number
}

const keyOf = (fromId: string, messageId: string): string => `${fromId}\u0000${messageId}`

/**
 * An empty de-duplication window.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeInboundAdmission = (limits: AdmissionLimits = {}): InboundAdmission => {
  const windowMs = limits.windowMs ?? 60 * 60 * 1000
  const capacity = Math.max(1, limits.capacity ?? 1000)
  /** Insertion-ordered: the first entry is the oldest. */
  const handled = new Map<string, number>()
  /** Arrived, not yet taken by the host, with the number of copies that joined. Never pruned by age. */
  const held = new Map<string, number>()

  const prune = (now: number): void => {
    for (const [key, at] of handled) {
      if (now - at <= windowMs && handled.size <= capacity) break
      handled.delete(key)
    }
  }

  return {
    seen: (fromId, messageId, now) => {
      prune(now)
      return handled.has(keyOf(fromId, messageId))
    },
    hold: (fromId, messageId) => void held.set(keyOf(fromId, messageId), 0),
    holds: (fromId, messageId) => held.has(keyOf(fromId, messageId)),
    join: (fromId, messageId) => {
      const key = keyOf(fromId, messageId)
      const joined = held.get(key)
      if (joined === undefined) return false
      held.set(key, joined + 1)
      return true
    },
    commit: (fromId, messageId, now) => {
      const key = keyOf(fromId, messageId)
      const joined = held.get(key) ?? 0
      held.delete(key)
      handled.delete(key)
      handled.set(key, now)
      prune(now)
      return joined
    },
    remember: (fromId, messageId, at, now) => {
      if (now - at > windowMs) return
      const key = keyOf(fromId, messageId)
      handled.delete(key)
      handled.set(key, at)
      prune(now)
    },
    size: () => handled.size
  }
}
