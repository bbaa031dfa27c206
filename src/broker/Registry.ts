/**
 * Who is connected: live sessions per scope (P17), their names and
 * registration order, the memory of recently disconnected sessions (P34), and
 * target resolution (P42). Plain data structures; `Registration` is the only
 * module that adds or removes sessions, and only synchronous code touches them.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import type { SessionRegistration } from "../protocol/frames.ts"
import type { SenderEnd } from "../store/records.ts"
import type { SessionHealth } from "./Health.ts"
import { RegistrationOrder, SetIndex, SortedIds } from "./Indexes.ts"
import { MembershipFeed } from "./MembershipFeed.ts"
import type { Peer } from "./Peer.ts"
import { RecentSessions } from "./RecentSessions.ts"
import type { SessionTraffic } from "./Traffic.ts"

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

/**
 * Which client instance holds a session, as a number: a new one at a
 * takeover of a live session (P16) by another client, in its group or
 * another of the scope (unless that client held the id before and takes it
 * back: its own again, `Registration.takenBack`), the holder's at the
 * client's own rejoin
 * (`rejoin-v1`, the same `instanceId`, also into another group). At a
 * registration with no session live under its id in the scope: the
 * instance of a client that held the id since the broker started (any
 * group, the last few per id: ClientInstances.ts), continued, when that
 * registered with the same `instanceId` (the client's reconnect, or its
 * register after its own `unregister`), or when both gave none and that
 * one registered with nothing known of the id; otherwise a new one
 * (another client — also a new process of the same client, which makes a
 * new `instanceId`). A live session's is never `UNKNOWN_INSTANCE`: one
 * registered with nothing known of its id (never registered since the
 * broker started, or forgotten by the bounds) is a new instance that may
 * also be the one from before the start (`Session.mayBeBeforeStart`).
 */
export type SessionInstance = number

/**
 * The client instance that held a session before this broker started: what
 * a replay record with no route (a durable broker restarted: routes are not
 * stored) implies was given its message (Receipts.recordedRoute). No live
 * session is given it; `mayHold` matches it to one that may be that client.
 */
export const UNKNOWN_INSTANCE = 0

/**
 * Whether `receiver`, the session live now, may be the client instance that
 * was given a message its route (or, with no route, its replay record:
 * `UNKNOWN_INSTANCE`) records as given to `given`.
 */
export const mayHold = (given: SessionInstance, receiver: Session): boolean =>
  given === receiver.instance || (given === UNKNOWN_INSTANCE && receiver.mayBeBeforeStart)

/** A live registered session: identity, fields, its connection, and what is cached for the hot path. */
export interface Session {
  readonly key: string
  readonly id: string
  /** Its scope's key (`spaceKeyOf(scopeId)`); groups of one scope share it. */
  readonly scopeKey: string
  /** Its group (`default` unless it registered with `groups-v1` and a group). */
  readonly group: string
  /** Its routing namespace: the scope, and the group when it is not the default one. */
  readonly space: ScopeSpace
  peer: Peer
  endpointEpoch: string
  /**
   * The `presentSince` of its membership feed entry (MembershipFeed.joined),
   * written by Membership when it joins: changed by a return after a
   * departure, kept by a takeover. Its routed messages carry it
   * (`OutboundMessage.senderSince`, Rejoins.ts).
   */
  presentSince: number
  /** Broker registration order; a takeover inherits it (P16). */
  readonly order: number
  /**
   * The client instance that holds it (`SessionInstance`): a receipt route
   * records the one its message was given to (Receipts.ts), and a cancel or
   * supersede goes to a takeover's new instance only about a message it
   * was given.
   */
  readonly instance: SessionInstance
  /**
   * Registered with nothing known of its id since this broker started (or
   * continues an instance that was): it may be the client that held the id
   * before the start, so it may hold a message a replay record with no route
   * says was delivered to the id (`mayHold(UNKNOWN_INSTANCE, ...)`).
   */
  readonly mayBeBeforeStart: boolean
  readonly fields: SessionFields
  infoJson: string
  /**
   * Its cwd resolved and realpathed (`normaliseCwd`), for the mailbox identity (P49): only once it has one
   * (`mailboxIdentity`) — most sessions never do, and a realpath was about 8 % of a registration's CPU.
   */
  realCwd: string | undefined
  /** Explicit name (lower-cased) + real cwd, or undefined for unnamed / fallback-alias / ephemeral sessions (`mailboxIdentity`). */
  identity: string | undefined
  /** Registered short-lived (`ephemeral-v1`): no mailbox identity, and forgotten when it leaves. */
  readonly ephemeral: boolean
  /**
   * For a short-lived session: set once it ends by `unregister`, and carried
   * by every message it sent (`Mail.senderEnd`), so no notice is owed to it
   * for one lost later (MailDelivery.ts). A takeover keeps the cell; a
   * registration after its connection dropped starts a new one.
   */
  readonly senderEnd: SenderEnd | undefined
  lastBroadcastAt: number
  /** Peer health (`health-v1`, Health.ts): `lastSeen`, activity, what the session published. */
  readonly health: SessionHealth
  /** Its traffic counts for the live view (`observe-v1`, Traffic.ts). */
  readonly traffic: SessionTraffic
}

