/**
 * The client's membership view: which other sessions of its scope it
 * believes are on the intercom, and the reconciliation that keeps that
 * belief true across a reconnect.
 *
 * Why the client needs it: the broker's membership feed (broker/MembershipFeed.ts)
 * tells a connection only of changes after it registered. A session that
 * left while this client was away (its connection dropped, or the broker
 * restarted) never gets a `session_left` here, and one that registered with
 * a new broker before this client did never gets a `session_joined`. After
 * a reconnect `IntercomClient` lists the sessions (`list`) and hands the
 * answer to `resync`, which returns the events the feed could not send:
 * `Left` for each session the view held that the list does not name,
 * `Joined` for each listed session the view did not hold, and `Left` then
 * `Joined` for one whose `startedAt` changed (another process registered
 * its id: the one this client knew is gone), and `Updated` for one renamed
 * or with a new status. Each is marked `resync: true`.
 *
 * Ordering against the live feed, which keeps flowing while the list is in
 * flight (`track` ... `untrack`): a session about which a real event was read
 * after the list was written is left out of the comparison (the feed told
 * the newer story already). A real departure that comes after its synthetic
 * twin (a broker that wrote the change after the list answer) is dropped by
 * `read`, so a consumer never hears of one departure twice. Joins have no
 * twins: a real `session_joined` after a synthetic `Joined` is a takeover or
 * a return (P16), which the consumer must hear. A presence update of a
 * session the view does not hold, once it has a baseline, is a join the
 * feed could not tell (it registered while the client was away), published
 * as a `Joined` marked `resync` — so a status change read during the grace
 * does not hide that join.
 *
 * What the view holds: sessions from the presence events read (on any
 * connection) and from the first own-group `list` answer (`seed`; only
 * sessions no event was read about meanwhile, and never a removal). A client that
 * never listed does not know who was there when it first registered: its
 * first reconciliation adds the listed sessions it did not know without
 * announcing them (they may have been there all along), and announces only
 * departures and changes of sessions it knew, and the return of one it saw
 * leave (`leftSeen`). Only the first `list` answer seeds the view: a later
 * one — the owner's, or the client's own lookups, between a reconnect and
 * its reconciliation — must not hide a join from the reconciliation
 * (`seed`). Owned by `IntercomClient`, touched only synchronously.
 */
import type { SessionInfo } from "../protocol/frames.ts"
import type { PresenceEvent } from "./events.ts"

/** The ids about which a real presence event was read while one list was in flight. */
export type Touched = Set<string>

/** How many departed ids the view remembers, so that a return is news to a client that never listed. */
const LEFT_SEEN_LIMIT = 4096

const idOf = (event: PresenceEvent): string => event._tag === "Left" ? event.sessionId : event.session.id

/**
 * Which sessions a client believes are on the intercom, and the synthetic
 * events that reconcile that belief with a `list` answer after a reconnect
 * (see the module header).
 */
export class MembershipView {
  private readonly members = new Map<string, SessionInfo>()
  /** Sessions whose departure the last reconciliation announced and the feed has not told yet. */
  private readonly syntheticLeft = new Set<string>()
  /** Sessions whose last event, read or made up, was a departure (the newest LEFT_SEEN_LIMIT). */
  private readonly leftSeen = new Set<string>()
  /** One set per list in flight: the ids a real event was read about since it was written. */
  private readonly tracking = new Set<Touched>()
  /** Whether a `list` answer was applied: only then is a listed session the view lacks news. */
  private listed = false

