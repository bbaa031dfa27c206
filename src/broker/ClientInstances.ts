/**
 * The client instances that held each session id since this broker started
 * (review revc L1, L2; reve R1, R2): so that a registration of an id nobody
 * holds live is told to be one of them returning (the same `rejoin-v1`
 * `instanceId`: its `Session.instance` continues), another client (a new
 * instance), or — only when nothing is known of the id — a new instance
 * that may also be the client that held the id before this broker started
 * (`mayBeBeforeStart`: what a replay record with no route says was
 * delivered, Receipts.recordedRoute). Every registration is a fresh
 * instance unless it continues a known one, so a route made here names
 * exactly the instance given its message, and a client forgotten by the
 * bounds is never taken for another (R1).
 *
 * Why its own table, not the departed session's P34 record
 * (RecentSessions.ts): that record is forgotten when the id registers again
 * in its group, and a short-lived session (`ephemeral-v1`) leaves none, so
 * a client between the holder and a third one erased what was known and the
 * third was taken for the holder (L1); and a record is per group, so a
 * client that used the id in another group hid the holder's own return
 * (L2). Here every instance that stops holding an id is noted (`noted`: as
 * its session leaves, or as another client takes it over), whatever its
 * group and however short-lived, per scope and id, most recent first. A
 * live session is not noted until then — nobody asks about an id held live
 * (a takeover or rejoin is judged from the live session) — so the bounds
 * count departed holders' ids only, not the live sessions'.
 *
 * Bounded: at most INSTANCES_PER_ID instances per id (an older one pushed
 * out returns as a new instance: told "cannot be cancelled" of its
 * messages), at most `maxIds` ids (the broker option `clientInstanceIds`,
 * MAX_IDS by default; tests make it small to cross it) and about MAX_BYTES
 * over all scopes, the id noted least recently forgotten first. No age limit: forgetting an id
 * makes its next registration a new instance that may be the one from
 * before the start again (as before any of this was kept), so it happens
 * only under churn past the bounds — about 61,000 short-lived base sessions
 * with fresh UUID ids, for example, fill MAX_BYTES (410 bytes each as
 * counted; about 360 retained), and 6,500 ids with four instances each at
 * the protocol's longest (test/broker/ClientInstances-heap.test.ts measures
 * the table at its bounds). A client forgotten so is never given another's
 * messages: its return is a new instance, which no route made here names.
 * Memory only, also on a durable broker: a restarted broker knows nothing,
 * and takes the first registration of each id for one that may be the
 * client from before the restart.
 *
 * Owned by `Registration`, its only reader and writer.
 */
import { AgedMap } from "./AgedMap.ts"
import type { SessionInstance } from "./Registry.ts"

/**
 * One client instance that held an id: its `instanceId` (`rejoin-v1`), if it gave one, its number, and
 * whether it registered with nothing known of the id (or continues one that did), so that it may be the
 * client that held the id before this broker started (`Session.mayBeBeforeStart`).
 */
export interface KnownInstance {
  readonly instanceId: string | undefined
  readonly instance: SessionInstance
  readonly mayBeBeforeStart: boolean
}

/** `ClientInstances.returning`'s answer when nothing is known of the id: a new instance that may be the one from before the start. */
export const NOTHING_KNOWN = "nothing-known"

/** Instances kept per id, the most recent first. */
export const INSTANCES_PER_ID = 4
/** Ids kept at most, over all scopes, by default (the broker option `clientInstanceIds`). */
export const MAX_IDS = 65_536
/** About this many bytes of entries are kept at most, over all scopes. */
export const MAX_BYTES = 24 * 1024 * 1024

interface Entry {
  readonly instances: ReadonlyArray<KnownInstance>
  readonly bytes: number
}

const keyOf = (scopeKey: string, id: string) => `${scopeKey}\u0000${id}`

/** What a key with a scope retains beyond one without: two more rope nodes and the scope id's own string header, rounded up. */
const SCOPED = 128