/** One routing namespace: the unscoped sessions, or those of one `scopeId`. */
export class ScopeSpace {
  readonly key: string
  /** Live sessions by id, in registration order (a takeover keeps the position). */
  readonly sessions = new Map<string, Session>()
  /** The same sessions, searchable by registration order (paged `list`). */
  readonly order = new RegistrationOrder<Session>()
  /** Live sessions by lower-cased name. */
  private readonly byName = new SetIndex<string, Session>()
  /** Live session ids, sorted (prefix targets). */
  private readonly ids = new SortedIds()
  /** Live sessions by mailbox identity (P49). */
  private readonly byIdentity = new SetIndex<string, Session>()
  readonly feed = new MembershipFeed()
  /** Live sessions' connections with no FEED_TICK pending (Membership's; see Membership.ts). */
  readonly needsTick = new Set<Peer>()

  constructor(key: string) {
    this.key = key
  }

  /** Indexes a live session by name, id and identity (after it joins, or after a change). */
  index(session: Session): void {
    const name = session.fields.name
    if (name !== undefined) this.byName.add(name.toLowerCase(), session)
    this.ids.add(session.id)
    if (session.identity !== undefined) this.byIdentity.add(session.identity, session)
  }

  /** Removes a session from the indexes (before it leaves, or before a change of name or identity). */
  unindex(session: Session): void {
    const name = session.fields.name
    if (name !== undefined) this.byName.delete(name.toLowerCase(), session)
    this.ids.remove(session.id)
    if (session.identity !== undefined) this.byIdentity.delete(session.identity, session)
  }

  /** P42 over live sessions: exact id, else names equal ignoring case, else ids starting with `to` (up to 2). */
  resolveLive(to: string): ReadonlyArray<Session> {
    const exact = this.sessions.get(to)
    if (exact !== undefined) return [exact]
    const named = this.byName.get(to.toLowerCase())
    if (named !== undefined) return [...named]
    const found: Array<Session> = []
    for (const id of this.ids.startingWith(to, 2)) {
      const session = this.sessions.get(id)
      if (session !== undefined) found.push(session)
    }
    return found
  }

  /** Live sessions other than `except` holding a mailbox identity. */
  liveWithIdentity(identity: string, except: Session | undefined): Array<Session> {
    const holders: Array<Session> = []
    for (const session of this.byIdentity.get(identity) ?? []) if (session !== except) holders.push(session)
    return holders
  }
}

/**
 * Every scope's sessions, and every live session by key (scope + id). The
 * counter for registration order lives here, so numbers are unique across
 * scopes.
 */
export class Registry {
  readonly spaces = new Map<string, ScopeSpace>()
  readonly byKey = new Map<string, Session>()
  /** Departed sessions of every scope (P34). */
  readonly recent = new RecentSessions()
  private registrations = 0
  private liveCount = 0

  /** Live registered sessions. */
  get live(): number {
    return this.liveCount
  }

