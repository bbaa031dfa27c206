/**
 * Size: about 590 lines, one concept — a session's coming and going. The
 * take-back rules (`ifFree`, `ifReleased` and its grace, a live holder in
 * another group) grew it past 400; they decide whether a `register` may
 * take an id, which is this module's own question, so they stay here. The
 * rejoin (`rejoin-v1`) added the rest: whether a held id's `register` is a
 * takeover is the same question; settling the old connection's writing is
 * the Router's (`Router.abandoned`), passed in. Whether a departed id's
 * `register` is the return of a client instance that held it
 * (`returningInstance`) is the same question again; what is known of those
 * instances is ClientInstances.ts's, owned here.
 *
 * Registration (P11–P19): `register`, `unregister`, the registration timeout
 * of connections that have not registered (P15), stable-id takeover (P16) and
 * a client's own rejoin (`rejoin-v1`: the same `instanceId` as the holding
 * connection's, whose unconfirmed and untaken mail then goes first), the
 * session cap (P18), and a session leaving. It is the only module that
 * adds sessions to or removes them from the `Registry`, and the only writer of
 * a `Peer`'s registration fields.
 *
 * Other concerns react through `RegistrationHooks` (the mailbox flushes mail
 * to a session that registers, for example), so a new concern that cares
 * about sessions coming and going is a hook, not an edit here.
 */
import { SessionHealth } from "./Health.ts"
import { SessionTraffic } from "./Traffic.ts"
import { randomUUID } from "node:crypto"
import { decodeClientFrame, isFrameDecodeError } from "../protocol/decode.ts"
import { ErrorText } from "../protocol/delivery.ts"
import {
  EPHEMERAL_V1,
  GROUPS_V1,
  negotiateFeatures,
  OBSERVE_V1,
  RECLAIM_RELEASED_V1,
  RECLAIM_V1,
  REJOIN_V1,
  RELEASE_GRACE_MS,
  SESSION_HELD,
  SESSION_NOT_RELEASED,
  SESSION_RELEASED_RECENTLY,
  STATE_EPOCH_V1
} from "../protocol/features.ts"
import type { RegisterFrame } from "../protocol/frames.ts"
import { registrationRefusal } from "../protocol/limits.ts"
import type { Queue } from "effect"
import * as Encode from "./encode.ts"
import type { Membership } from "./Membership.ts"
import type { LeftBy } from "./MailReturns.ts"
import { sendersToHold } from "./CustodyHold.ts"
import { ClientInstances, type KnownInstance, NOTHING_KNOWN } from "./ClientInstances.ts"
import type { ReadProgress } from "../transport/Connection.ts"
import { FeatureSets } from "./FeatureSets.ts"
import { type OutboundItem, type Peer, type Written } from "./Peer.ts"
import {
  encodeSessionInfo,
  fieldsFromRegistration,
  mailboxIdentity,
  type Session,
  type SessionInstance,
  sessionKey,
  sessionKeyParts,
  DEFAULT_GROUP,
  groupOf,
  groupSpaceKey,
  spaceKeyOf
} from "./Registry.ts"
import { closePeer, endTakenOver, type FrameHandlers, type RouterContext, signal } from "./RouterContext.ts"

/** What ClientInstances notes of `session`'s client instance as it stops holding its id (`noted`). */
const knownOf = (session: Session): KnownInstance => ({
  instanceId: session.peer.instanceId,
  instance: session.instance,
  mayBeBeforeStart: session.mayBeBeforeStart
})

/**
 * A concern's verdict on a registration before it is accepted: refused (the
 * client gets `registration_failed` with `refused` and the connection ends),
 * or accepted with the supervisor it is bound to (for `registered`).
 */
export type Admission =
  | { readonly refused: string }
  | { readonly supervisorSessionId: string }

/** What another concern does when sessions come and go. */
export interface RegistrationHooks {
  /**
   * Before `peer`'s registration is accepted (after the session cap): a
   * verdict, or undefined to let it on without comment.
   */
  readonly admit?: (peer: Peer, frame: RegisterFrame, features: ReadonlyArray<string>) => Admission | undefined
  /**
   * The sessions of the id `id` live in the scope `scopeKey` outside the space `spaceKey` (another
   * group), where a register's takeover reaches them too: a register with `ifFree` or `ifReleased`
   * finds the id held, and one that takes them over is marked so (its departure is not the id's last)
   * and inherits their not being short-lived, as a takeover in the same group does.
   */
  readonly liveElsewhere?: (scopeKey: string, spaceKey: string, id: string) => ReadonlyArray<Session>
  /** `session` registered (taking over `previous`, if any); its `registered` frame is already queued. */
  readonly registered?: (session: Session, previous: Session | undefined, now: number) => void
  /**
   * `session` left: by `unregister` (`unregistered`: its client said it is
   * done), or because its connection closed or was dropped.
   */
  readonly left?: (session: Session, now: number, unregistered: boolean) => void
}

