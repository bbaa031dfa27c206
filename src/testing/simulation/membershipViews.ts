/**
 * The `membership-view` check: what each simulated client believes about who
 * is on the intercom, against what the broker's registry says at the end of a
 * run.
 *
 * Each client a session starts gets a `MembershipFold` and a fiber (in the
 * client's Scope) that models a consumer of `presenceEvents` as pi's and the
 * watch's are: it subscribes before the client first connects, lists once
 * (the feed tells a connection only of changes after it registered, so the
 * sessions already there come from that list) while the client's own view
 * is current — on its first connection, or once the reconciliation after
 * its last reconnect is over — and folds every event —
 * `Joined`/`Updated` add, `Left` removes, read or made up by a reconnect's
 * reconciliation (`resync: true`, client/MembershipView.ts). Sessions a real
 * event was read about while the list was in flight are left as the events
 * say (the answer may be older). At `finish`, once every client has had its
 * rejoin grace after its last reconnect and a list round trip besides
 * (`viewSettlesAt`), `finish` compares each fold with what a `list` of its
 * scope and group returns, less itself: the same sessions, each with the same
 * `startedAt` (a session that restarted while the client was away is another
 * registration), name and status. A difference names the client, the
 * sessions extra, missing or stale, and the last event it read about each.
 *
 * Why both sides are comparable: a `list` and the feed have one scope — the
 * lister's `scopeId` and group (groups-v1); observers are in neither
 * (`observe-v1`, docs/protocol.md), and a `peek` into another group is not folded.
 * The fold is plain synchronous state touched by its one fiber and by
 * `finish`, which runs between that fiber's steps.
 */
import { Clock, Duration, Effect, Schedule, Stream } from "effect"
import type { IntercomClientService } from "../../client/IntercomClient.ts"
import type { PresenceEvent } from "../../client/events.ts"
import type { SessionInfo } from "../../protocol/frames.ts"

/** The last event a fold read about one session, for the violation's text. */
interface LastRead {
  readonly what: string
  readonly at: number
}

/** What a fold compares of a session: who it is (a registration's `startedAt`), its name and its status. */
const identityOf = (session: SessionInfo): string =>
  `started ${session.startedAt}, name ${session.name ?? "-"}, status ${session.status ?? "-"}`

/**
 * One client's belief about which other sessions of its scope and group are
 * live, and as what, folded from its `presenceEvents` and one initial `list`
 * (see the module header). Owned by the fiber `foldMembership` runs.
 */
export class MembershipFold {
  private readonly live = new Map<string, SessionInfo>()
  private readonly last = new Map<string, LastRead>()
  /** Ids an event was read about since the initial list was asked for; undefined when none is in flight. */
  private touched: Set<string> | undefined = undefined
  private seeded = false
  private lastReconnect: number | undefined = undefined

  /** Simulated time of the client's last reconnect (its reconciliation comes `rejoinGraceMs` later), if any. */
  get reconnectedAt(): number | undefined {
    return this.lastReconnect
  }

  /** Notes that the client reconnected at `at` (simulated ms). */
  reconnected(at: number): void {
    this.lastReconnect = at
  }

  /** Whether the initial list was applied (before it, the fold cannot know who was there first). */
  get listed(): boolean {
    return this.seeded
  }

  /** Applies one presence event read at `at` (simulated ms). */
  read(event: PresenceEvent, at: number): void {
    const id = event._tag === "Left" ? event.sessionId : event.session.id
    this.touched?.add(id)
    if (event._tag === "Left") this.live.delete(id)
    else this.live.set(id, event.session)
    this.last.set(id, { what: `${event._tag}${event.resync === true ? " (resync)" : ""}`, at })
  }

  /** Starts noting the ids events are read about: call it just before the initial `list` is asked for. */
  listing(): void {
    this.touched = new Set()
  }

  /** Applies the initial `list` answer at `at`: adds what it names, except `self` and ids an event was read about since. */
  seed(listed: ReadonlyArray<SessionInfo>, self: string, at: number): void {
    const touched = this.touched ?? new Set<string>()
    this.touched = undefined
    this.seeded = true
    for (const session of listed) {
      if (session.id === self || touched.has(session.id)) continue
      this.live.set(session.id, session)
      this.last.set(session.id, { what: "listed", at })
    }
  }

  /** The initial `list` failed: stop noting (the next attempt starts afresh). */
  listFailed(): void {
    this.touched = undefined
  }