  /** Scopes kept: those with live sessions, and those only remembered for departed ones (a count over the records: for stats). */
  scopeCount(): number {
    let count = this.spaces.size
    for (const key of this.recent.scopeKeys()) if (!this.spaces.has(key)) count++
    return count
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

  /** Makes `session` live, in place of `previous` when it takes that one over. */
  add(session: Session, previous: Session | undefined): void {
    const space = session.space
    if (previous !== undefined) {
      space.unindex(previous)
      space.order.replace(previous, session)
    } else {
      this.liveCount++
      space.order.add(session)
    }
    space.sessions.set(session.id, session)
    space.index(session)
    this.byKey.set(session.key, session)
    this.recent.forget(space.key, session.id)
  }

  /** Removes a live session; false when it is no longer the live holder of its id. */
  remove(session: Session): boolean {
    const space = session.space
    if (space.sessions.get(session.id) !== session) return false
    space.unindex(session)
    space.sessions.delete(session.id)
    space.order.remove(session)
    this.byKey.delete(session.key)
    this.liveCount--
    return true
  }

  /**
   * Drops a space whose last live session has left, once that leave has been
   * fed to its members (there are none left to tell). A space holds only live
   * sessions, their indexes and their membership feed; departed sessions are
   * kept by `recent`, so a scope that is only remembered costs a record, not
   * a space, and a new registration there starts a fresh one.
   */
  releaseIfEmpty(space: ScopeSpace): void {
    if (space.sessions.size === 0 && this.spaces.get(space.key) === space) this.spaces.delete(space.key)
  }
}

/** The registry key of a session: its scope and its id. */
export const sessionKey = (spaceKey: string, id: string): string => `${spaceKey}\u0000${id}`

/** The session id in registry key `key` (`sessionKey`): what a log line names a session by. */
export const idOfSessionKey = (key: string): string => key.slice(key.lastIndexOf("\u0000") + 1)

/** The group every session is in unless it says otherwise (C-GRP-1). */
export const DEFAULT_GROUP = "default"

/**
 * A group name as the broker keeps it: trimmed, blank meaning `default` (C-GRP-1). Unlike a scope id
 * (`spaceKeyOf`) it is not copied: the untrimmed name `trim`'s slice keeps alive is one per session,
 * within the name's length limit, and no table counts group names' bytes against a bound.
 */
export const groupOf = (group: string | undefined): string => {
  const trimmed = group?.trim() ?? ""
  return trimmed === "" ? DEFAULT_GROUP : trimmed
}

/**
 * The routing namespace of a group of a scope: the scope's own key for the
 * default group (so base clients route exactly as before), else the scope key
 * and the group.
 */
export const groupSpaceKey = (scopeKey: string, group: string): string =>
  group === DEFAULT_GROUP ? scopeKey : `${scopeKey}\u0003group:${group}`

/**
 * The scope key, the group space key and the id a session key (`sessionKey` of a `groupSpaceKey`) was
 * built of: the id follows the last NUL, the space key is all before it, and the scope key ends at the
 * group's U+0003 if there is one. Exact because no
 * id, scope id or group holds a control character (protocol/limits.ts `LABEL_CONTROL`). For a
 * session that is away, whose key is all a kept control names (Registration.mayReturn).
 */
export const sessionKeyParts = (
  key: string
): { readonly scopeKey: string; readonly spaceKey: string; readonly id: string } => {
  const idAt = key.lastIndexOf("\u0000")
  const spaceKey = key.slice(0, idAt)
  const groupAt = spaceKey.indexOf("\u0003")
  return { scopeKey: groupAt === -1 ? spaceKey : spaceKey.slice(0, groupAt), spaceKey, id: key.slice(idAt + 1) }
}

/**
 * A scope's key in the registry (P17): its id trimmed, or the shared key `""` for sessions without
 * one (blank meaning unscoped).
 *
 * A scope id trimmed of anything is copied (`detached`): V8's `trim` returns a slice that keeps the
 * whole scope id it was cut from alive, so every table keeping the key (ClientInstances,
 * RecentSessions) held up to MAX_ID_LENGTH characters it did not count: scopes padded to that length
 * left 45 MB in ClientInstances, which promises 24 MiB (test/broker/ClientInstances-heap.test.ts).
 */
export const spaceKeyOf = (scopeId: string | undefined): string => {
  const trimmed = scopeId?.trim() ?? ""
  if (trimmed === "") return ""
  return `scope:${trimmed.length === scopeId?.length ? trimmed : detached(trimmed)}`
}

/**
 * `text` as a string of its own: equal to it (lone surrogates included), holding no other string alive.
 * JSON's round trip is the one copy the language makes that an engine cannot answer with a view.
 */
const detached = (text: string): string => {
  const copy: unknown = JSON.parse(JSON.stringify(text))
  return typeof copy === "string" ? copy : text
}

/**
 * `path.resolve` and, where the path exists, `realpath`: the cwd half of a mailbox identity (P49). A cwd
 * that does not exist (removed, say) is the path resolved: its session registers, its identity that path.
 */
const normaliseCwd = (cwd: string): string => {
  const resolved = path.resolve(cwd)
  try {
    return fs.realpathSync.native(resolved)
  } catch {
    return resolved
  }
}

/**
 * `session`'s mailbox identity for its fields now (P49): an explicit name, equal ignoring case, in the same
 * real cwd and scope; undefined for one with no explicit name or a short-lived one. Its real cwd is resolved
 * the first time it has one, and kept (`Session.realCwd`).
 */
export const mailboxIdentity = (session: Session): string | undefined => {
  const { fields } = session
  if (session.ephemeral || fields.name === undefined || fields.name === "" || fields.runtimeFallbackAlias === true) {
    return undefined
  }
  session.realCwd ??= normaliseCwd(fields.cwd)
  return `${session.space.key}\u0000${fields.name.toLowerCase()}\u0000${session.realCwd}`
}

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
