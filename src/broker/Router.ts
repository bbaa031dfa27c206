/**
 * The router: every client frame's effect on broker state, as plain
 * synchronous code (hot-path.md). It owns the registry, replay records, ask
 * edges, receipt routes and the mailbox; connection actors call into it
 * between two reads and carry out the output it queues.
 *
 * Output is queued, never written here: `enqueue` offers to the recipient's
 * bounded outbox and, once any offer of the current batch finds an outbox
 * full, parks that and every later item of the batch (order is kept). The
 * calling actor then waits for the parked items to fit before it reads again —
 * backpressure instead of loss.
 */
import { Deferred, Effect, Queue } from "effect"
import { randomUUID } from "node:crypto"
import { MAX_FRAME_BYTES } from "../protocol/constants.ts"
import {
  decodeClientFrame,
  decodeMessage,
  type FrameDecodeError,
  isFrameDecodeError,
  parseFrameText
} from "../protocol/decode.ts"
import { DeliveryCode, ErrorText, isRetryable, Reason } from "../protocol/delivery.ts"
import { negotiateFeatures } from "../protocol/features.ts"
import { frameBytes } from "../protocol/framing.ts"
import { AskEdges } from "./AskEdges.ts"
import { DeliveryRecords, fingerprintOf, type Outcome, recordKeyOf } from "./DeliveryRecords.ts"
import * as Encode from "./encode.ts"
import { Mailbox } from "./Mailbox.ts"
import type { ResolvedCoreOptions } from "./options.ts"
import {
  type CloseMode,
  END_OF_OUTPUT,
  FEED_TICK,
  type Mail,
  type OutboundItem,
  type OutboundMessage,
  type Peer
} from "./Peer.ts"
import { AgedMap } from "./AgedMap.ts"
import {
  encodeSessionInfo,
  fieldsFromRegistration,
  identityOf,
  normaliseCwd,
  type RecentSession,
  ScopeSpace,
  type Session,
  sessionKey,
  spaceKeyOf
} from "./Registry.ts"

const HOUR = 3_600_000
const DAY = 24 * HOUR
/** Presence re-broadcast heartbeat (P32). */
const PRESENCE_HEARTBEAT_MS = 1000

export interface BrokerEvent {
  readonly level: "info" | "warning"
  readonly message: string
}

const messageKeyOf = (spaceKey: string, messageId: string) => `${spaceKey}\u0000${messageId}`

/** Receipt route (P70–P72): who may hear about receipts for a delivered message, and who may send them. */
interface ReceiptRoute {
  readonly senderKey: string
  readonly senderIncarnation: number
  readonly receiverKey: string
  readonly receiverIncarnation: number
}

const sessionLabel = (session: Session): string => {
  const name = session.fields.name
  const scope = session.space.key === "" ? "" : ` [${session.space.key.slice("scope:".length)}]`
  return `${name === undefined ? session.id : `${name} (${session.id})`}${scope}`
}

/** A frame that fits the 1 MiB limit, checked cheaply when it obviously does. */
const fitsFrame = (frame: string): boolean =>
  frame.length * 3 <= MAX_FRAME_BYTES || frameBytes(frame) <= MAX_FRAME_BYTES

export class Router {
  private readonly options: ResolvedCoreOptions
  private readonly now: () => number
  private readonly spaces = new Map<string, ScopeSpace>()
  private readonly byKey = new Map<string, Session>()
  /** Connections not (or no longer) registered, oldest first (P15). */
  private readonly unregistered = new Set<Peer>()
  private readonly records = new DeliveryRecords(4096, HOUR)
  private readonly edges: AskEdges
  /** Lost-mail notices for senders that were away, by session key: sent when they register again. */
  private readonly owedNotices = new AgedMap<string, Array<string>>(4096)
  /** Receipt routes by message key: an hour, at most 65,536; they lapse when either side leaves. */
  private readonly routes = new AgedMap<string, ReceiptRoute>(65_536)
  private incarnations = 0
  private readonly mailbox: Mailbox
  private registrations = 0
  private live = 0
  /** Spaces whose membership changed since the notifier last ran. */
  private readonly dirty = new Set<ScopeSpace>()
  /** Output of the batch being handled that did not fit its outbox yet. */
  private parked: Array<readonly [Peer, OutboundItem]> = []
  private readonly touched = new Set<Peer>()
  /** Signals for the broker's fibers. */
  private readonly feedSignal: Queue.Queue<void>
  private readonly idleSignal: Queue.Queue<void>
  private readonly registrationSignal: Queue.Queue<void>
  readonly events: Queue.Queue<BrokerEvent>
  /** When the last session left (undefined before any did); the idle-exit watcher measures from here (P92). */
  lastLeftAt: number | undefined = undefined

