/**
 * Discovery (P31, P32): `list` answers with the caller's scope in
 * registration order, and `presence` updates a session's SessionInfo and
 * announces it through the membership feed.
 *
 * A `sessions` frame must fit 1 MiB, counted in UTF-8 bytes: each SessionInfo
 * and the frame's own fields (a request id of 256 units can be 768 bytes). A base client gets the first sessions
 * that fit (the cut is logged). A client granted `list-page-v1` gets pages:
 * each answer carries `total` and, while sessions remain, a `nextCursor` to
 * pass back in the next `list`, so it can read every live session however
 * many there are. The cursor is the registration order of the last session
 * sent; a page starts there in O(log n) (Registry's `RegistrationOrder`).
 *
 * A `list` from a client granted `ask-expiry-v1` first closes the ask edges
 * past their deadline (a heap peek when none is due): it is the round trip
 * that settles an ask at its asker's own deadline (Asks.ts, Ask.ts). When
 * that round trip is marked (`settle: true`), its answer is held while a
 * reply to that client the broker accepted is still parked behind its
 * sender's mail to a full outbox (`Output.enqueueSettleAnswer`); any other
 * `list` — the liveness probe, the user's — is answered at once.
 */
import { MAX_FRAME_BYTES } from "../protocol/constants.ts"
import { decodeClientFrame, isFrameDecodeError } from "../protocol/decode.ts"
import { ASK_EXPIRY_V1, GROUPS_V1, HEALTH_V1, LIST_PAGE_V1 } from "../protocol/features.ts"
import { presenceRefusal } from "../protocol/limits.ts"
import { frameBytes } from "../protocol/framing.ts"
import * as Encode from "./encode.ts"
import { applyHealthPresence, infoJsonWithHealth } from "./Health.ts"
import type { Membership } from "./Membership.ts"
import type { Peer } from "./Peer.ts"
import { encodeSessionInfo, groupOf, groupSpaceKey, mailboxIdentity, type ScopeSpace, type Session } from "./Registry.ts"
import type { FrameHandlers, RouterContext } from "./RouterContext.ts"

/** Presence re-broadcast heartbeat (P32). */
const PRESENCE_HEARTBEAT_MS = 1000


/** A cursor is the decimal registration order of the last session sent. */
const parseCursor = (cursor: string): number | undefined =>
  /^(0|[1-9][0-9]{0,15})$/.test(cursor) ? Number(cursor) : undefined

/** A session's cached SessionInfo JSON (what a client without `health-v1` gets). */
const cachedInfo = (session: Session): string => session.infoJson

/** The discovery concern: its `list` and `presence` frames. */
export class Discovery {
  private readonly ctx: RouterContext
  private readonly membership: Membership
  private readonly settleAsks: (now: number) => void

  /**
   * @param settleAsks closes the ask edges past their deadline (Asks.prune), run before a `list` from a
   *   client granted `ask-expiry-v1` is answered: see `onList`.
   */
  constructor(ctx: RouterContext, membership: Membership, settleAsks: (now: number) => void = () => undefined) {
    this.ctx = ctx
    this.membership = membership
    this.settleAsks = settleAsks
  }

  readonly frames: FrameHandlers = {
    list: { handle: (peer, frame) => this.onList(peer, frame) },
    presence: { handle: (peer, frame) => this.onPresence(peer, frame) }
  }

  private onList(peer: Peer, raw: unknown): void {
    const frame = decodeClientFrame.list(raw)
    if (isFrameDecodeError(frame)) return this.ctx.protocolError(peer, frame.message)
    const session = peer.session
    if (session === undefined) {
      return this.ctx.protocolError(peer, "list from a connection that no longer owns its session")
    }
    // `ask-expiry-v1`: an asker at its own deadline makes this round trip (its liveness probe's `list`,
    // Ask.ts). Edges past their deadline close first, so their `ask_expired` — and any reply accepted
    // before — are on its FIFO outbox ahead of this answer (a reply still parked behind its sender's mail
    // to a full outbox too, when the list is marked `settle`: the answer is held for it, `enqueueSettleAnswer`);
    // an answer with neither says the ask is over.
    if (peer.features.has(ASK_EXPIRY_V1)) this.settleAsks(this.ctx.now())
    // C-GRP-5: `group` names another group of the scope to peek at, read-only.
    const space = frame.group !== undefined && peer.features.has(GROUPS_V1)
      ? this.ctx.registry.spaces.get(groupSpaceKey(session.scopeKey, groupOf(frame.group)))
      : session.space
    if (space === undefined) {
      const empty = peer.features.has(LIST_PAGE_V1) ? Encode.sessionsPageFrame(frame.requestId, [], 0, undefined) : Encode.sessionsFrame(frame.requestId, [])
      return this.answer(peer, empty, frame.settle)
    }
    const sessions = space.sessions
    // `health-v1`: rows with the health fields, built per answer (Health.ts).
    const infoOf = peer.features.has(HEALTH_V1) ? infoJsonWithHealth : cachedInfo
    if (!peer.features.has(LIST_PAGE_V1)) return this.baseList(peer, session, space, frame.requestId, infoOf, frame.settle)
    const after = frame.cursor === undefined ? 0 : parseCursor(frame.cursor)
    if (after === undefined) return this.ctx.protocolError(peer, `list cursor "${frame.cursor}" is not one this broker sent`)
    const limit = frame.limit ?? Number.POSITIVE_INFINITY
    let budget = MAX_FRAME_BYTES - Encode.sessionsPageOverhead(frame.requestId, sessions.size)
    const infos: Array<string> = []
    let last: Session | undefined
    let more = false
    for (const other of space.order.after(after)) {
      const info = infoOf(other)
      budget -= frameBytes(info) + 1
      if (budget < 0 || infos.length >= limit) {
        more = true
        if (infos.length === 0) {
          // One record larger than a whole page: skip it rather than stall the reader forever.
          this.ctx.log("warning", `list for ${session.id}: the record of ${other.id} does not fit a 1 MiB frame; skipped`)
          last = other
        }
        break
      }
      infos.push(info)
      last = other
    }
    const nextCursor = more && last !== undefined ? String(last.order) : undefined
    this.answer(peer, Encode.sessionsPageFrame(frame.requestId, infos, sessions.size, nextCursor), frame.settle)
  }

