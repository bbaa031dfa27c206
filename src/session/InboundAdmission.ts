/**
 * Inbound de-duplication (C-DLV-11, P50): a message is identified by
 * (sender id, message id). A duplicate broker delivery is dropped; the mark is
 * committed only once the message was handled, and a failed hand-off releases
 * it so a redelivery can try again. Bounded by age and by count.
 *
 * Synchronous; owned by the session's single inbound fiber, which also makes
 * "a redelivery while the first is in flight joins it" hold by construction:
 * the second copy is looked at only after the first one settled.
 */

export interface InboundAdmission {
  /** True when this message was already handled (and is still remembered). */
  readonly seen: (fromId: string, messageId: string, now: number) => boolean
  /** Marks it handled. */
  readonly commit: (fromId: string, messageId: string, now: number) => void
  readonly size: () => number
}

export interface AdmissionLimits {
  /** How long a handled message is remembered. Default 1 hour. */
  readonly windowMs?: number
  /** How many are remembered at most (oldest forgotten first). Default 1000. */
  readonly capacity?: number
}

const keyOf = (fromId: string, messageId: string): string => `${fromId}\u0000${messageId}`

export const makeInboundAdmission = (limits: AdmissionLimits = {}): InboundAdmission => {
  const windowMs = limits.windowMs ?? 60 * 60 * 1000
  const capacity = Math.max(1, limits.capacity ?? 1000)
  /** Insertion-ordered: the first entry is the oldest. */
  const handled = new Map<string, number>()

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
    commit: (fromId, messageId, now) => {
      const key = keyOf(fromId, messageId)
      handled.delete(key)
      handled.set(key, now)
      prune(now)
    },
    size: () => handled.size
  }
}