  constructor(
    options: ResolvedCoreOptions,
    now: () => number,
    signals: {
      readonly feed: Queue.Queue<void>
      readonly idle: Queue.Queue<void>
      readonly registration: Queue.Queue<void>
      readonly events: Queue.Queue<BrokerEvent>
    }
  ) {
    this.options = options
    this.now = now
    this.edges = new AskEdges(options.askTimeoutMs)
    this.mailbox = new Mailbox(options.mailboxCapacity, DAY)
    this.feedSignal = signals.feed
    this.idleSignal = signals.idle
    this.registrationSignal = signals.registration
    this.events = signals.events
  }

  get sessionCount(): number {
    return this.live
  }

  currentTime(): number {
    return this.now()
  }

  // -------------------------------------------------------------------------
  // Connection lifecycle (called by the connection actor)
  // -------------------------------------------------------------------------

  attach(peer: Peer): void {
    this.admitUnregistered(peer)
  }

  /** The connection is gone: its session leaves, and mail it had not been written yet goes back to the mailbox. */
  detach(peer: Peer, unwritten: ReadonlyArray<OutboundItem>): void {
    this.unregistered.delete(peer)
    const session = peer.session
    peer.state = "closed"
    peer.session = undefined
    if (session !== undefined) this.leave(session)
    for (const item of unwritten) {
      if (typeof item === "object") this.requeue(item)
    }
  }

  /** Asks a connection to close; the first request decides how (`end` flushes output first). */
  close(peer: Peer, mode: CloseMode): void {
    if (Deferred.doneUnsafe(peer.closing, Effect.succeed(mode))) peer.interruptReader()
  }

  // -------------------------------------------------------------------------
  // Output
  // -------------------------------------------------------------------------

  private enqueue(peer: Peer, item: OutboundItem): void {
    if (peer.state === "closed") {
      if (typeof item === "object") this.requeue(item)
      return
    }
    if (this.parked.length > 0 || !Queue.offerUnsafe(peer.outbox, item)) {
      this.parked.push([peer, item])
    } else {
      this.touched.add(peer)
    }
  }

  /** Resumes the writers that got output in this batch now rather than on a later tick (hot-path.md B7). */
  wakeTouched(): void {
    for (const peer of this.touched) Queue.flushUnsafe(peer.outbox)
    this.touched.clear()
  }

  /**
   * Moves this batch's parked output to the reader's own list; true when there
   * is some, and the reader must offer it (waiting for room) before reading on.
   */
  parkFor(reader: Peer): boolean {
    if (this.parked.length === 0) return false
    reader.parked = reader.parked.length === 0 ? this.parked : [...reader.parked, ...this.parked]
    this.parked = []
    return true
  }

  /** A parked item could not be offered because its recipient closed meanwhile. */
  undeliverable(item: OutboundItem): void {
    if (typeof item === "object") this.requeue(item)
  }

  /**
   * The reader closed while its output was still parked: what was accepted is
   * delivered anyway, past the recipients' capacity, never dropped.
   */
  forceParked(reader: Peer): void {
    for (const [recipient, item] of reader.parked) {
      if (recipient === reader || item === FEED_TICK || item === END_OF_OUTPUT) continue
      if (recipient.state === "closed") {
        this.undeliverable(item)
        continue
      }
      this.forceEnqueue(recipient, item)
    }
    reader.parked = []
  }

  /** Queues `item` for `recipient` even past its outbox's capacity (outside any reader's batch). */
  private forceEnqueue(recipient: Peer, item: OutboundItem): void {
    if (recipient.overflow === undefined && Queue.offerUnsafe(recipient.outbox, item)) {
      Queue.flushUnsafe(recipient.outbox)
      return
    }
    if (recipient.overflow === undefined) recipient.overflow = []
    recipient.overflow.push(item)
    // Wake its writer; a full outbox means the writer is busy and will look anyway.
    if (Queue.offerUnsafe(recipient.outbox, FEED_TICK)) Queue.flushUnsafe(recipient.outbox)
  }

