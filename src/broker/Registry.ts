/**
 * Who is connected: live sessions per scope (P17), their names and
 * registration order, the memory of recently disconnected sessions (P34), and
 * target resolution (P42). Plain data structures; `Registration` is the only
 * module that adds or removes sessions, and only synchronous code touches them.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import type { SessionRegistration } from "../protocol/frames.ts"
import { AgedMap } from "./AgedMap.ts"
import { MembershipFeed } from "./MembershipFeed.ts"
import type { Peer } from "./Peer.ts"

/** Mutable SessionInfo fields; `infoJson` is re-encoded after every change (encode once, send many). */
export interface SessionFields {
  name: string | undefined
  runtimeFallbackAlias: boolean | undefined
  cwd: string
  model: string
  pid: number
  startedAt: number
  lastActivity: number
  status: string | undefined
  tmuxPane: string | undefined
  contextPct: number | undefined
  contextTokens: number | undefined
  contextWindow: number | undefined
}

/** A live registered session: identity, fields, its connection, and what is cached for the hot path. */
export interface Session {
  readonly key: string
  readonly id: string
  readonly space: ScopeSpace
  peer: Peer
  endpointEpoch: string
  /** Broker registration order; a takeover inherits it (P16). */
  readonly order: number
  readonly fields: SessionFields
  infoJson: string
  /** `path.resolve` + `realpath` of cwd, for the mailbox identity (P49). */
  readonly realCwd: string
  /** Explicit name (lower-cased) + real cwd, or undefined for unnamed / fallback-alias sessions. */
  identity: string | undefined
  lastBroadcastAt: number
  /**
   * Identifies this session's lifetime: kept by a takeover (P16), new for a
   * fresh registration. Receipt routes remember it, so they lapse when either
   * side leaves without any bookkeeping at leave time.
   */
  readonly incarnation: number
}

/** What is remembered of a session after it left (P34), for mailbox routing. */
export interface RecentSession {
  readonly key: string
  readonly id: string
  readonly name: string | undefined
  readonly infoJson: string
  readonly identity: string | undefined
}

/**
 * Live sessions in registration order, searchable by order number, so a paged
 * `list` starts its page in O(log n) wherever the previous page ended. A
 * session that leaves leaves a hole, and the holes are squeezed out once they
 * outnumber the sessions (amortised O(1) per leave).
 */
class RegistrationOrder {
  private slots: Array<Session | undefined> = []
  /** `orders[i]` is the order number of `slots[i]`, kept for holes too, so the search stays a plain bisection. */
  private orders: Array<number> = []
  private holes = 0

  add(session: Session): void {
    this.slots.push(session)
    this.orders.push(session.order)
  }

  /** A takeover: the new record takes the old one's place. */
  replace(previous: Session, next: Session): void {
    const index = this.indexOf(previous.order)
    if (index !== undefined) this.slots[index] = next
  }

  remove(session: Session): void {
    const index = this.indexOf(session.order)
    if (index === undefined || this.slots[index] !== session) return
    this.slots[index] = undefined
    this.holes++
    if (this.holes > 64 && this.holes * 2 > this.slots.length) this.compact()
  }

  /** Live sessions registered after `afterOrder`, oldest first. */
  *after(afterOrder: number): Generator<Session> {
    for (let i = this.firstAfter(afterOrder); i < this.slots.length; i++) {
      const session = this.slots[i]
      if (session !== undefined) yield session
    }
  }

  /** The index of the first slot whose order is above `order`. */
  private firstAfter(order: number): number {
    let low = 0
    let high = this.orders.length
    while (low < high) {
      const mid = (low + high) >>> 1
      if (this.orders[mid]! <= order) low = mid + 1
      else high = mid
    }
    return low
  }

  private indexOf(order: number): number | undefined {
    const index = this.firstAfter(order - 1)
    return this.orders[index] === order ? index : undefined
  }

  private compact(): void {
    const slots: Array<Session | undefined> = []
    const orders: Array<number> = []
    for (let i = 0; i < this.slots.length; i++) {
      const session = this.slots[i]
      if (session === undefined) continue
      slots.push(session)
      orders.push(this.orders[i]!)
    }
    this.slots = slots
    this.orders = orders
    this.holes = 0
  }
}

/** One routing namespace: the unscoped sessions, or those of one `scopeId`. */
export class ScopeSpace {
  readonly key: string
  /** Live sessions by id, in registration order (a takeover keeps the position). */
  readonly sessions = new Map<string, Session>()
  /** The same sessions, searchable by registration order (paged `list`). */
  readonly order = new RegistrationOrder()
  /** Live sessions by lower-cased name. */
  readonly byName = new Map<string, Set<Session>>()
  /** Recently disconnected sessions by id (P34): 24 h, at most 16,384 per scope. */
  readonly recent = new AgedMap<string, RecentSession>(16_384)
  readonly feed = new MembershipFeed()
  /** Live sessions' connections with no FEED_TICK pending (Membership's; see Membership.ts). */
  readonly needsTick = new Set<Peer>()

  constructor(key: string) {
    this.key = key
  }

  indexName(session: Session): void {
    const name = session.fields.name
    if (name === undefined) return
    const lower = name.toLowerCase()
    let set = this.byName.get(lower)
    if (set === undefined) this.byName.set(lower, set = new Set())
    set.add(session)
  }

  unindexName(session: Session): void {
    const name = session.fields.name
    if (name === undefined) return
    const lower = name.toLowerCase()
    const set = this.byName.get(lower)
    if (set === undefined) return
    set.delete(session)
    if (set.size === 0) this.byName.delete(lower)
  }