/** Observer connections (`observe-v1`) a broker accepts at once; more are refused. */
export const MAX_OBSERVERS = 64

const tooManyObservers =
  `The intercom broker has ${MAX_OBSERVERS} observers connected (intercom top, intercom ui); close one and try again`

/** Why a register with `ifFree` (`reclaim-v1`) was refused. */
const sessionHeld = (id: string): string =>
  `Session ${id} is held by another live connection; registering with ifFree does not take it over`

/** Why a register with `ifReleased` (`reclaim-released-v1`) found the id free and still was refused. */
const sessionNotReleased = (id: string): string =>
  `Session ${id} was not given up on this broker (its last holder did not unregister it, and may be reconnecting); registering with ifReleased does not take it`

/** Why a register with `ifReleased` found the id given up, and too recently (`RELEASE_GRACE_MS`). */
const sessionReleasedRecently = (id: string): string =>
  `Session ${id} was given up less than ${RELEASE_GRACE_MS} ms ago (its holder may be registering it again); registering with ifReleased takes it once that long has passed`

/** `name (id) [scope]`, for the log. */
export const sessionLabel = (session: Session): string => {
  const name = session.fields.name
  const scope = session.scopeKey === "" ? "" : ` [${session.scopeKey.slice("scope:".length)}]`
  const group = session.group === DEFAULT_GROUP ? "" : ` {group ${session.group}}`
  return `${name === undefined ? session.id : `${name} (${session.id})`}${scope}${group}`
}

/** The registration concern: `register`, `unregister`, timeouts, takeover, leaving. */
export class Registration {
  private readonly ctx: RouterContext
  private readonly membership: Membership
  private readonly hooks: Array<RegistrationHooks> = []
  /** Connections not (or no longer) registered, oldest first (P15). */
  private readonly unregistered = new Set<Peer>()
  /** Every attached connection, with its read progress at the last stall check. */
  private readonly attached = new Map<Peer, ReadProgress | undefined>()
  private readonly registrationSignal: Queue.Queue<void>
  private readonly idleSignal: Queue.Queue<void>
  private readonly abandon: (peer: Peer) => ReadonlyArray<Written>
  private readonly giveBack: (items: ReadonlyArray<OutboundItem>, leftBy: (key: string) => LeftBy) => void
  /** When the last session left (undefined before any did); the idle-exit watcher measures from here (P92). */
  lastLeftAt: number | undefined = undefined
  /** Connections registered as observers (`observe-v1`). */
  private observers = 0
  /** New client instances so far (takeovers, returns by another client): the last `Session.instance` one was given. */
  private instances = 0
  /**
   * Sessions taken over from another group (still live until their connection closes): their
   * departure is remembered, but is not their id's last (`RecentSessions.lastDeparture`, `clientInstances`) — that is
   * the taker's, which may come first (it unregisters before this one's close is seen).
   */
  private readonly takenOverElsewhere = new WeakSet<Session>()
  /** The client instances that held each id since this broker started (`returningInstance`), at most `clientInstanceIds` ids. */
  private readonly clientInstances: ClientInstances
  /** The granted-extension sets connections share (`Peer.features`). */
  readonly featureSets = new FeatureSets()

  /**
   * @param abandon a connection whose client rejoined on another (`rejoin-v1`) will not be written
   *   again: its writing stops, and what its client was given and never confirmed or never got is
   *   returned, oldest first (Router.abandoned).
   * @param giveBack what a closed connection gives back goes where its session is now, a control
   *   only with its message (MailReturns.giveBack), told how each session left the connection.
   */
  constructor(
    ctx: RouterContext,
    membership: Membership,
    signals: { readonly registration: Queue.Queue<void>; readonly idle: Queue.Queue<void> },
    abandon: (peer: Peer) => ReadonlyArray<Written>,
    giveBack: (items: ReadonlyArray<OutboundItem>, leftBy: (key: string) => LeftBy) => void
  ) {
    this.ctx = ctx
    this.clientInstances = new ClientInstances(ctx.options.clientInstanceIds)
    this.membership = membership
    this.registrationSignal = signals.registration
    this.idleSignal = signals.idle
    this.abandon = abandon
    this.giveBack = giveBack
  }