  /** Appends the membership changes `peer` has not seen (MembershipFeed). */
  collectFeed(peer: Peer, out: Array<string>): void {
    const session = peer.session
    if (session === undefined) return
    if (peer.owedDepartures !== undefined) {
      for (const id of peer.owedDepartures) out.push(Encode.sessionLeftFrame(id))
      peer.owedDepartures = undefined
    }
    peer.feedCursor = session.space.feed.collect(peer.feedCursor, session.id, out)
  }

  private markDirty(space: ScopeSpace): void {
    if (this.dirty.size === 0) Queue.offerUnsafe(this.feedSignal, undefined)
    this.dirty.add(space)
  }

  /** Wakes the writers of every session in a changed space, once per batch of changes. */
  notifyMembershipChanges(): void {
    for (const space of this.dirty) {
      for (const session of space.sessions.values()) {
        const peer = session.peer
        if (peer.feedPending || peer.isClosing) continue
        if (Queue.offerUnsafe(peer.outbox, FEED_TICK)) {
          peer.feedPending = true
          Queue.flushUnsafe(peer.outbox)
        }
      }
      if (space.feed.departedCount > 64 + space.sessions.size) this.compactFeed(space)
    }
    this.dirty.clear()
  }

  /**
   * Keeps a feed's departed entries bounded. An entry dropped before a lagging
   * recipient saw it becomes a departure owed to that recipient, if it had
   * seen the session join: it still gets its `session_left`.
   */
  private compactFeed(space: ScopeSpace): void {
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

  private log(level: BrokerEvent["level"], message: string): void {
    Queue.offerUnsafe(this.events, { level, message })
  }

  // -------------------------------------------------------------------------
  // Frames
  // -------------------------------------------------------------------------

  /** Handles a batch of frames from one connection, stopping if it gets closed. */
  handleBatch(peer: Peer, frames: ReadonlyArray<string>): void {
    for (let i = 0; i < frames.length && !peer.isClosing; i++) this.handleFrame(peer, frames[i]!)
  }

  handleFrame(peer: Peer, text: string): void {
    const frame = parseFrameText(text)
    if (isFrameDecodeError(frame)) return this.protocolError(peer, frame)
    const type = frame.type
    if (type === "send") return this.onSend(peer, frame)
    if (type === "health") return this.onHealth(peer, frame)
    if (type === "register") return this.onRegister(peer, frame)
    if (peer.state !== "registered") {
      return this.protocolError(peer, `"${type}" frame before registration`)
    }
    switch (type) {
      case "list":
        return this.onList(peer, frame)
      case "presence":
        return this.onPresence(peer, frame)
      case "unregister":
        return this.onUnregister(peer)
      case "cancel_ask":
        return this.onCancelAsk(peer, frame)
      case "cancel_message":
        return this.onCancelMessage(peer, frame)
      case "message_receipt":
        return this.onReceipt(peer, frame)
      default:
        return this.protocolError(peer, `unknown frame type "${type}"`)
    }
  }

  /** P03: the offending connection is destroyed without a reply; others are untouched. */
  private protocolError(peer: Peer, error: FrameDecodeError | string): void {
    this.reportProtocolError(peer, typeof error === "string" ? error : error.message)
  }

  reportProtocolError(peer: Peer, detail: string): void {
    this.log("warning", `Socket error: connection ${peer.connection.id} closed: ${detail}`)
    this.close(peer, "destroy")
  }

  private onHealth(peer: Peer, raw: unknown): void {
    const frame = decodeClientFrame.health(raw)
    if (isFrameDecodeError(frame)) return this.protocolError(peer, frame)
    this.enqueue(peer, Encode.healthOkFrame(frame.requestId))
  }

  // --- registration (P11–P19) ----------------------------------------------

  private onRegister(peer: Peer, raw: unknown): void {
    if (peer.state === "registered") return this.protocolError(peer, "second register on a registered connection")
    const frame = decodeClientFrame.register(raw)
    if (isFrameDecodeError(frame)) return this.protocolError(peer, frame)
    const spaceKey = spaceKeyOf(frame.scopeId)
    let space = this.spaces.get(spaceKey)
    if (space === undefined) this.spaces.set(spaceKey, space = new ScopeSpace(spaceKey))
    const id = frame.sessionId ?? randomUUID()
    const previous = space.sessions.get(id)
    if (previous === undefined && this.live >= this.options.maxSessions) {
      this.log("warning", `Refused a registration: ${this.options.maxSessions} sessions are live (--max-sessions)`)
      this.enqueue(peer, Encode.errorFrame(ErrorText.tooManySessions))
      return this.close(peer, "end")
    }
    const now = this.now()
    const fields = fieldsFromRegistration(frame.session)
    const realCwd = normaliseCwd(fields.cwd)
    const endpointEpoch = randomUUID()
    const session: Session = {
      key: sessionKey(spaceKey, id),
      id,
      space,
      peer,
      endpointEpoch,
      order: previous?.order ?? ++this.registrations,
      fields,
      infoJson: encodeSessionInfo(id, endpointEpoch, peer.connection.trustedLocal, fields),
      realCwd,
      identity: identityOf(spaceKey, fields, realCwd),
      lastBroadcastAt: now,
      incarnation: previous?.incarnation ?? ++this.incarnations
    }
    if (previous !== undefined) {
      // Stable-id takeover (P16): the old endpoint is ended quietly, no session_left.
      space.unindexName(previous)
      previous.peer.session = undefined
      this.close(previous.peer, "end")
    } else {
      this.live++
    }
    space.sessions.set(id, session)
    space.indexName(session)
    space.recent.delete(id)
    this.byKey.set(session.key, session)
    this.unregistered.delete(peer)
    peer.state = "registered"
    peer.session = session
    peer.everRegistered = true
    const features = negotiateFeatures(frame.features)
    peer.features = new Set(features)
    this.enqueue(peer, Encode.registeredFrame(id, features))
    peer.feedCursor = space.feed.seq
    space.feed.joined(id, session.infoJson)
    this.markDirty(space)
    this.log("info", `${previous === undefined ? "session joined" : "session re-registered"}: ${sessionLabel(session)}`)
    const owed = this.owedNotices.delete(session.key)
    if (owed !== undefined) for (const notice of owed) this.enqueue(peer, notice)
    this.flushMailbox(session, now)
  }

  private onUnregister(peer: Peer): void {
    const session = peer.session
    peer.session = undefined
    if (session !== undefined) this.leave(session)
    peer.state = "unregistered"
    peer.unregisteredSince = this.now()
    this.admitUnregistered(peer)
  }

  private admitUnregistered(peer: Peer): void {
    this.unregistered.delete(peer)
    if (this.unregistered.size === 0) Queue.offerUnsafe(this.registrationSignal, undefined)
    this.unregistered.add(peer)
    while (this.unregistered.size > this.options.maxUnregistered) {
      const oldest = this.unregistered.values().next()
      if (oldest.done === true) break
      this.unregistered.delete(oldest.value)
      this.log("warning", `Dropped connection ${oldest.value.connection.id}: too many unregistered connections`)
      this.close(oldest.value, "destroy")
    }
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
    this.log("warning", `Dropped connection ${peer.connection.id}: no registration within the timeout`)
    this.close(peer, "destroy")
  }

  private leave(session: Session): void {
    const space = session.space
    if (space.sessions.get(session.id) !== session) return
    const now = this.now()
    space.sessions.delete(session.id)
    space.unindexName(session)
    this.byKey.delete(session.key)
    this.live--
    space.recent.delete(session.id)
    space.recent.set(session.id, {
      key: session.key,
      id: session.id,
      name: session.fields.name,
      infoJson: session.infoJson,
      identity: session.identity
    }, now)
    space.recent.expire(now - DAY)
    space.feed.left(session.id)
    this.markDirty(space)
    this.log("info", `session left: ${sessionLabel(session)}`)
    if (this.live === 0) {
      this.lastLeftAt = now
      Queue.offerUnsafe(this.idleSignal, undefined)
    }
  }

  // --- discovery (P31, P32) -------------------------------------------------

  private onList(peer: Peer, raw: unknown): void {
    const frame = decodeClientFrame.list(raw)
    if (isFrameDecodeError(frame)) return this.protocolError(peer, frame)
    const session = peer.session
    if (session === undefined) return this.protocolError(peer, "list from a connection that no longer owns its session")
    // A `sessions` frame must fit 1 MiB; past that the list is cut and the cut reported.
    let budget = MAX_FRAME_BYTES - Encode.sessionsFrameOverhead(frame.requestId)
    const infos: Array<string> = []
    for (const other of session.space.sessions.values()) {
      const bytes = other.infoJson.length * 3 <= 1024 ? other.infoJson.length : frameBytes(other.infoJson)
      budget -= bytes + 1
      if (budget < 0) break
      infos.push(other.infoJson)
    }
    if (infos.length < session.space.sessions.size) {
      this.log(
        "warning",
        `list for ${session.id}: ${session.space.sessions.size} sessions do not fit one 1 MiB frame; sent the first ${infos.length}`
      )
    }
    this.enqueue(peer, Encode.sessionsFrame(frame.requestId, infos))
  }

  private onPresence(peer: Peer, raw: unknown): void {
    const frame = decodeClientFrame.presence(raw)
    if (isFrameDecodeError(frame)) return this.protocolError(peer, frame)
    const session = peer.session
    if (session === undefined) return // from a replaced connection: ignored (P16)
    const fields = session.fields
    let changed = false
    let renamed = false
    if (frame.name !== undefined && frame.name !== fields.name) {
      session.space.unindexName(session)
      fields.name = frame.name
      session.space.indexName(session)
      changed = renamed = true
    }
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
    if (renamed) session.identity = identityOf(session.space.key, fields, session.realCwd)
    const now = this.now()
    fields.lastActivity = now
    session.infoJson = encodeSessionInfo(session.id, session.endpointEpoch, peer.connection.trustedLocal, fields)
    if (changed || now - session.lastBroadcastAt >= PRESENCE_HEARTBEAT_MS) {
      session.lastBroadcastAt = now
      session.space.feed.updated(session.id, session.infoJson)
      this.markDirty(session.space)
    }
  }

  // --- send (P40–P50, P62, P63, P72) ---------------------------------------

  private fail(peer: Peer, messageId: string, code: DeliveryCode, reason: string): void {
    this.enqueue(peer, Encode.deliveryFailedFrame(messageId, code, reason, isRetryable(code)))
  }

  private answer(peer: Peer, messageId: string, outcome: Outcome): void {
    if (outcome.ok) this.enqueue(peer, Encode.deliveredFrame(messageId, outcome.delivery))
    else this.enqueue(peer, Encode.deliveryFailedFrame(messageId, outcome.code, outcome.reason, outcome.retryable))
  }

  private failAndRecord(
    peer: Peer,
    messageId: string,
    recordKey: string,
    fingerprint: string,
    code: DeliveryCode,
    reason: string
  ): void {
    const outcome: Outcome = { ok: false, code, reason, retryable: isRetryable(code) }
    this.records.set(recordKey, fingerprint, outcome, this.now())
    this.answer(peer, messageId, outcome)
  }

  /** P46: answers a retried send from its record; false when it must be delivered (again). */
  private replayed(peer: Peer, recordKey: string, fingerprint: string, messageId: string, now: number): boolean {
    const record = this.records.get(recordKey, now)
    if (record === undefined) return false
    if (record.fingerprint !== fingerprint) {
      this.fail(peer, messageId, DeliveryCode.MessageIdReuse, Reason.messageIdReuse)
      return true
    }
    if (!record.outcome.ok && record.outcome.retryable) return false
    this.answer(peer, messageId, record.outcome)
    return true
  }

  private onSend(peer: Peer, frame: { readonly [key: string]: unknown }): void {
    if (peer.state !== "registered") return this.protocolError(peer, `"send" frame before registration`)
    // P48: an invalid send is answered, not fatal.
    const message = decodeMessage(frame.message)
    if (isFrameDecodeError(message)) {
      return this.fail(peer, "unknown", DeliveryCode.InvalidMessage, Reason.invalidMessage)
    }
    const to = frame.to
    if (typeof to !== "string") return this.fail(peer, message.id, DeliveryCode.InvalidMessage, Reason.invalidMessage)
    const sender = peer.session
    if (sender === undefined) return this.fail(peer, message.id, DeliveryCode.SenderNotFound, Reason.senderNotFound)
    const targetId = frame.targetId
    const targetEpoch = frame.targetEpoch
    const exact = targetId !== undefined || targetEpoch !== undefined
    if (
      exact &&
      (typeof targetId !== "string" || targetId === "" || typeof targetEpoch !== "string" || targetEpoch === "")
    ) {
      return this.fail(peer, message.id, DeliveryCode.InvalidTarget, Reason.invalidTarget)
    }
    const now = this.now()
    this.prune(now)
    const space = sender.space
    const recordKey = recordKeyOf(sender.key, message.id)

    let target: Session | undefined
    let remembered: RecentSession | undefined
    if (exact && message.replyTo === undefined && typeof targetId === "string") {
      // P47: epoch-bound exact send; no name or prefix fallback.
      const fingerprint = fingerprintOf(targetId, message)
      if (this.replayed(peer, recordKey, fingerprint, message.id, now)) return
      target = space.sessions.get(targetId)
      if (target === undefined) {
        return this.failAndRecord(
          peer,
          message.id,
          recordKey,
          fingerprint,
          DeliveryCode.TargetNotFound,
          Reason.targetNotFound
        )
      }
      if (target.endpointEpoch !== targetEpoch) {
        return this.failAndRecord(
          peer,
          message.id,
          recordKey,
          fingerprint,
          DeliveryCode.TargetRebound,
          Reason.targetRebound
        )
      }
    } else {
      if (to.trim() === "") return this.fail(peer, message.id, DeliveryCode.TargetNotFound, Reason.targetNotFound)
      const live = space.resolveLive(to)
      if (live.length > 1) return this.fail(peer, message.id, DeliveryCode.AmbiguousTarget, Reason.ambiguousLive(to))
      target = live[0]
      if (target === undefined) {
        const recent = space.resolveRecent(to)
        if (recent.length > 1) {
          return this.fail(peer, message.id, DeliveryCode.AmbiguousTarget, Reason.ambiguousDisconnected(to))
        }
        remembered = recent[0]
        if (remembered === undefined) {
          return this.fail(peer, message.id, DeliveryCode.TargetNotFound, Reason.targetNotFound)
        }
      }
    }

    const targetKey = target?.key ?? remembered?.key ?? ""
    const resolvedId = target?.id ?? remembered?.id ?? ""
    if (targetKey === sender.key) return this.fail(peer, message.id, DeliveryCode.SelfTarget, Reason.selfTarget)
    const fingerprint = fingerprintOf(resolvedId, message)
    if (!exact && this.replayed(peer, recordKey, fingerprint, message.id, now)) return

    const replyKey = message.replyTo === undefined ? undefined : messageKeyOf(space.key, message.replyTo)
    if (replyKey !== undefined) {
      const edge = this.edges.get(replyKey)
      if (edge === undefined) return this.fail(peer, message.id, DeliveryCode.ReplyTarget, Reason.replyNoAsk)
      if (edge.askerKey !== targetKey || edge.targetKey !== sender.key) {
        return this.fail(peer, message.id, DeliveryCode.ReplyTarget, Reason.replyWrongAsk)
      }
    }
    if (message.supersedes !== undefined) {
      if (target === undefined) {
        return this.fail(peer, message.id, DeliveryCode.SupersedeTarget, Reason.supersedeDisconnected)
      }
      const route = this.liveRoute(messageKeyOf(space.key, message.supersedes), now)
      if (route === undefined || route.sender !== sender || route.receiver !== target) {
        return this.fail(peer, message.id, DeliveryCode.SupersedeTarget, Reason.supersedeNoRoute)
      }
    }
    if (message.expectsReply === true) {
      if (target === undefined) {
        return this.fail(peer, message.id, DeliveryCode.TargetDisconnected, Reason.targetDisconnected)
      }
      if (this.edges.isWaiting(target.key, sender.key, replyKey)) {
        return this.fail(peer, message.id, DeliveryCode.MutualAsk, Reason.mutualAsk)
      }
    }

    const mail: Mail = {
      messageKey: messageKeyOf(space.key, message.id),
      recordKey,
      senderKey: sender.key,
      senderId: sender.id,
      senderIdentity: sender.identity,
      fromJson: sender.infoJson,
      message,
      brokerReceivedAt: now,
      spaceKey: space.key,
      targetKey,
      targetId: resolvedId,
      targetIdentity: target?.identity ?? remembered?.identity,
      queuedAt: now
    }
    if (target === undefined && remembered?.identity !== undefined) {
      // P49: exactly one other live holder of the remembered identity takes the mail now.
      const holders = space.liveWithIdentity(remembered.identity, sender)
      if (holders.length === 1) target = holders[0]
    }
    // The forwarded frame must fit 1 MiB, now or when flushed from the mailbox.
    const forwarded = Encode.messageFrame(sender.infoJson, message, now, now)
    if (!fitsFrame(forwarded)) {
      return this.fail(
        peer,
        message.id,
        DeliveryCode.MessageTooLarge,
        Reason.tooLarge(frameBytes(forwarded), MAX_FRAME_BYTES)
      )
    }
    if (target === undefined) return this.queueMail(peer, mail, fingerprint)
    this.deliverLive(peer, sender, target, mail, forwarded, fingerprint)
  }

  private deliverLive(
    peer: Peer,
    sender: Session,
    target: Session,
    mail: Mail,
    frame: string,
    fingerprint: string
  ): void {
    const message = mail.message
    const now = mail.brokerReceivedAt
    const spaceKey = mail.spaceKey
    if (message.supersedes !== undefined) {
      // P72: the receiver learns of the supersede before the new message.
      this.enqueue(
        target.peer,
        Encode.controlFrame(sender.infoJson, {
          messageId: message.supersedes,
          action: "supersede",
          supersededBy: message.id,
          timestamp: now
        })
      )
      this.records.rewrite(recordKeyOf(sender.key, message.supersedes), {
        ok: false,
        code: DeliveryCode.DeliverySuperseded,
        reason: Reason.superseded(message.id),
        retryable: false
      })
    }
    const outbound: OutboundMessage = { frame, mail }
    this.enqueue(target.peer, outbound)
    this.addRoute(mail.messageKey, sender, target, now)
    if (message.expectsReply === true) {
      this.edges.open({ messageKey: mail.messageKey, askerKey: sender.key, targetKey: target.key }, now)
    }
    if (message.replyTo !== undefined) this.edges.delete(messageKeyOf(spaceKey, message.replyTo))
    const outcome: Outcome = { ok: true, delivery: "socket_delivered" }
    this.records.set(mail.recordKey, fingerprint, outcome, now)
    this.answer(peer, message.id, outcome)
  }

  private queueMail(peer: Peer, mail: Mail, fingerprint: string): void {
    for (const evicted of this.mailbox.put(mail)) {
      this.mailLost(evicted, "expired", DeliveryCode.DeliveryEvicted, Reason.evicted)
    }
    const outcome: Outcome = { ok: true, delivery: "queued" }
    this.records.set(mail.recordKey, fingerprint, outcome, mail.queuedAt)
    this.answer(peer, mail.message.id, outcome)
  }

  /**
   * Mail dropped by expiry or eviction: the replay record says so (P46), and a
   * live sender is told with an `expired` receipt rather than left to assume.
   */
  private mailLost(mail: Mail, status: "expired", code: DeliveryCode, reason: string): void {
    this.records.rewrite(mail.recordKey, { ok: false, code, reason, retryable: false })
    const space = this.spaces.get(mail.spaceKey)
    const targetInfo = space?.sessions.get(mail.targetId)?.infoJson ?? space?.recent.get(mail.targetId)?.infoJson
    if (targetInfo === undefined) return
    const now = this.now()
    const notice = Encode.receiptFrame(targetInfo, { messageId: mail.message.id, status, timestamp: now, detail: reason })
    const sender = this.byKey.get(mail.senderKey)
    if (sender !== undefined) return this.forceEnqueue(sender.peer, notice)
    // The sender is away: it is told when it registers again (within a day).
    const owed = this.owedNotices.get(mail.senderKey) ?? []
    if (owed.length < 1024) owed.push(notice)
    this.owedNotices.set(mail.senderKey, owed, now)
  }

  /**
   * Mail that was on its way to a connection that closed: to the session's
   * new connection if it is already back (a takeover: the old connection's
   * leftovers must not sit in the mailbox while the session is live),
   * otherwise back to the mailbox for its next registration.
   */
  private requeue(outbound: OutboundMessage): void {
    const live = this.byKey.get(outbound.mail.targetKey)
    if (live !== undefined && live.peer.state === "registered" && !live.peer.isClosing) {
      this.forceEnqueue(live.peer, outbound)
      return
    }
    const mail = { ...outbound.mail, queuedAt: this.now() }
    for (const evicted of this.mailbox.put(mail)) {
      this.mailLost(evicted, "expired", DeliveryCode.DeliveryEvicted, Reason.evicted)
    }
    this.records.rewrite(mail.recordKey, { ok: true, delivery: "queued" })
  }

  private flushMailbox(session: Session, now: number): void {
    this.expireMail(now)
    if (this.mailbox.size === 0) return
    const space = session.space
    const identity = session.identity
    const soleHolder = identity !== undefined && space.liveWithIdentity(identity, session).length === 0
    const mails = this.mailbox.take((mail) =>
      mail.spaceKey === space.key &&
      (mail.targetKey === session.key ||
        (soleHolder && mail.targetIdentity === identity && mail.senderIdentity !== identity))
    )
    for (const mail of mails) {
      const frame = Encode.messageFrame(mail.fromJson, mail.message, mail.brokerReceivedAt, now)
      this.enqueue(session.peer, { frame, mail })
      const sender = this.byKey.get(mail.senderKey)
      if (sender !== undefined) this.addRoute(mail.messageKey, sender, session, now)
      this.records.rewrite(mail.recordKey, { ok: true, delivery: "socket_delivered" })
    }
  }

  private expireMail(now: number): void {
    for (const mail of this.mailbox.expire(now)) {
      this.mailLost(mail, "expired", DeliveryCode.DeliveryExpired, Reason.expired)
    }
  }

  private addRoute(messageKey: string, sender: Session, receiver: Session, now: number): void {
    this.routes.set(messageKey, {
      senderKey: sender.key,
      senderIncarnation: sender.incarnation,
      receiverKey: receiver.key,
      receiverIncarnation: receiver.incarnation
    }, now)
  }

  /** The route's two sessions, if it is under an hour old and neither side has left since. */
  private liveRoute(
    messageKey: string,
    now: number
  ): { readonly sender: Session; readonly receiver: Session } | undefined {
    const route = this.routes.get(messageKey)
    const at = this.routes.setAt(messageKey)
    if (route === undefined || at === undefined || now - at > HOUR) return undefined
    const sender = this.byKey.get(route.senderKey)
    const receiver = this.byKey.get(route.receiverKey)
    if (sender === undefined || sender.incarnation !== route.senderIncarnation) return undefined
    if (receiver === undefined || receiver.incarnation !== route.receiverIncarnation) return undefined
    return { sender, receiver }
  }

  private prune(now: number): void {
    this.edges.prune(now)
    this.records.prune(now)
    this.routes.expire(now - HOUR - 1)
    this.owedNotices.expire(now - DAY - 1)
    this.expireMail(now)
  }

  // --- asks, receipts, control (P64, P70, P71) ------------------------------

  private onCancelAsk(peer: Peer, raw: unknown): void {
    const frame = decodeClientFrame.cancel_ask(raw)
    if (isFrameDecodeError(frame)) return this.protocolError(peer, frame)
    const session = peer.session
    if (session === undefined) return
    const key = messageKeyOf(session.space.key, frame.messageId)
    const edge = this.edges.get(key)
    if (edge !== undefined && edge.askerKey === session.key) this.edges.delete(key)
  }

  private onCancelMessage(peer: Peer, raw: unknown): void {
    const frame = decodeClientFrame.cancel_message(raw)
    if (isFrameDecodeError(frame)) return this.protocolError(peer, frame)
    const session = peer.session
    const messageId = frame.messageId
    if (session === undefined) return this.enqueue(peer, Encode.bareDeliveryFailedFrame(messageId, Reason.cannotCancel))
    const key = messageKeyOf(session.space.key, messageId)
    const queued = this.mailbox.get(key)
    if (queued !== undefined && queued.senderKey === session.key) {
      this.mailbox.delete(key)
      this.edges.delete(key)
      this.records.rewrite(queued.recordKey, {
        ok: false,
        code: DeliveryCode.DeliveryCancelled,
        reason: Reason.cancelledQueued,
        retryable: false
      })
      return this.enqueue(peer, Encode.bareDeliveredFrame(messageId))
    }
    const now = this.now()
    const route = this.liveRoute(key, now)
    if (route !== undefined && route.sender === session) {
      this.enqueue(
        route.receiver.peer,
        Encode.controlFrame(session.infoJson, { messageId, action: "cancel", timestamp: now })
      )
      this.edges.delete(key)
      this.records.rewrite(recordKeyOf(session.key, messageId), {
        ok: false,
        code: DeliveryCode.DeliveryCancelled,
        reason: Reason.cancelled,
        retryable: false
      })
      return this.enqueue(peer, Encode.bareDeliveredFrame(messageId))
    }
    this.enqueue(peer, Encode.bareDeliveryFailedFrame(messageId, Reason.cannotCancel))
  }

  private onReceipt(peer: Peer, raw: unknown): void {
    const frame = decodeClientFrame.message_receipt(raw)
    if (isFrameDecodeError(frame)) return this.protocolError(peer, frame)
    const session = peer.session
    if (session === undefined) return
    const route = this.liveRoute(messageKeyOf(session.space.key, frame.receipt.messageId), this.now())
    if (route === undefined || route.receiver !== session) return
    this.enqueue(route.sender.peer, Encode.receiptFrame(session.infoJson, frame.receipt))
  }

  /** For diagnostics and tests. */
  stats(): { readonly sessions: number; readonly unregistered: number; readonly mailbox: number; readonly asks: number } {
    return {
      sessions: this.live,
      unregistered: this.unregistered.size,
      mailbox: this.mailbox.size,
      asks: this.edges.size
    }
  }
}