  /** P42 over live sessions: exact id, else names equal ignoring case, else ids starting with `to`. */
  resolveLive(to: string): ReadonlyArray<Session> {
    const exact = this.sessions.get(to)
    if (exact !== undefined) return [exact]
    const named = this.byName.get(to.toLowerCase())
    if (named !== undefined && named.size > 0) return [...named]
    const prefixed: Array<Session> = []
    for (const session of this.sessions.values()) if (session.id.startsWith(to)) prefixed.push(session)
    return prefixed
  }

  /** P42's three stages over recently disconnected sessions (P49). */
  resolveRecent(to: string): ReadonlyArray<RecentSession> {
    const exact = this.recent.get(to)
    if (exact !== undefined) return [exact]
    const lower = to.toLowerCase()
    const named: Array<RecentSession> = []
    for (const recent of this.recent.values()) if (recent.name?.toLowerCase() === lower) named.push(recent)
    if (named.length > 0) return named
    const prefixed: Array<RecentSession> = []
    for (const recent of this.recent.values()) if (recent.id.startsWith(to)) prefixed.push(recent)
    return prefixed
  }

  /** Live sessions other than `except` holding a mailbox identity. */
  liveWithIdentity(identity: string, except: Session | undefined): Array<Session> {
    const holders: Array<Session> = []
    for (const session of this.sessions.values()) {
      if (session !== except && session.identity === identity) holders.push(session)
    }
    return holders
  }
}

/**
 * Every scope's sessions, and every live session by key (scope + id). Counters
 * for registration order and incarnations live here, so numbers are unique
 * across scopes.
 */
export class Registry {
  readonly spaces = new Map<string, ScopeSpace>()
  readonly byKey = new Map<string, Session>()
  private registrations = 0
  private incarnations = 0
  private liveCount = 0

  /** Live registered sessions. */
  get live(): number {
    return this.liveCount
  }

  /** The space for `key`, created on first use. */
  space(key: string): ScopeSpace {
    let space = this.spaces.get(key)
    if (space === undefined) this.spaces.set(key, space = new ScopeSpace(key))
    return space
  }

  /** The next registration order number (P16: a takeover keeps its predecessor's). */
  nextOrder(): number {
    return ++this.registrations
  }

  /** The next incarnation number (a takeover keeps its predecessor's). */
  nextIncarnation(): number {
    return ++this.incarnations
  }

  /** Makes `session` live, in place of `previous` when it takes that one over. */
  add(session: Session, previous: Session | undefined): void {
    const space = session.space
    if (previous !== undefined) {
      space.unindexName(previous)
      space.order.replace(previous, session)
    } else {
      this.liveCount++
      space.order.add(session)
    }
    space.sessions.set(session.id, session)
    space.indexName(session)
    space.recent.delete(session.id)
    this.byKey.set(session.key, session)
  }

  /** Removes a live session; false when it is no longer the live holder of its id. */
  remove(session: Session): boolean {
    const space = session.space
    if (space.sessions.get(session.id) !== session) return false
    space.sessions.delete(session.id)
    space.unindexName(session)
    space.order.remove(session)
    this.byKey.delete(session.key)
    this.liveCount--
    return true
  }
}

/** The registry key of a session: its scope and its id. */
export const sessionKey = (spaceKey: string, id: string): string => `${spaceKey}\u0000${id}`

/** The scope namespace key: `scopeId` trimmed, with empty meaning unscoped (P17). */
export const spaceKeyOf = (scopeId: string | undefined): string => {
  const trimmed = scopeId?.trim() ?? ""
  return trimmed === "" ? "" : `scope:${trimmed}`
}

/** `path.resolve` and, where the path exists, `realpath`: the cwd half of a mailbox identity (P49). */
export const normaliseCwd = (cwd: string): string => {
  const resolved = path.resolve(cwd)
  try {
    return fs.realpathSync.native(resolved)
  } catch {
    return resolved
  }
}

/** The mailbox identity (P49): an explicit name, equal ignoring case, in the same real cwd and scope. */
export const identityOf = (spaceKey: string, fields: SessionFields, realCwd: string): string | undefined =>
  fields.name === undefined || fields.name === "" || fields.runtimeFallbackAlias === true
    ? undefined
    : `${spaceKey}\u0000${fields.name.toLowerCase()}\u0000${realCwd}`

/** The mutable fields of a new session, from its `register` payload. */
export const fieldsFromRegistration = (registration: SessionRegistration): SessionFields => ({
  name: registration.name,
  runtimeFallbackAlias: registration.runtimeFallbackAlias,
  cwd: registration.cwd,
  model: registration.model,
  pid: registration.pid,
  startedAt: registration.startedAt,
  lastActivity: registration.lastActivity,
  status: registration.status,
  tmuxPane: registration.tmuxPane,
  contextPct: undefined,
  contextTokens: undefined,
  contextWindow: undefined
})

/** Encodes the broker-built SessionInfo (P14) once per change. */
export const encodeSessionInfo = (
  id: string,
  endpointEpoch: string,
  trustedLocal: boolean,
  fields: SessionFields
): string =>
  JSON.stringify({
    id,
    name: fields.name,
    runtimeFallbackAlias: fields.runtimeFallbackAlias,
    cwd: fields.cwd,
    model: fields.model,
    pid: fields.pid,
    startedAt: fields.startedAt,
    lastActivity: fields.lastActivity,
    status: fields.status,
    tmuxPane: fields.tmuxPane,
    endpointEpoch,
    trustedLocal,
    contextPct: fields.contextPct,
    contextTokens: fields.contextTokens,
    contextWindow: fields.contextWindow
  })