  /** Adds a concern's reaction to sessions coming and going (called in order of observation). */
  observe(hooks: RegistrationHooks): void {
    this.hooks.push(hooks)
  }

  readonly frames: FrameHandlers = {
    register: { unregistered: true, handle: (peer, frame) => this.onRegister(peer, frame) },
    unregister: { handle: (peer) => this.onUnregister(peer) }
  }

  /** Connections accepted and not registered (yet, or since `unregister`). */
  get unregisteredCount(): number {
    return this.unregistered.size
  }

  /** A new connection: unregistered until it registers, within the registration timeout. */
  attach(peer: Peer): void {
    this.attached.set(peer, undefined)
    this.admitUnregistered(peer)
  }

  /**
   * The connection is gone: its session leaves, and messages it had not
   * written yet go back to the mailbox.
   */
  detach(peer: Peer, unwritten: ReadonlyArray<OutboundItem>): void {
    this.attached.delete(peer)
    this.unregistered.delete(peer)
    if (peer.state === "observing") this.observers--
    const session = peer.session
    peer.state = "closed"
    peer.session = undefined
    if (session !== undefined) this.leave(session, false)
    // To another instance, if any (its own rejoin took this connection's at its register; after an `unregister`, not
    // even its own): a control only with its message. Each session's own way of leaving: one that left by
    // `unregister` before this close (what stayed behind a base client's write in progress then) may be an earlier
    // one than the session registered here last (review revba BA2).
    this.giveBack(unwritten, (key) => peer.leftBy(key))
  }

  /**
   * The connection that has waited longest to register. Deadlines grow in
   * insertion order, so the registration watcher only ever sleeps on this one.
   */
  oldestUnregistered(): Peer | undefined {
    const first = this.unregistered.values().next()
    return first.done === true ? undefined : first.value
  }

  /** Registration timeout (P15), called by the registration watcher. */
  registrationTimedOut(peer: Peer): void {
    this.unregistered.delete(peer)
    if (peer.state !== "unregistered") return
    this.ctx.log("warning", `Dropped connection ${peer.connection.id}: no registration within the timeout`)
    closePeer(peer, "destroy")
  }

  /**
   * Called every `checkEveryMs` (Broker.ts): a connection that has begun a
   * frame and has not finished it since the previous check — a writer that
   * stalled mid-frame, or a slowloris sending a byte now and then — is
   * closed. A legitimate frame, at most 1 MiB over a local socket, takes
   * milliseconds. Only a wait in `read` counts: a sender held back by
   * backpressure is not read, and its half-read frame is not its stall.
   */
  closeStalledFrames(checkEveryMs: number): void {
    // `forEach`, not `for…of` over entries, and `readPending` before `readProgress`: an idle
    // connection costs no allocation, where an entry pair and a progress record each per check
    // were 640 KB of garbage every 2.5 s at 10k idle sessions (docs/performance.md, "The stall
    // check at 10k idle sessions").
    this.attached.forEach((previous, peer) => {
      const connection = peer.connection
      // Not in mid-frame at the last check nor now: nothing stalled, and nothing to keep.
      if (previous === undefined && connection.readPending() === 0) return
      const progress = connection.readProgress()
      const stalled = previous !== undefined && progress.frames === previous.frames &&
        progress.pending > 0 && previous.pending > 0 && progress.reading && previous.reading
      if (stalled) {
        this.ctx.log(
          "warning",
          `Dropped connection ${connection.id}: a frame begun ${checkEveryMs / 1000} s ago is still incomplete (${progress.pending} bytes)`
        )
        closePeer(peer, "destroy")
      }
      // Kept only for a connection in the middle of a frame (the only kind that can stall): an
      // idle connection holds no progress record between checks.
      this.attached.set(peer, progress.pending > 0 && progress.reading ? progress : undefined)
    })
  }