/**
 * An entry's retained bytes, estimated at or above what review revg measured
 * with a forced GC (per id: about 325 bytes for a UUID id and one instance
 * without an `instanceId`, 519 with a UUID `instanceId`, 680–715 for short
 * ids with four short `instanceId`s; the earlier 128 + 48 per instance
 * undercounted small entries by 30–80 %): the key and the entry, the map's
 * node and the array, then each instance. A key with a scope costs SCOPED
 * more: it is a rope of the scope key's rope and the id, and the scope id a
 * string of its own (without it, short ids in scopes retained 7.6 % more
 * than counted at the bound: test/broker/ClientInstances-heap.test.ts).
 */
const bytesOf = (scopeKey: string, key: string, instances: ReadonlyArray<KnownInstance>): number => {
  let bytes = 2 * key.length + (scopeKey === "" ? 224 : 224 + SCOPED)
  for (const known of instances) bytes += 2 * (known.instanceId?.length ?? 0) + 112
  return bytes
}

/** The client instances of each id of each scope, most recent first, bounded: see the module header. */
export class ClientInstances {
  private readonly entries = new AgedMap<string, Entry>()
  private bytes = 0
  private order = 0
  private readonly maxIds: number

  /** @param maxIds ids kept at most, over all scopes (a whole number ≥ 1: the broker checks its options). */
  constructor(maxIds: number = MAX_IDS) {
    this.maxIds = maxIds
  }

  /** Ids with an entry, over all scopes. */
  get size(): number {
    return this.entries.size
  }

  /** The entries' bytes as counted against MAX_BYTES (each at its estimated retained size). */
  get countedBytes(): number {
    return this.bytes
  }

  /** The instances known to have held `id` in the scope `scopeKey`, most recent first; empty if none is. */
  of(scopeKey: string, id: string): ReadonlyArray<KnownInstance> {
    return this.entries.get(keyOf(scopeKey, id))?.instances ?? []
  }

  /**
   * Notes that the client instance `known` holds (registered) or held (left) `id` in the scope
   * `scopeKey`: it becomes the id's most recent, and the id the most recently noted.
   */
  noted(scopeKey: string, id: string, known: KnownInstance): void {
    const key = keyOf(scopeKey, id)
    const before = this.entries.delete(key)
    const instances: Array<KnownInstance> = [known]
    if (before !== undefined) {
      this.bytes -= before.bytes
      for (const other of before.instances) {
        if (instances.length === INSTANCES_PER_ID) break
        if (other.instance !== known.instance) instances.push(other)
      }
    }
    // Kept at its exact length: an array grown by `push` keeps spare room (about 200 bytes for four).
    const kept = instances.slice()
    const bytes = bytesOf(scopeKey, key, kept)
    this.bytes += bytes
    // An insertion counter, not the clock: the least recently noted goes first whatever the clock does.
    this.entries.set(key, { instances: kept, bytes }, ++this.order)
    while (this.entries.size > this.maxIds || this.bytes > MAX_BYTES) {
      const oldest = this.entries.expireOldest(Number.POSITIVE_INFINITY)
      if (oldest === undefined) break
      this.bytes -= oldest.bytes
    }
  }

  /**
   * The instance of a registration of `id` by `instanceId` (undefined: the client gave none) with no
   * session of it live in the scope: a known instance with that `instanceId`, continued; a base client's
   * registration after a last holder that was a base client with nothing known of the id (a reconnect
   * cannot be told from another client, so it stays the one that may be from before the start),
   * continued; `NOTHING_KNOWN` when nothing is known of the id; otherwise undefined — another client, a
   * new instance (also any `instanceId` that matches none kept: it is not a base client that held it).
   */
  returning(scopeKey: string, id: string, instanceId: string | undefined): KnownInstance | typeof NOTHING_KNOWN | undefined {
    const known = this.of(scopeKey, id)
    const last = known[0]
    if (last === undefined) return NOTHING_KNOWN
    if (instanceId !== undefined) {
      for (const one of known) if (one.instanceId === instanceId) return one
      return undefined
    }
    return last.instanceId === undefined && last.mayBeBeforeStart ? last : undefined
  }
}
