/**
 * What the client knows of the other sessions' presence, and the wiring that
 * keeps it true across a reconnect: the presence events it publishes on
 * `presenceEvents`, the departures it read (for `InboundMessage.senderLeft`,
 * `isDeparted`, `presenceMark` and `leftSince`), and the membership view
 * (MembershipView.ts) with the `list` that seeds it and the one that
 * reconciles it once `rejoinGraceMs` after a reconnect is over.
 *
 * Why apart from ConnectionLifetime.ts: none of this reads the connection
 * state that module owns. It is handed a connection to list on (`listing`,
 * `resync`) and told when a new one registers (`newConnection`); the
 * connection's reader calls `read` for each presence frame.
 *
 * Owns the presence hub's publishing, the departures read (`departed`, reset
 * for each connection; `lastLeft` and the count of presence events read,
 * kept for the client's life) and the view. Owned by `IntercomClient`,
 * touched only by synchronous code.
 */
import { Duration, Effect, PubSub } from "effect"
import type { SessionInfo } from "../protocol/frames.ts"
import type { ClientConnection } from "./ClientConnection.ts"
import type { ConnectionLost, RequestTimeout } from "./errors.ts"
import type { PresenceEvent } from "./events.ts"
import { MembershipView, type Touched } from "./MembershipView.ts"

/**
 * Departed sessions a client remembers for `InboundMessage.senderLeft` (the newest).
 *
 * @category constants
 * @since 0.1.0
 */
export const DEPARTED_LIMIT = 1_000

/**
 * The client's side of the membership (see the module header).
 *
 * @category models
 * @since 0.1.0
 */
export class ClientMembership {
  /**
   * Sessions whose `session_left` this connection read, and no `session_joined` since, the newest
   * DEPARTED_LIMIT: a message from one of them was sent before it left (`InboundMessage.senderLeft`).
   * Reset for each connection (one that registers afresh is told of no earlier departure or join).
   */
  private readonly departed = new Set<string>()
  /** Presence events read over the client's life (`presenceMark`); never reset. */
  private presenceRead = 0
  /**
   * The `presenceRead` number of each session's latest `session_left`, the newest DEPARTED_LIMIT
   * sessions (`leftSince`). Kept across connections: a departure read is one whatever the connection.
   */
  private readonly lastLeft = new Map<string, number>()
  /** Who this client believes is on the intercom, reconciled after each reconnect (MembershipView.ts). */
  private readonly view = new MembershipView()

  /** Where presence events are published (`presenceEvents`). */
  private readonly hub: PubSub.PubSub<PresenceEvent>
  /** How long a `list` of the view's may take. */
  private readonly listTimeoutMs: number
  /** How long after a reconnect the reconciliation waits. */
  private readonly rejoinGraceMs: number

  constructor(hub: PubSub.PubSub<PresenceEvent>, listTimeoutMs: number, rejoinGraceMs: number) {
    this.hub = hub
    this.listTimeoutMs = listTimeoutMs
    this.rejoinGraceMs = rejoinGraceMs
  }

  /** A presence event read from the broker's feed. A departure the last reconciliation already announced is not published again; a missed join is (MembershipView.read). */
  read(event: PresenceEvent): void {
    const news = this.view.read(event)
    if (news !== undefined) this.publish(news)
  }

  /** Whether this connection read `sessionId` leave, and no join since. */
  isDeparted(sessionId: string): boolean {
    return this.departed.has(sessionId)
  }

  /** How many presence events were read over the client's life (`presenceMark`). */
  get mark(): number {
    return this.presenceRead
  }

  /** Whether a departure of `sessionId` was read after `mark` (`leftSince`). */
  leftSince(sessionId: string, mark: number): boolean {
    return (this.lastLeft.get(sessionId) ?? 0) > mark
  }

  /** A new connection registers: it was told of no earlier departure. */
  newConnection(): void {
    this.departed.clear()
  }

  /** The client's own `list` on `connection`: its first answer seeds the view (MembershipView.seed). */
  list(connection: ClientConnection): Effect.Effect<ReadonlyArray<SessionInfo>, RequestTimeout | ConnectionLost> {
    return this.listing(connection, (listed, touched) => this.view.seed(listed, touched, connection.sessionId))
  }

  /**
   * After a reconnect, once the rejoin grace is over (a session on its way back to a restarted
   * broker has registered again by then): lists the sessions and publishes what the view missed
   * while away — departures, joins, a session replaced by another process (MembershipView.ts).
   * Runs in the connection's Scope: a connection that drops first leaves it to the next one; a
   * failed list (an older broker, a dropped connection) leaves the view as it is, and says nothing.
   */
  resync(connection: ClientConnection): Effect.Effect<void> {
    return Effect.sleep(Duration.millis(this.rejoinGraceMs)).pipe(
      Effect.andThen(this.listing(connection, (listed, touched) => {
        for (const event of this.view.resync(listed, touched, connection.sessionId)) this.publish(event)
      })),
      Effect.ignore
    )
  }

  /** Publishes a presence event, read or made up by a reconciliation, after noting departures and joins. */
  private publish(event: PresenceEvent): void {
    const departed = this.departed
    const lastLeft = this.lastLeft
    this.presenceRead++
    if (event._tag === "Left") {
      departed.delete(event.sessionId)
      departed.add(event.sessionId)
      if (departed.size > DEPARTED_LIMIT) departed.delete(departed.values().next().value ?? "")
      lastLeft.delete(event.sessionId)
      lastLeft.set(event.sessionId, this.presenceRead)
      if (lastLeft.size > DEPARTED_LIMIT) lastLeft.delete(lastLeft.keys().next().value ?? "")
    } else if (event._tag === "Joined") {
      departed.delete(event.session.id)
    }
    PubSub.publishUnsafe(this.hub, event)
  }

  /**
   * A `list` on `connection` whose answer `use` applies to the membership view in the same
   * synchronous step that ends noting the real events read while it was in flight.
   */
  private listing(
    connection: ClientConnection,
    use: (listed: ReadonlyArray<SessionInfo>, touched: Touched) => void
  ): Effect.Effect<ReadonlyArray<SessionInfo>, RequestTimeout | ConnectionLost> {
    return Effect.suspend(() => {
      const touched = this.view.track()
      return connection.list(this.listTimeoutMs).pipe(
        Effect.tap((listed) =>
          Effect.sync(() => {
            use(listed, touched)
            this.view.untrack(touched)
          })
        ),
        Effect.ensuring(Effect.sync(() => this.view.untrack(touched)))
      )
    })
  }
}