  /** The id's sessions live in other groups of the scope (the concerns' `liveElsewhere`). */
  private liveElsewhere(scopeKey: string, spaceKey: string, id: string): ReadonlyArray<Session> {
    let found: ReadonlyArray<Session> = []
    for (const hooks of this.hooks) {
      const live = hooks.liveElsewhere?.(scopeKey, spaceKey, id)
      if (live !== undefined && live.length > 0) found = found.length === 0 ? live : [...found, ...live]
    }
    return found
  }

  private admitUnregistered(peer: Peer): void {
    this.unregistered.delete(peer)
    if (this.unregistered.size === 0) signal(this.registrationSignal)
    this.unregistered.add(peer)
  }

  private onRegister(peer: Peer, raw: unknown): void {
    if (peer.state === "registered") return this.ctx.protocolError(peer, "second register on a registered connection")
    const frame = decodeClientFrame.register(raw)
    if (isFrameDecodeError(frame)) return this.ctx.protocolError(peer, frame.message)
    // An over-long identity, or an id holding a control character, is told why (a strict client reports the error text), then closed.
    const overLimit = registrationRefusal(frame)
    if (overLimit !== undefined) return this.ctx.refuse(peer, overLimit)
    const { registry, options, output } = this.ctx
    const features = negotiateFeatures(frame.features, this.ctx.withheldFeatures)
    if (frame.observer === true && features.includes(OBSERVE_V1)) return this.admitObserver(peer, features)
    const scopeKey = spaceKeyOf(frame.scopeId)
    // A group only for a client that asked for groups (C-GRP-1); a base client is in the default group.
    const group = features.includes(GROUPS_V1) ? groupOf(frame.group) : DEFAULT_GROUP
    const spaceKey = groupSpaceKey(scopeKey, group)
    const id = frame.sessionId ?? randomUUID()
    // Looked up without creating the scope: a refused registration must not leave one behind.
    const previous = registry.spaces.get(spaceKey)?.sessions.get(id)
    // `rejoin-v1`: the client instance that holds the id registers it again; it left the old connection.
    const instanceId = features.includes(REJOIN_V1) ? frame.instanceId : undefined
    const rejoin = instanceId !== undefined && previous?.peer.instanceId === instanceId
    // `reclaim-v1`'s `ifFree`: a client taken over asks for its id back, and gets it only once nobody
    // holds it (never from a live holder: the two would take it from each other for ever).
    // `reclaim-released-v1`'s `ifReleased` asks that, and that the id's last holder gave it up here
    // (`unregister`): a holder whose connection closed, or that this broker never saw (it restarted),
    // may be reconnecting, and the two would take the id from each other on every restart.
    // Held is live anywhere in the scope: a register takes the id over in another group too (Groups.ts).
    const ifReleased = frame.ifReleased === true && features.includes(RECLAIM_RELEASED_V1)
    const elsewhere = this.liveElsewhere(scopeKey, spaceKey, id)
    if (
      (ifReleased || (frame.ifFree === true && features.includes(RECLAIM_V1))) &&
      (previous !== undefined || elsewhere.length > 0)
    ) {
      output.enqueue(peer, Encode.registrationFailedFrame(sessionHeld(id), SESSION_HELD))
      return closePeer(peer, "end")
    }
    if (ifReleased) {
      // Its last departure from the scope, in whichever group: a takeover reaches across groups, and so
      // does the taker's giving the id up.
      const departure = registry.recent.lastDeparture(scopeKey, id)
      if (departure?.recent.released !== true) {
        output.enqueue(peer, Encode.registrationFailedFrame(sessionNotReleased(id), SESSION_NOT_RELEASED))
        return closePeer(peer, "end")
      }
      // Not at once: a holder replacing its client (pi's /reload) unregisters, then registers the id again.
      if (this.ctx.now() - departure.at < RELEASE_GRACE_MS) {
        output.enqueue(peer, Encode.registrationFailedFrame(sessionReleasedRecently(id), SESSION_RELEASED_RECENTLY))
        return closePeer(peer, "end")
      }
    }
    if (previous === undefined && registry.live >= options.maxSessions) {
      this.ctx.log("warning", `Refused a registration: ${options.maxSessions} sessions are live (--max-sessions)`)
      output.enqueue(peer, Encode.errorFrame(ErrorText.tooManySessions))
      return closePeer(peer, "end")
    }
    let supervisorSessionId: string | undefined
    for (const hooks of this.hooks) {
      const admission = hooks.admit?.(peer, frame, features)
      if (admission === undefined) continue
      if ("refused" in admission) {
        this.ctx.log("warning", `Refused a registration: ${admission.refused}`)
        output.enqueue(peer, Encode.registrationFailedFrame(admission.refused))
        return closePeer(peer, "end")
      }
      supervisorSessionId = admission.supervisorSessionId
    }
    const space = registry.space(spaceKey)
    const now = this.ctx.now()
    const fields = fieldsFromRegistration(frame.session)
    const endpointEpoch = randomUUID()
    // A registration that takes a live session over (P16), in its group or another, is that session:
    // short-lived only if it was (one taken over already counts only when no other is live).
    const displaced = previous ?? elsewhere.find((other) => !this.takenOverElsewhere.has(other)) ?? elsewhere[0]
    const ephemeral = frame.ephemeral === true && features.includes(EPHEMERAL_V1) && (displaced?.ephemeral ?? true)
    const session: Session = {
      key: sessionKey(space.key, id),
      id,
      scopeKey,
      group,
      space,
      peer,
      endpointEpoch,
      presentSince: 0, // Membership.joined sets it
      order: previous?.order ?? registry.nextOrder(),
      // The client's own rejoin (or its move to another group: the same instanceId) is its holder's
      // instance; a takeover by another client, in this group or another (`displaced`), a new one — unless
      // the taker is a client that held the id before and takes it back (`takenBack`); with nobody live,
      // the departed holder's return or another client, where it is known (`returningInstance`).
      ...(displaced === undefined
        ? this.returningInstance(scopeKey, id, instanceId)
        : instanceId !== undefined && displaced.peer.instanceId === instanceId
        ? { instance: displaced.instance, mayBeBeforeStart: displaced.mayBeBeforeStart }
        : this.takenBack(scopeKey, id, instanceId) ?? { instance: ++this.instances, mayBeBeforeStart: false }),
      fields,
      infoJson: encodeSessionInfo(id, endpointEpoch, peer.connection.trustedLocal, fields),
      realCwd: undefined,
      identity: undefined, // below: `mailboxIdentity`
      ephemeral,
      // A takeover is that session: its messages sent so far end with it.
      senderEnd: ephemeral ? displaced?.senderEnd ?? { ended: false } : undefined,
      lastBroadcastAt: now,
      health: new SessionHealth(now),
      traffic: new SessionTraffic(now)
    }
    // Only a session with an explicit name has one: only it pays for its cwd's realpath.
    session.identity = mailboxIdentity(session)
    // The client's own rejoin (`rejoin-v1`): what the old connection was given and its client never
    // confirmed, or never got, goes to the new one first (below), ahead of the old outbox's mail.
    let unread: ReadonlyArray<Written> = []
    if (previous !== undefined) {
      // Stable-id takeover (P16): the old endpoint is ended (told first where granted: endTakenOver), no
      // session_left. Mail in that outbox, or parked with its reader for it, no longer belongs there (its
      // session is gone): it goes to the new holder once that is registered, below (OutputEnd.handOver); mail forced at the
      // old connection later is taken back at once (Output.forceEnqueue), anything else queued for it as it is written
      // (OutputWrites.takeForWrite).
      previous.peer.session = undefined
      // Its client left it: not told, not flushed; its writing is settled now, not at its close, and it is
      // destroyed once this session is registered (below). Another client's takeover ends it then too.
      if (rejoin) unread = this.abandon(previous.peer)
    }
    // Another client took the id over: its holder, in this group or another, stopped holding it
    // (`returningInstance`; a live session is noted only so). Not one taken over already in another group,
    // marked below: its taker held the id since (and is noted here, or was as it left).
    if (previous !== undefined) this.takenOverBy(previous, session)
    for (const other of elsewhere) this.takenOverBy(other, session)
    // Taken over in another group (Groups.ts ends them): they leave when their connection closes.
    for (const other of elsewhere) this.takenOverElsewhere.add(other)
    registry.add(session, previous)
    this.unregistered.delete(peer)
    peer.state = "registered"
    peer.session = session
    peer.registeredHere(session.key)
    peer.features = this.featureSets.of(features)
    peer.instanceId = instanceId
    // Before anything of the old connection's is taken back to this one: the returns it withholds move here.
    if (previous !== undefined) this.membership.holds.takenOver(previous.peer, peer)
    // Before the old connection's mail is handed over: another instance's takeover holds its senders' mail
    // behind what the old connection may give back at its close (CustodyHold.ts); a hold it had is carried.
    if (previous !== undefined) {
      output.holds.takeOverHold(previous.peer, peer, previous.key, rejoin ? undefined : sendersToHold(previous.peer, previous.key))
    } else {
      // Registered anew while a hold for the session still waits (its holder closed or left first): the hold
      // is the session's, so this connection takes it, ahead of the mailbox's flush.
      output.holds.adoptHold(peer, session.key)
    }
    // `state-epoch-v1` only to a client that asked for it: a base client's strict validator never sees the field.
    const stateEpoch = features.includes(STATE_EPOCH_V1) ? this.ctx.stateEpoch : undefined
    output.enqueue(peer, Encode.registeredFrame(id, features, supervisorSessionId, stateEpoch))
    // What the old connection had not taken to write goes to this one now, right after `registered`:
    // before the mailbox's flush and any newer mail (a sender's order holds across the takeover). At a
    // rejoin, what it had taken and its client never confirmed or never got goes first: it is older.
    for (const item of unread) output.undeliverable(item)
    // A control about a message this other instance never got from here stays behind (OutputEnd.handOver).
    if (previous !== undefined) output.end.handOver(previous.peer, rejoin ? undefined : peer)
    // Only now: its close may run at once (nothing left to wait for: an idle writer drains synchronously),
    // and what it gives back then (its custody, output queued for it later, what its senders were held back
    // on) must find this connection registered, not go to the mailbox behind the flush (or out of it, past
    // the mailbox's bounds). A takeover's `taken_over` goes after what the old outbox still writes.
    if (rejoin) closePeer(previous.peer, "destroy")
    else if (previous !== undefined) endTakenOver(output, previous.peer, previous.key, id, frame.session.pid)
    this.membership.joined(session)
    this.ctx.log(
      "info",
      `${previous === undefined ? "session joined" : rejoin ? "session rejoined" : "session re-registered"}: ${sessionLabel(session)}`
    )
    for (const hooks of this.hooks) hooks.registered?.(session, previous, now)
  }

