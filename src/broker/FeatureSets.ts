/**
 * The granted-extension sets `Peer.features` holds, shared among connections
 * granted the same extensions. A broker's fleet is mostly clients of a few
 * kinds, each granted the same list (and every client is granted
 * `exact-send-v1`), so a hash table per connection repeated one of a handful
 * of sets: about 230 bytes of heap per idle session (docs/performance.md,
 * "Idle sessions, sixty-ninth stop"). Owned by Registration, the only writer
 * of `Peer.features`; no set it hands out is ever changed.
 *
 * Bounded: the extensions are a fixed list, but the combinations clients
 * ask for are theirs, so past `MAX_SHARED` distinct sets a connection gets a
 * set of its own, as before.
 */

/** Distinct sets kept for sharing; more combinations than this get their own set each. */
export const MAX_SHARED = 64

const NO_FEATURES: ReadonlySet<string> = new Set()

/** Shared granted-extension sets; see the module header. */
export class FeatureSets {
  /** By the granted extensions in sorted order, joined by a space (no extension name holds one). */
  private readonly shared = new Map<string, ReadonlySet<string>>()

  /** How many distinct sets are kept for sharing (for tests). */
  get size(): number {
    return this.shared.size
  }

  /**
   * The set of `features`: the one already made for the same extensions in
   * any order, else a new one, kept for the next connection while fewer than
   * `MAX_SHARED` are. An empty list gets one empty set.
   */
  of(features: ReadonlyArray<string>): ReadonlySet<string> {
    if (features.length === 0) return NO_FEATURES
    const key = features.length === 1 ? features[0]! : [...features].sort().join(" ")
    const known = this.shared.get(key)
    if (known !== undefined) return known
    const made: ReadonlySet<string> = new Set(features)
    if (this.shared.size < MAX_SHARED) this.shared.set(key, made)
    return made
  }
}