  /**
   * Compares the fold with `expected` (what a `list` of its scope and group
   * returns, less itself): the same ids, each with the same `startedAt`
   * (the same registration), name and status. Undefined when they agree,
   * else what differs, naming sessions with `nameOf`, each with the last
   * event read about it.
   */
  compare(expected: ReadonlyArray<SessionInfo>, nameOf: (id: string) => string): string | undefined {
    const wanted = new Map(expected.map((session) => [session.id, session]))
    const describe = (id: string): string => {
      const last = this.last.get(id)
      return `${nameOf(id)} (last read: ${last === undefined ? "nothing" : `${last.what} at ${last.at} ms`})`
    }
    const extra = [...this.live.keys()].filter((id) => !wanted.has(id)).sort()
    const missing = [...wanted.keys()].filter((id) => !this.live.has(id)).sort()
    const stale: Array<string> = []
    for (const [id, session] of wanted) {
      const held = this.live.get(id)
      if (held === undefined || identityOf(held) === identityOf(session)) continue
      stale.push(`${describe(id)} as ${identityOf(held)}, listed ${identityOf(session)}`)
    }
    if (extra.length === 0 && missing.length === 0 && stale.length === 0) return undefined
    return [
      ...(extra.length === 0 ? [] : [`believes present ${extra.map(describe).join(", ")}`]),
      ...(missing.length === 0 ? [] : [`does not know of ${missing.map(describe).join(", ")}`]),
      ...(stale.length === 0 ? [] : [`holds ${stale.sort().join(", ")}`])
    ].join("; ")
  }
}

/**
 * The consumer a fold models: subscribes to `client.presenceEvents` and
 * folds them, notes each reconnect's time, and lists once the client is
 * connected and its view current — its first connection, or after the
 * reconciliation of its last reconnect (looking every second until a list
 * is answered; it never dials itself). Runs until the client's Scope closes.
 */
export const foldMembership = (client: IntercomClientService, fold: MembershipFold): Effect.Effect<void> =>
  Effect.gen(function*() {
    const now = Clock.currentTimeMillis
    yield* Effect.forkChild(
      Stream.runForEach(client.presenceEvents, (event) => Effect.map(now, (at) => fold.read(event, at))),
      { startImmediately: true }
    )
    yield* Effect.forkChild(
      Stream.runForEach(client.reconnects, () => Effect.map(now, (at) => fold.reconnected(at))),
      { startImmediately: true }
    )
    // Only over a live connection (the fold never dials: that is the session's connect, and the client's own
    // loop), and only while the client's view is current: on its first connection, or once the reconciliation
    // after its last reconnect is over. Between a reconnect and that reconciliation the view may still hold what
    // the feed could not correct, and the reconciliation's events are relative to the view, not to this list.
    const initial = Effect.gen(function*() {
      const before = yield* client.status
      const at = yield* now
      const current = before.connections === 1 ||
        (fold.reconnectedAt !== undefined && at >= viewSettlesAt(fold, client.rejoinGraceMs, VIEW_ROUND_TRIP_MS))
      if (!before.connected || !current) return yield* Effect.fail("not connected, or not reconciled yet")
      fold.listing()
      const listed = yield* client.list.pipe(Effect.tapError(() => Effect.sync(() => fold.listFailed())))
      // An answer from another connection than the one looked at may be from before its reconciliation.
      if ((yield* client.status).connections !== before.connections) {
        fold.listFailed()
        return yield* Effect.fail("reconnected meanwhile")
      }
      fold.seed(listed, client.sessionId, yield* now)
    })
    yield* initial.pipe(Effect.retry({ schedule: Schedule.spaced(Duration.millis(FOLD_POLL_MS)) }), Effect.ignore)
    return yield* Effect.never
  })

/**
 * Simulated time a client's reconciliation list takes to be answered once its
 * rejoin grace is over, at most, in a healed world (a round trip takes a few
 * ms; the driver's `advance` looks every 100 ms).
 */
export const VIEW_ROUND_TRIP_MS = 1_000

/** How often the fold looks whether it may make its list yet (simulated ms). */
const FOLD_POLL_MS = 1_000

/**
 * The simulated time by which a fold is complete: its client reconciled its
 * view after its last reconnect (`viewSettlesAt`), and a fold that has not
 * listed yet had one more look and its list answered.
 */
export const foldSettlesAt = (fold: MembershipFold, rejoinGraceMs: number, now: number): number =>
  Math.max(viewSettlesAt(fold, rejoinGraceMs, VIEW_ROUND_TRIP_MS), fold.listed ? 0 : now) +
  (fold.listed ? 0 : FOLD_POLL_MS + VIEW_ROUND_TRIP_MS)

/**
 * The simulated time by which a client whose last reconnect was at
 * `reconnectedAt` has reconciled its view: its `rejoinGraceMs` after it, and
 * `roundTripMs` for the reconciliation's list to be answered.
 */
export const viewSettlesAt = (
  fold: MembershipFold,
  rejoinGraceMs: number,
  roundTripMs: number
): number => fold.reconnectedAt === undefined ? 0 : fold.reconnectedAt + rejoinGraceMs + roundTripMs