  /**
   * Applies an event read from the broker and returns what to publish, or
   * `undefined` when it is not news: a departure the last reconciliation
   * already announced (the feed wrote it after the list answer). A presence
   * update of a session the view does not hold, once it has a baseline, is
   * a join the feed could not tell this connection (it registered while the
   * client was away): it is published as a `Joined` marked `resync`.
   */
  read(event: PresenceEvent): PresenceEvent | undefined {
    const id = idOf(event)
    for (const touched of this.tracking) touched.add(id)
    if (event._tag === "Left") {
      this.members.delete(id)
      this.noteLeft(id)
      return this.syntheticLeft.delete(id) ? undefined : event
    }
    this.syntheticLeft.delete(id)
    this.leftSeen.delete(id)
    const known = this.members.has(id)
    this.members.set(id, event.session)
    return event._tag === "Updated" && !known && this.listed
      ? { _tag: "Joined", session: event.session, resync: true }
      : event
  }

  /** Starts noting the ids real events are read about: call it just before a `list` is written. */
  track(): Touched {
    const touched: Touched = new Set()
    this.tracking.add(touched)
    return touched
  }

  /** Stops noting for `touched` (the list answered, or failed). */
  untrack(touched: Touched): void {
    this.tracking.delete(touched)
  }

  /**
   * The first own-group `list` answer is the view's baseline: adds what it
   * names and the view lacks, except `self` and sessions a real event was
   * read about since it was written (`touched`). Removes nothing and
   * announces nothing: a list the client's owner asked for shows the owner
   * who is there by itself. A later answer adds nothing: once connected with
   * a baseline, the feed tells every join, so a listed session the view lacks
   * is one that joined while this client was away, which the reconciliation
   * after the grace announces — a list made meanwhile (a send's target
   * lookup) must not take that `Joined` from `presenceEvents`.
   */
  seed(listed: ReadonlyArray<SessionInfo>, touched: Touched, self: string): void {
    if (this.listed) return
    this.listed = true
    for (const session of listed) {
      if (session.id === self || touched.has(session.id) || this.members.has(session.id)) continue
      this.members.set(session.id, session)
    }
  }

  /**
   * Reconciles the view with a `list` answer after a reconnect, and returns
   * the synthetic events that do it, in the order to publish them (already
   * applied to the view): `Left` for sessions held and not listed, then, in
   * list order, `Left` + `Joined` for a listed session whose `startedAt`
   * changed, `Joined` for one not held (when no list was applied before, it
   * is added unannounced — it may have been there before this
   * client registered — unless the view saw it leave), and `Updated` for one
   * whose name or status changed. Sessions a real event was read about since
   * the list was written (`touched`), and `self`, are left as the feed says.
   */
  resync(listed: ReadonlyArray<SessionInfo>, touched: Touched, self: string): ReadonlyArray<PresenceEvent> {
    const baseline = this.listed
    this.listed = true
    this.syntheticLeft.clear()
    const events: Array<PresenceEvent> = []
    const listedIds = new Set<string>()
    for (const session of listed) listedIds.add(session.id)
    for (const id of [...this.members.keys()]) {
      if (id === self || touched.has(id) || listedIds.has(id)) continue
      this.members.delete(id)
      this.noteLeft(id)
      events.push({ _tag: "Left", sessionId: id, resync: true })
      this.syntheticLeft.add(id)
    }
    for (const session of listed) {
      const id = session.id
      if (id === self || touched.has(id)) continue
      const known = this.members.get(id)
      this.members.set(id, session)
      if (known !== undefined && known.startedAt === session.startedAt) {
        // Renamed or a new status while away: said as the feed would have said it.
        if (known.name !== session.name || known.status !== session.status) {
          events.push({ _tag: "Updated", session, resync: true })
        }
        continue
      }
      if (known === undefined && !baseline && !this.leftSeen.has(id)) continue
      this.leftSeen.delete(id)
      if (known !== undefined) events.push({ _tag: "Left", sessionId: id, resync: true })
      events.push({ _tag: "Joined", session, resync: true })
    }
    return events
  }

  private noteLeft(id: string): void {
    this.leftSeen.delete(id)
    this.leftSeen.add(id)
    if (this.leftSeen.size > LEFT_SEEN_LIMIT) this.leftSeen.delete(this.leftSeen.values().next().value ?? "")
  }
}