  /**
   * Queues a `sessions` answer for `peer`: the answer to a settling `list`
   * (`settle: true`, honoured only from a client granted `ask-expiry-v1`)
   * behind any reply to it still parked elsewhere
   * (Output.enqueueSettleAnswer), so that round trip cannot overtake it;
   * any other at once.
   */
  private answer(peer: Peer, frame: string, settle: boolean | undefined): void {
    if (settle === true && peer.features.has(ASK_EXPIRY_V1)) this.ctx.output.enqueueSettleAnswer(peer, frame)
    else this.ctx.output.enqueue(peer, frame)
  }

  /** The base protocol's one frame: as many sessions as fit, the cut logged. */
  private baseList(
    peer: Peer,
    session: Session,
    space: ScopeSpace,
    requestId: string,
    infoOf: (session: Session) => string,
    settle: boolean | undefined
  ): void {
    const sessions = space.sessions
    let budget = MAX_FRAME_BYTES - Encode.sessionsFrameOverhead(requestId)
    const infos: Array<string> = []
    for (const other of sessions.values()) {
      const info = infoOf(other)
      budget -= frameBytes(info) + 1
      if (budget < 0) break
      infos.push(info)
    }
    if (infos.length < sessions.size) {
      this.ctx.log(
        "warning",
        `list for ${session.id}: ${sessions.size} sessions do not fit one 1 MiB frame; sent the first ${infos.length} (clients with list-page-v1 get them all)`
      )
    }
    this.answer(peer, Encode.sessionsFrame(requestId, infos), settle)
  }

  private onPresence(peer: Peer, raw: unknown): void {
    const frame = decodeClientFrame.presence(raw)
    if (isFrameDecodeError(frame)) return this.ctx.protocolError(peer, frame.message)
    const overLimit = presenceRefusal(frame)
    if (overLimit !== undefined) return this.ctx.refuse(peer, overLimit)
    const session = peer.session
    if (session === undefined) return // from a replaced connection: ignored (P16)
    const now = this.ctx.now()
    if (peer.features.has(HEALTH_V1)) applyHealthPresence(session.health, frame, now)
    const fields = session.fields
    let changed = false
    let renamed = false
    const newName = frame.name ?? fields.name
    if (newName !== fields.name) changed = renamed = true
    if (frame.runtimeFallbackAlias !== undefined && frame.runtimeFallbackAlias !== fields.runtimeFallbackAlias) {
      fields.runtimeFallbackAlias = frame.runtimeFallbackAlias
      changed = renamed = true
    }
    if (frame.status !== undefined && frame.status !== fields.status) {
      fields.status = frame.status
      changed = true
    }
    if (frame.model !== undefined && frame.model !== fields.model) {
      fields.model = frame.model
      changed = true
    }
    for (const key of ["contextPct", "contextTokens", "contextWindow"] as const) {
      const value = frame[key]
      if (value === undefined) continue
      const next = value === null ? undefined : value
      if (next !== fields[key]) {
        fields[key] = next
        changed = true
      }
    }
    if (renamed) {
      // Names and identities are indexed (target resolution, P49): out with the old, in with the new.
      session.space.unindex(session)
      fields.name = newName
      session.identity = mailboxIdentity(session)
      session.space.index(session)
    }
    fields.lastActivity = now
    session.infoJson = encodeSessionInfo(session.id, session.endpointEpoch, peer.connection.trustedLocal, fields)
    if (changed || now - session.lastBroadcastAt >= PRESENCE_HEARTBEAT_MS) {
      session.lastBroadcastAt = now
      this.membership.updated(session)
    }
  }
}
