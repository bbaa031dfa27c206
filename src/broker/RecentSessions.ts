/**
 * The memory of recently disconnected sessions (P34): who may still receive
 * mail (P49) and be named in a receipt, by scope. (Which client instance
 * held an id is ClientInstances.ts's.) One store for all scopes,
 * bounded overall — kept a day, at most MAX_RECENT records and about
 * MAX_RECENT_BYTES, the oldest forgotten first — and indexed per scope by
 * name and by id prefix, so resolving a target never scans the records.
 *
 * Owned by the Registry; only `Registration` (a session leaves, or registers
 * again) and its own expiry change it.
 */
import { AgedMap } from "./AgedMap.ts"
import { SetIndex, SortedIds } from "./Indexes.ts"

/** What is remembered of a session after it left (P34), for mailbox routing. */
export interface RecentSession {
  /** Its registry key (scope and id). */
  readonly key: string
  readonly id: string
  readonly spaceKey: string
  /** Its scope's key: the groups of one scope share it (`spaceKey` is the group's). */
  readonly scopeKey: string
  readonly name: string | undefined
  readonly infoJson: string
  readonly identity: string | undefined
  /**
   * Whether it left by `unregister` (its client gave the id up) rather than by its connection
   * closing: a register with `ifReleased` (`reclaim-released-v1`) takes only such an id.
   */
  readonly released: boolean
}

/** Records kept at most, over all scopes. */
export const MAX_RECENT = 65_536
/** About this many bytes of records are kept at most, over all scopes. */
export const MAX_RECENT_BYTES = 64 * 1024 * 1024
/**
 * About what one scope's indexes cost (measured: 50,000 departed sessions in
 * 50,000 scopes held ~1.5 KB each; 2 KB leaves room), counted against MAX_RECENT_BYTES so that
 * sessions leaving in fresh scopes are bounded like big records.
 */
const SCOPE_BYTES = 2048
/** How long a departed session is remembered. */
export const RECENT_RETENTION_MS = 86_400_000

interface Stored {
  readonly recent: RecentSession
  readonly bytes: number
}

/** One scope's indexes. */
class ScopeRecents {
  readonly byName = new SetIndex<string, RecentSession>()
  readonly ids = new SortedIds()
  readonly byId = new Map<string, RecentSession>()
}

const scopedIdOf = (scopeKey: string, id: string) => `${scopeKey}\u0000${id}`

const bytesOf = (recent: RecentSession): number =>
  2 * (recent.key.length + recent.id.length + recent.scopeKey.length + recent.infoJson.length + (recent.name?.length ?? 0) +
    (recent.identity?.length ?? 0)) + 256

/**
 * The departed sessions of every scope, with their indexes: remembered on
 * leave, forgotten on expiry, on re-registration or when over the bounds.
 */
export class RecentSessions {
  private readonly entries = new AgedMap<string, Stored>()
  private readonly scopes = new Map<string, ScopeRecents>()
  /**
   * The latest departure of each id from each scope, whatever its group: the record last remembered
   * for it (insertion order, not time: a clock that repeats or steps back does not reorder them).
   * Dropped with that record, so it costs nothing past the records' bound.
   */
  private readonly lastDepartures = new Map<string, { readonly recent: RecentSession; readonly at: number }>()
  private bytes = 0

  /** Records held, over all scopes. */
  get size(): number {
    return this.entries.size
  }

  /** The scopes with a session remembered. */
  scopeKeys(): IterableIterator<string> {
    return this.scopes.keys()
  }

  /** Whether any session of `spaceKey` is remembered. */
  has(spaceKey: string): boolean {
    return this.scopes.has(spaceKey)
  }

  get(spaceKey: string, id: string): RecentSession | undefined {
    return this.scopes.get(spaceKey)?.byId.get(id)
  }

  /**
   * The id `id`'s last departure from the scope `scopeKey`, in any of its groups: the record
   * remembered last of those that count as one (`remember`), and when it was made. Undefined if none
   * is remembered (never one, or its record was forgotten since).
   */
  lastDeparture(scopeKey: string, id: string): { readonly recent: RecentSession; readonly at: number } | undefined {
    return this.lastDepartures.get(scopedIdOf(scopeKey, id))
  }

  /**
   * Remembers `recent` (replacing an earlier record of the same session) as of `now`; unless
   * `departure` is false, it is also the id's last departure from its scope (`lastDeparture`).
   */
  remember(recent: RecentSession, now: number, departure = true): void {
    this.forget(recent.spaceKey, recent.id)
    const bytes = bytesOf(recent)
    this.entries.set(recent.key, { recent, bytes }, now)
    this.bytes += bytes
    let scope = this.scopes.get(recent.spaceKey)
    if (scope === undefined) this.scopes.set(recent.spaceKey, scope = new ScopeRecents())
    scope.byId.set(recent.id, recent)
    scope.ids.add(recent.id)
    if (departure) this.lastDepartures.set(scopedIdOf(recent.scopeKey, recent.id), { recent, at: now })
    if (recent.name !== undefined) scope.byName.add(recent.name.toLowerCase(), recent)
    this.expire(now)
    while (this.entries.size > MAX_RECENT || this.bytes + this.scopes.size * SCOPE_BYTES > MAX_RECENT_BYTES) {
      const oldest = this.entries.expireOldest(Number.POSITIVE_INFINITY)
      if (oldest === undefined) break
      this.unindex(oldest)
    }
  }

  /** Forgets a session (it registered again). */
  forget(spaceKey: string, id: string): void {
    const recent = this.get(spaceKey, id)
    if (recent === undefined) return
    const stored = this.entries.delete(recent.key)
    if (stored !== undefined) this.unindex(stored)
  }

  /** Forgets sessions that left more than a day ago. */
  expire(now: number): void {
    const cutoff = now - RECENT_RETENTION_MS - 1
    for (let stored = this.entries.expireOldest(cutoff); stored !== undefined; stored = this.entries.expireOldest(cutoff)) {
      this.unindex(stored)
    }
  }

  /** P42's three stages over the scope's departed sessions: exact id, name ignoring case, id prefix (up to 2 found). */
  resolve(spaceKey: string, to: string): ReadonlyArray<RecentSession> {
    const scope = this.scopes.get(spaceKey)
    if (scope === undefined) return []
    const exact = scope.byId.get(to)
    if (exact !== undefined) return [exact]
    const named = scope.byName.get(to.toLowerCase())
    if (named !== undefined) return [...named]
    const found: Array<RecentSession> = []
    for (const id of scope.ids.startingWith(to, 2)) {
      const recent = scope.byId.get(id)
      if (recent !== undefined) found.push(recent)
    }
    return found
  }

  private unindex(stored: Stored): void {
    const recent = stored.recent
    this.bytes -= stored.bytes
    const scopedId = scopedIdOf(recent.scopeKey, recent.id)
    if (this.lastDepartures.get(scopedId)?.recent === recent) this.lastDepartures.delete(scopedId)
    const scope = this.scopes.get(recent.spaceKey)
    if (scope === undefined) return
    scope.byId.delete(recent.id)
    scope.ids.remove(recent.id)
    if (recent.name !== undefined) scope.byName.delete(recent.name.toLowerCase(), recent)
    if (scope.byId.size === 0) this.scopes.delete(recent.spaceKey)
  }
}
