/**
 * Who is connected: live sessions per scope (P17), their names, the memory of
 * recently disconnected sessions (P34), and target resolution (P42). Plain
 * data structures owned by the Router; only synchronous code touches them.
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

/** One routing namespace: the unscoped sessions, or those of one `scopeId`. */
export class ScopeSpace {
  readonly key: string
  /** Live sessions by id, in registration order (a takeover keeps the position). */
  readonly sessions = new Map<string, Session>()
  /** Live sessions by lower-cased name. */
  readonly byName = new Map<string, Set<Session>>()
  /** Recently disconnected sessions by id (P34): 24 h, at most 16,384 per scope. */
  readonly recent = new AgedMap<string, RecentSession>(16_384)
  readonly feed = new MembershipFeed()

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

export const sessionKey = (spaceKey: string, id: string): string => `${spaceKey}\u0000${id}`

/** The scope namespace key: `scopeId` trimmed, with empty meaning unscoped (P17). */
export const spaceKeyOf = (scopeId: string | undefined): string => {
  const trimmed = scopeId?.trim() ?? ""
  return trimmed === "" ? "" : `scope:${trimmed}`
}

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