  /**
   * The client instance of a registration of the id `id` by `instanceId` with no session of it live
   * in the scope `scopeKey`: one that held the id since this broker started, continued, when it
   * registered with the same `instanceId` (the client's reconnect, or its register after its own
   * `unregister`, in any group), or when both gave none and that one registered with nothing known;
   * otherwise a new one (another client, which was given none of their messages) — one that may be
   * the client from before the start when nothing is known of the id. See ClientInstances.ts.
   */
  private returningInstance(
    scopeKey: string,
    id: string,
    instanceId: string | undefined
  ): { readonly instance: SessionInstance; readonly mayBeBeforeStart: boolean } {
    const known = this.clientInstances.returning(scopeKey, id, instanceId)
    if (known === NOTHING_KNOWN) return { instance: ++this.instances, mayBeBeforeStart: true }
    return known ?? { instance: ++this.instances, mayBeBeforeStart: false }
  }

  /**
   * The client instance of a takeover of `id` by `instanceId` from another client: one that held the
   * id before (ClientInstances) and takes it back, continued — it holds the messages it was given
   * then (review revg G2); undefined for any other taker (a new instance).
   */
  private takenBack(scopeKey: string, id: string, instanceId: string | undefined): KnownInstance | undefined {
    if (instanceId === undefined) return undefined
    const known = this.clientInstances.returning(scopeKey, id, instanceId)
    return known === NOTHING_KNOWN ? undefined : known
  }

