/**
 * The membership feed as the broker uses it: `session_joined`,
 * `presence_update` and `session_left` reach every other session of a scope
 * through that scope's compacted `MembershipFeed`, pulled by each recipient's
 * writer (docs/architecture.md, "Membership frames").
 *
 * This module owns the set of scopes whose membership changed, wakes their
 * recipients' writers once per batch of changes (the notifier fiber calls
 * `notify`), keeps each feed's departed entries bounded, and is the only
 * writer of a `Peer`'s membership fields (`feedCursor`, `owedDepartures`).
 */
import type { Queue } from "effect"
import * as Encode from "./encode.ts"
import type { Peer } from "./Peer.ts"
import type { ScopeSpace, Session } from "./Registry.ts"
import { type RouterContext, signal } from "./RouterContext.ts"

export class Membership {
  private readonly ctx: RouterContext
  /** Spaces whose membership changed since the notifier last ran. */
  private readonly dirty = new Set<ScopeSpace>()
  private readonly feedSignal: Queue.Queue<void>

  constructor(ctx: RouterContext, feedSignal: Queue.Queue<void>) {
    this.ctx = ctx
    this.feedSignal = feedSignal
  }

  /** `session` registered: it sees changes from now on, and the others see it join. */
  joined(session: Session): void {
    const space = session.space
    session.peer.feedCursor = space.feed.seq
    space.feed.joined(session.id, session.infoJson)
    this.markDirty(space)
  }

  /** `session`'s SessionInfo changed (presence, P32). */
  updated(session: Session): void {
    session.space.feed.updated(session.id, session.infoJson)
    this.markDirty(session.space)
  }

  left(session: Session): void {
    session.space.feed.left(session.id)
    this.markDirty(session.space)
  }

  /** Appends the membership changes `peer` has not seen (called by its writer, through Output). */
  collect(peer: Peer, out: Array<string>): void {
    const session = peer.session
    if (session === undefined) return
    if (peer.owedDepartures !== undefined) {
      for (const id of peer.owedDepartures) out.push(Encode.sessionLeftFrame(id))
      peer.owedDepartures = undefined
    }
    peer.feedCursor = session.space.feed.collect(peer.feedCursor, session.id, out)
  }

  /** Wakes the writers of every session in a changed space, once per batch of changes. */
  notify(): void {
    for (const space of this.dirty) {
      for (const session of space.sessions.values()) this.ctx.output.feedTick(session.peer)
      if (space.feed.departedCount > 64 + space.sessions.size) this.compact(space)
    }
    this.dirty.clear()
  }

  private markDirty(space: ScopeSpace): void {
    if (this.dirty.size === 0) signal(this.feedSignal)
    this.dirty.add(space)
  }

  /**
   * Keeps a feed's departed entries bounded. An entry dropped before a lagging
   * recipient saw it becomes a departure owed to that recipient, if it had
   * seen the session join: it still gets its `session_left`.
   */
  private compact(space: ScopeSpace): void {
    const feed = space.feed
    let minCursor = feed.seq
    for (const session of space.sessions.values()) minCursor = Math.min(minCursor, session.peer.feedCursor)
    const lagging = minCursor === feed.seq
      ? []
      : [...space.sessions.values()].filter((session) => session.peer.feedCursor < feed.seq)
    feed.compact(minCursor, 4 * space.sessions.size + 1024, (departed) => {
      for (const session of lagging) {
        const peer = session.peer
        if (peer.feedCursor < departed.seq && departed.joinSeq <= peer.feedCursor && session.id !== departed.id) {
          const owed = peer.owedDepartures ?? new Set<string>()
          owed.add(departed.id)
          peer.owedDepartures = owed
        }
      }
    })
  }
}
