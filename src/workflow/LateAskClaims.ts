/**
 * Claims on late asks (C-ORD-9): the single record of who owns a blocking
 * ask that reached a completed stage. Every listener that could handle such
 * an ask claims it here first; the first claim wins and stays, so it does
 * not matter which listener was registered first, and a redelivered ask is
 * never handled twice.
 *
 * Synchronous and owned by whoever holds it (the `Stages` service keeps one
 * for all its stages). It remembers at least the last `limit` keys (default
 * 1000), forgetting the oldest first.
 *
 * @since 0.1.0
 */

/**
 * The default number of claims remembered.
 *
 * @category defaults
 * @since 0.1.0
 */
export const DEFAULT_CLAIM_MEMORY = 1000

/**
 * What a claim found (see `LateAskClaims.claim`).
 *
 * @category models
 * @since 0.1.0
 */
export type ClaimResult = "claimed" | "held" | "taken"

/**
 * The claim record (see the module header).
 *
 * @category models
 * @since 0.1.0
 */
export interface LateAskClaims {
  /**
   * Claims `key` for `owner`: `claimed` on the first claim, `held` when
   * `owner` already held it (a redelivery: do not handle it again), `taken`
   * when another owner holds it.
   */
  readonly claim: (key: string, owner: string) => ClaimResult
  /** Who holds `key`, if anyone (still remembered). */
  readonly owner: (key: string) => string | undefined
}

/**
 * A claim record remembering the last `limit` keys.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeLateAskClaims = (limit: number = DEFAULT_CLAIM_MEMORY): LateAskClaims => {
  const owners = new Map<string, string>()
  return {
    owner: (key) => owners.get(key),
    claim: (key, owner) => {
      const held = owners.get(key)
      if (held !== undefined) return held === owner ? "held" : "taken"
      owners.set(key, owner)
      if (owners.size > limit) {
        const oldest = owners.keys().next()
        if (oldest.done !== true) owners.delete(oldest.value)
      }
      return "claimed"
    }
  }
}