  /**
   * Whether the client instance `instance`, which held the session `key` (its id in its scope), can register as
   * itself again, so that a control kept for it (KeptControls.ts) may still be collected: one known here
   * (ClientInstances, noted as it was taken over or left) that named itself (`rejoin-v1`'s `instanceId`), which
   * its register with that `instanceId` continues (`takenBack`, `returningInstance`); or, with the session
   * away, a base client's instance that is the id's last holder and registered with nothing known of the id
   * (`mayBeBeforeStart`), which the next registration with no `instanceId` continues. Any other base client's
   * instance never can: a registration with none continues only such a last holder, and a takeover by a client
   * with none is a new instance — with another instance holding the id (review revba BA1), and also with the
   * session away when it registered after an instance the broker knew of the id, such as an `instanceId`
   * holder or a base takeover (review revbe BE2). With the id live in another group of the scope (a takeover
   * reaches across groups), only that holder's own instance can: its move back (review revbk BK1); the one it
   * took the id from may be the last known holder, yet no registration continues it (review revbk BK2). Nor
   * can one the bounds let go. With the session still
   * registered to `instance` itself (a connection on its way out) the answer is yes: it may be noted as the
   * last holder as it leaves.
   */
  mayReturn(key: string, instance: SessionInstance): boolean {
    const { scopeKey, spaceKey, id } = sessionKeyParts(key)
    const known = this.clientInstances.of(scopeKey, id)
    if (known.some((one) => one.instance === instance && one.instanceId !== undefined)) return true
    const holder = this.ctx.registry.byKey.get(key)
    if (holder !== undefined) return holder.instance === instance
    // The id held in another group of the scope (a takeover reaches across groups): that holder's own
    // instance can come back here as itself (its move, review revbk BK1); no other can — the holder is
    // neither noted as it moved nor as it leaves, so `known[0]` may be the very instance it took the id from
    // (review revbk BK2). One taken over there already holds the id for no one.
    const elsewhere = this.liveElsewhere(scopeKey, spaceKey, id).filter((other) => !this.takenOverElsewhere.has(other))
    if (elsewhere.length > 0) return elsewhere.some((other) => other.instance === instance)
    const last = known[0]
    return last !== undefined && last.instance === instance && last.instanceId === undefined && last.mayBeBeforeStart
  }

  /** Notes `holder`'s client instance as it stops holding its id, taken over by `taker` (not its own rejoin). */
  private takenOverBy(holder: Session, taker: Session): void {
    if (holder.instance === taker.instance || this.takenOverElsewhere.has(holder)) return
    this.clientInstances.noted(holder.scopeKey, holder.id, knownOf(holder))
  }

  /**
   * An observer (`observe-v1`): registered, but not as a session — nothing
   * is added to the registry, nobody is told, and only the frames of the live
   * view are accepted from it (Router.ts). At most MAX_OBSERVERS at once.
   */
  private admitObserver(peer: Peer, features: ReadonlyArray<string>): void {
    const output = this.ctx.output
    if (this.observers >= MAX_OBSERVERS) {
      this.ctx.log("warning", `Refused an observer: ${MAX_OBSERVERS} observers are connected`)
      output.enqueue(peer, Encode.registrationFailedFrame(tooManyObservers))
      return closePeer(peer, "end")
    }
    this.observers++
    this.unregistered.delete(peer)
    peer.state = "observing"
    peer.features = this.featureSets.of(features)
    output.enqueue(peer, Encode.registeredFrame(`observer-${peer.connection.id}`, features))
  }

  private onUnregister(peer: Peer): void {
    const session = peer.session
    peer.session = undefined
    if (session !== undefined) {
      peer.leftByUnregister(session.key)
      this.leave(session, true)
    }
    peer.state = "unregistered"
    peer.unregisteredSince = this.ctx.now()
    this.admitUnregistered(peer)
  }

  private leave(session: Session, unregistered: boolean): void {
    if (!this.ctx.registry.remove(session)) return
    const now = this.ctx.now()
    const space = session.space
    // Its id's last holder, short-lived or not: a registration after it is told from it (`returningInstance`).
    // Not one taken over from another group: its taker, which may have left first, held the id last.
    if (!this.takenOverElsewhere.has(session)) {
      this.clientInstances.noted(session.scopeKey, session.id, knownOf(session))
    }
    // P34, except for a short-lived session (`ephemeral-v1`): nobody can send to it once it ended.
    if (!session.ephemeral) {
      this.ctx.registry.recent.remember({
        key: session.key,
        id: session.id,
        spaceKey: space.key,
        scopeKey: session.scopeKey,
        name: session.fields.name,
        infoJson: session.infoJson,
        identity: session.identity,
        released: unregistered
      }, now, !this.takenOverElsewhere.has(session))
    }
    this.ctx.log("info", `session left: ${sessionLabel(session)}`)
    for (const hooks of this.hooks) hooks.left?.(session, now, unregistered)
    // After the hooks: what they deliver for it (its staged messages) is queued, or parked and waited for.
    this.membership.left(session, unregistered)
    this.ctx.registry.releaseIfEmpty(space)
    if (this.ctx.registry.live === 0) {
      this.lastLeftAt = now
      signal(this.idleSignal)
    }
  }
}
