/**
 * Size: about 465 lines, one concept — the departure-order check; over a
 * third of it is this header and the JSDoc of the counting rules (a write's
 * departures, a return withheld, a takeover's hand-on). Its departure
 * counts are read by ledger/joins.ts (`departuresBeforeJoin`, `endedBy`).
 *
 * Departure order (C-BRK-33; docs/architecture.md, "Membership frames"):
 * every message a session X sent before it left reaches each recipient before
 * X's `session_left` there. A client fails the asks waiting on X when it reads
 * that frame, so a reply arriving after it is lost to its asker.
 *
 * "Before X left" is the broker's view: each registration the broker holds
 * on a connection collects the sends it handled on it (a send still in X's
 * client, or on the wire, at the leave was never sent); the registration ends
 * with a departure when the broker handles its `unregister` or sees its
 * connection end — a takeover (a `register` of X on another connection while
 * the broker still holds this one) is no departure, and hands the collected
 * sends on to the new registration. "Handled", not "read": a reader held back
 * behind parked output holds the frames it reads, and drops them if its
 * connection is taken over or closes first; the broker's `ReaderObserver`
 * says when it handles them (`brokerHandled`), so a held `unregister`
 * dropped at a takeover is no departure (simulation seed 366). A message sent again with the same id
 * (its client never heard the answer) counts where the broker last read it
 * before the answer or its first arrival, as `acceptSeq` does (ledger/wire.ts):
 * a copy read earlier may have waited in a reader that closed before routing
 * it. Departures are numbered per broker
 * incarnation and session. When the broker begins a write holding a
 * `session_left` for X to a connection (its writer chose the frames then,
 * however long the write takes to reach the transport), the ledger notes how
 * many departures of X it had seen, less one for each later `session_left`
 * of X in the same write (each announces a departure of its own: a returned
 * sender's departure withheld from a recipient is written after the earlier
 * one's, Membership.ts) (matched to the client's read in order, per
 * connection and session); a
 * recipient that reads it has been told of those departures. The first
 * arrival there of a message whose registration ended in one of them is
 * `left-before-mail`.
 *
 * Only what arrives is judged: a message that never does (refused, expired,
 * withdrawn, superseded, lost) is the other checks' business. A
 * `left-before-mail` says in its report when X had registered again (the
 * same id, on any connection) before the message arrived, which the broker
 * had routed to the recipient's live connection, and whether the message
 * came in a later write than the `session_left` (each broker write is one
 * `OutputWrites.takeForWrite`, `writeStarted`): not queued for the recipient yet
 * when its writer collected the departure — X's output parked behind
 * backpressure when X came back, which the broker covers (Membership.ts
 * withholds X's departure and return from that output's recipients until
 * it is queued) — or queued then, and written after the `session_left`
 * (Rejoins.ts puts it first). A return after the end of any registration
 * that read a copy counts (the broker may have routed the earlier copy and
 * deduplicated the later). The one named exception:
 * - `takeover-late-write`: the message was in the write in progress of a
 *   connection the recipient had replaced (ledger/order.ts, known issue 22):
 *   it comes back after everything the new connection was sent since.
 *
 * It also keeps which departures were a short-lived session's (`ephemeral-v1`)
 * end by `unregister`, for fates.ts: the broker owes no notice for mail such a
 * sender sent before that end and its mailbox drops afterwards
 * (`endedOneShot`).
 *
 * Owned by one `Ledger`; plain synchronous state, fed by its wire taps.
 */
import { decodeBrokerFrameText, isFrameDecodeError, parseFrameText } from "../../protocol/decode.ts"
import { EPHEMERAL_V1 } from "../../protocol/features.ts"
import { lateFromReplaced } from "./order.ts"
import { isHostile, type LedgerState, type MessageRecord, nameOf, recordFrom } from "./state.ts"
import { violate } from "./trace.ts"

/** One end of a registration of session `session` (numbered per broker incarnation and session). */
interface Departure {
  readonly session: string
  readonly epoch: number
  readonly index: number
  /** Ended by an `unregister` (the connection stays open and may register again), not by the connection's end: for the report. */
  readonly unregistered: boolean
  /** The broker read a registration of the same id, or of that connection, after it. */
  rejoined: boolean
}

/** A registration the broker holds on one connection, and the sends it read on it (every copy). */
interface Registration {
  readonly session: string
  readonly sent: Array<string>
  /**
   * Short-lived (`ephemeral-v1`) as the broker granted it: its `register` asked for it (the field and the
   * feature), and it took over no registration that was not (Registration.ts: a takeover is that session).
   */
  readonly ephemeral: boolean
}

/** The departure side of one ledger. */
export class DepartureLedger {
  /** The registration the broker holds on each connection, by link. */
  private readonly held = new Map<number, Registration>()
  /**
   * Each session's departures by `unregister` of a short-lived registration (`ephemeral-v1`): its broker
   * incarnation, and `LedgerState.acceptSeq` when the broker read the `unregister`.
   */
  private readonly oneShotEnds = new Map<string, Array<{ readonly epoch: number; readonly seq: number }>>()
  /** Departures seen so far, per `epoch\0session`. */
  private readonly count = new Map<string, number>()
  /** Departures not followed by a registration yet, per `epoch\0session`. */
  private readonly unanswered = new Map<string, Array<Departure>>()
  /** The registration whose read of each message counts (the last before it was answered or read), by message id. */
  private readonly sentIn = new Map<string, Registration>()
  /** The departure that ended the registration each message was sent in, by message id. */
  private readonly endOf = new Map<string, Departure>()
  /** Every departure that ended a registration in which the broker read a copy of each message, by message id. */
  private readonly endsOfCopies = new Map<string, Array<Departure>>()
  /**
   * `session_left` frames written and not read yet, per link, in order: the departed session, its count
   * then, and the write it was in.
   */
  private readonly written = new Map<
    number,
    Array<{ readonly session: string; readonly departures: number; readonly write: number }>
  >()
  /** Departures each receiver was told of, per `receiver\0session\0epoch`: the highest count it read. */
  private readonly told = new Map<string, number>()
  /** The link and write of the `session_left` that raised each `told` count, by the same key. */
  private readonly toldIn = new Map<string, { readonly linkId: number; readonly write: number }>()
  /** Broker writes begun on each link (`writeStarted`): the number of the current one. */
  private readonly writes = new Map<number, number>()
  /**
   * The departure count of each `session_left` in the current write on each link, in order, as it was
   * when the write began (`writeStarted`): the broker chose those frames then, and a departure it reads
   * while a slow write is on its way is not one they announce. `brokerWrote` takes them as the frames go.
   */
  private readonly countsAtWrite = new Map<number, Array<number>>()
  /** The write each message was first written in on each link, per `link\0message id`. */
  private readonly writtenIn = new Map<string, number>()
  /** Messages whose first arrival was judged. */
  private readonly judged = new Set<string>()
  /**
   * Each registration the broker read, per `epoch\u0000session`, in order: the `startedAt` and `pid` its
   * `register` gave (what a `session_joined` of it shows) and how many departures of the session came
   * before it.
   */
  private readonly registrations = new Map<
    string,
    Array<{ readonly startedAt: unknown; readonly pid: unknown; readonly departuresBefore: number }>
  >()
  /** `acceptSeq` when the broker read each link's `register`. */
  private readonly registeredAtSeq = new Map<number, number>()

  /**
   * The broker handled `frames[from]` up to `frames[to]` (not included), read on link `linkId` (after
   * `wire.ts`'s read tap gave the sends among them their `acceptSeq`): at once, or once its reader, held
   * back behind parked output, handed them back. A held frame dropped at a close or a takeover never
   * comes here: its `unregister` ended nothing, its send was never sent (simulation seed 366).
   */
  brokerHandled(state: LedgerState, linkId: number, frames: ReadonlyArray<string>, from: number, to: number): void {
    const link = state.links.get(linkId)
    if (link === undefined || isHostile(state, link.owner)) return
    for (let i = from; i < to; i++) {
      const text = frames[i]!
      const parsed = parseFrameText(text)
      if (isFrameDecodeError(parsed)) continue
      switch (parsed.type) {
        case "register": {
          const session = typeof parsed["sessionId"] === "string" ? parsed["sessionId"] : link.owner
          const features = parsed["features"]
          const ephemeral = parsed["ephemeral"] === true && Array.isArray(features) && features.includes(EPHEMERAL_V1)
          const info = parsed["session"]
          const shown = typeof info === "object" && info !== null && "startedAt" in info && "pid" in info
            ? { startedAt: info.startedAt, pid: info.pid }
            : undefined
          this.registered(state, linkId, link.brokerEpoch, session, ephemeral, shown)
          break
        }
        case "unregister":
          this.depart(state, linkId, link.brokerEpoch, true)
          break
        case "send":
        case "supervisor_send": {
          const message = parsed["message"]
          const id = typeof message === "object" && message !== null && "id" in message && typeof message.id === "string"
            ? message.id
            : undefined
          const registration = this.held.get(linkId)
          const record = id === undefined ? undefined : recordFrom(state, id, link.owner)
          // As `acceptSeq` (wire.ts): the copy the broker accepts is the last it reads before the sender
          // hears the answer (a copy read before may have waited in a reader that closed unrouted).
          if (registration === undefined || record === undefined) break
          registration.sent.push(record.id)
          if (record.outcome !== "acked" && record.reads.length === 0) {
            this.sentIn.set(record.id, registration)
            this.endOf.delete(record.id)
          }
          break
        }
        default:
          break
      }
    }
  }

  /**
   * Whether a short-lived registration (`ephemeral-v1`) of `record`'s sender ended by `unregister` after
   * the broker read `record` (an acknowledged message): then the broker owes no notice if its mailbox
   * drops the message (MailDelivery.ts, `lost` and `owe`; docs/protocol.md, `ephemeral-v1`). Its two
   * rules, as far as the ledger can tell without seeing when the mailbox dropped it: the registration
   * the message was sent in ended so (the message carries that end, `Mail.senderEnd`, however much later
   * it is lost), or a later one did (while the sender stays away after that, its id is `ended`, and a
   * notice for it is not kept; a notice owed from before would have been written at that registration).
   * The end must be on a broker that has not crashed, the one that holds the message at the end: a
   * successor knows neither rule, and owes the notice from its store — unless no successor found the
   * message in the store (`LedgerState.restoredBy`): then the broker that knew the end dropped it. False when the sender's
   * registrations merely lost their connections: the broker owes it the notice. (`seq` is `acceptSeq`
   * after the whole read batch, wire.ts's tap runs first; a send read after the `unregister` in the same
   * batch would count as before it, but a client sends only once it read `registered` again.)
   */
  endedOneShot(state: LedgerState, record: MessageRecord): boolean {
    const accepted = record.acceptSeq
    const ackEpoch = record.ackEpoch
    if (accepted === undefined || ackEpoch === undefined) return false
    // A crashed broker's end counts when no later incarnation found the message in the store: the one
    // that knew the end dropped it.
    const restored = state.restoredBy.get(record.message.id) ?? []
    return (this.oneShotEnds.get(record.sender) ?? []).some((end) =>
      (!state.crashedEpochs.has(end.epoch) || !restored.some((epoch) => epoch > end.epoch)) &&
      (end.epoch > ackEpoch || (end.epoch === ackEpoch && end.seq >= accepted))
    )
  }

  /** The broker's side of link `linkId` saw it end: the registration it held there departs. */
  brokerEnded(state: LedgerState, linkId: number): void {
    const link = state.links.get(linkId)
    if (link !== undefined) this.depart(state, linkId, link.brokerEpoch, false)
  }

  /**
   * The broker began a write of `frames` on link `linkId` (one `OutputWrites.takeForWrite`): later frames are in
   * the next write. Notes the departures each `session_left` among them announces, as of now.
   */
  writeStarted(state: LedgerState, linkId: number, frames: ReadonlyArray<string>): void {
    this.writes.set(linkId, (this.writes.get(linkId) ?? 0) + 1)
    const link = state.links.get(linkId)
    if (link === undefined) return
    const sessions: Array<string> = []
    const counts: Array<number> = []
    for (const text of frames) {
      if (text.startsWith(`{"type":"session_left"`)) {
        const frame = decodeBrokerFrameText(text)
        if (isFrameDecodeError(frame) || frame.type !== "session_left") continue
        sessions.push(frame.sessionId)
        counts.push(this.count.get(`${link.brokerEpoch}\u0000${frame.sessionId}`) ?? 0)
      } else if (text.startsWith(`{"type":"session_joined"`) && sessions.length > 0) {
        // A join of registration R after a `session_left` of its session in this write: that
        // `session_left` announced no departure from after R registered (R's own, or a later one's, which
        // the broker withholds from this recipient after a return: Membership.ts), only those before.
        const frame = decodeBrokerFrameText(text)
        if (isFrameDecodeError(frame) || frame.type !== "session_joined") continue
        const joined = frame.session
        const known = this.registrations.get(`${link.brokerEpoch}\u0000${joined.id}`) ?? []
        const registration = known.findLast((r) => r.startedAt === joined.startedAt && r.pid === joined.pid)
        if (registration === undefined) continue
        for (let i = sessions.length - 1; i >= 0; i--) {
          if (sessions[i] !== joined.id) continue
          counts[i] = Math.min(counts[i]!, registration.departuresBefore)
          break
        }
      }
    }
    // Each `session_left` of a session in one write announces a departure of its own, in order: one
    // followed by k more of the same session there announces at most the count less k.
    const later = new Map<string, number>()
    for (const session of sessions) later.set(session, (later.get(session) ?? 0) + 1)
    for (let i = 0; i < sessions.length; i++) {
      const after = (later.get(sessions[i]!) ?? 1) - 1
      later.set(sessions[i]!, after)
      counts[i] = Math.max(0, Math.min(counts[i]!, (this.count.get(`${link.brokerEpoch}\u0000${sessions[i]}`) ?? 0) - after))
    }
    this.countsAtWrite.set(linkId, counts)
  }

  /**
   * The broker wrote frames toward a client: notes each `session_left` with the departures it had seen
   * when its write began (`writeStarted`), and the write each message was first in.
   */
  brokerWrote(state: LedgerState, linkId: number, frames: ReadonlyArray<string>): void {
    const link = state.links.get(linkId)
    if (link === undefined) return
    const write = this.writes.get(linkId) ?? 0
    for (const text of frames) {
      if (text.startsWith(`{"type":"message"`)) {
        const frame = decodeBrokerFrameText(text)
        if (isFrameDecodeError(frame) || frame.type !== "message") continue
        const key = `${linkId}\u0000${frame.message.id}`
        if (!this.writtenIn.has(key)) this.writtenIn.set(key, write)
        continue
      }
      if (!text.startsWith(`{"type":"session_left"`)) continue
      const frame = decodeBrokerFrameText(text)
      if (isFrameDecodeError(frame) || frame.type !== "session_left") continue
      const queue = this.written.get(linkId) ?? []
      queue.push({
        session: frame.sessionId,
        departures: this.countsAtWrite.get(linkId)?.shift() ??
          this.count.get(`${link.brokerEpoch}\u0000${frame.sessionId}`) ?? 0,
        write
      })
      this.written.set(linkId, queue)
    }
  }

  /** A client read frames: a `session_left` tells its session of departures; a message's first arrival is judged. */
  clientRead(state: LedgerState, linkId: number, frames: ReadonlyArray<string>): void {
    const link = state.links.get(linkId)
    if (link === undefined) return
    const receiver = link.owner
    for (const text of frames) {
      if (text.startsWith(`{"type":"session_left"`)) {
        const frame = decodeBrokerFrameText(text)
        if (isFrameDecodeError(frame) || frame.type !== "session_left") continue
        const queue = this.written.get(linkId) ?? []
        const at = queue.findIndex((entry) => entry.session === frame.sessionId)
        if (at < 0) continue
        const [entry] = queue.splice(at, 1)
        const key = `${receiver}\u0000${frame.sessionId}\u0000${link.brokerEpoch}`
        const departures = entry?.departures ?? 0
        if (!this.told.has(key) || departures > (this.told.get(key) ?? 0)) {
          this.told.set(key, departures)
          this.toldIn.set(key, { linkId, write: entry?.write ?? 0 })
        }
      } else if (text.startsWith(`{"type":"message"`)) {
        const frame = decodeBrokerFrameText(text)
        if (isFrameDecodeError(frame) || frame.type !== "message") continue
        this.arrived(state, linkId, receiver, frame.from.id, frame.message.id)
      }
    }
  }

  private arrived(state: LedgerState, linkId: number, receiver: string, sender: string, id: string): void {
    const record = recordFrom(state, id, sender)
    if (record === undefined || this.judged.has(id)) return
    this.judged.add(id)
    const ended = this.endOf.get(id)
    if (ended === undefined) return
    const toldKey = `${receiver}\u0000${sender}\u0000${ended.epoch}`
    const told = this.told.get(toldKey) ?? 0
    state.checkCount++ // one check (trace.ts's `check`), its violation named below by its cause
    if (told < ended.index) return
    // Routed to this live connection (not flushed from the mailbox when it registered): it may have been
    // the sender's own output parked behind backpressure, which a return of the sender lets fall behind.
    const routedLive = record.acceptSeq !== undefined && record.acceptSeq > (this.registeredAtSeq.get(linkId) ?? Infinity)
    const late = lateFromReplaced(state, record, receiver) === "withoutRejoin" // tolerated only so, as in the order check
    // A copy read earlier (whose registration also ended) may be the one the broker routed: its return counts too.
    const returned = !late && routedLive && (this.endsOfCopies.get(id) ?? [ended]).some((end) => end.rejoined)
    // Queued for this connection when the session_left was written, it is in that write (Rejoins.ts's case).
    const toldIn = this.toldIn.get(toldKey)
    const inLaterWrite = toldIn === undefined || toldIn.linkId !== linkId ||
      (this.writtenIn.get(`${linkId}\u0000${id}`) ?? 0) > toldIn.write
    const rejoined = returned && inLaterWrite
    violate(
      state,
      late ? "takeover-late-write" : "left-before-mail",
      `${record.alias} from ${nameOf(state, sender)} reached ${nameOf(state, receiver)} after its session_left, though ${
        nameOf(state, sender)
      } sent it before it left (${ended.unregistered ? "unregistered" : "its connection ended"})${
        late
          ? " (it was in the write in progress of a connection the receiver had replaced)"
          : rejoined
          ? " (the sender registered again before it was queued for the receiver: its departure and return were not withheld until then, Membership.ts)"
          : returned
          ? " (the sender registered again before it arrived, but it was queued for the receiver when the session_left was written: Rejoins.ts puts such mail first)"
          : ""
      }`
    )
  }

  /**
   * How many departures of `session` (broker incarnation `epoch`) came before the registration a
   * `session_joined` showing `startedAt` and `pid` stands for, as of now: the last such registration the
   * broker read (a client registers each connection with the same `startedAt`, so this is right only at
   * the moment the broker's writer chose the frame, ledger/joins.ts). Undefined for one it never read.
   */
  departuresBeforeJoin(epoch: number, session: string, startedAt: unknown, pid: unknown): number | undefined {
    return (this.registrations.get(`${epoch}\u0000${session}`) ?? [])
      .findLast((r) => r.startedAt === startedAt && r.pid === pid)?.departuresBefore
  }

  /**
   * How many departures of `session` broker incarnation `epoch` has seen, when the broker holds a
   * registration of it now (that registration came after all of them: a session is held on one connection
   * at a time); undefined when it holds none (ledger/joins.ts, `missing-pair`).
   */
  departuresOfHeld(state: LedgerState, epoch: number, session: string): number | undefined {
    for (const [linkId, registration] of this.held) {
      if (registration.session !== session) continue
      if (state.links.get(linkId)?.brokerEpoch === epoch) return this.count.get(`${epoch}\u0000${session}`) ?? 0
    }
    return undefined
  }

  /** The departure (its broker incarnation and its number there) that ended the registration message `id` counts in, if one did. */
  endedBy(id: string): { readonly epoch: number; readonly index: number } | undefined {
    return this.endOf.get(id)
  }

  /** The broker read a `register` of `session` on `linkId`: a takeover of its other registrations, or a return after a departure. */
  private registered(
    state: LedgerState,
    linkId: number,
    epoch: number,
    session: string,
    ephemeral: boolean,
    shown: { readonly startedAt: unknown; readonly pid: unknown } | undefined
  ): void {
    this.registeredAtSeq.set(linkId, state.acceptSeq)
    if (shown !== undefined) {
      const list = this.registrations.get(`${epoch}\u0000${session}`) ?? []
      list.push({ ...shown, departuresBefore: this.count.get(`${epoch}\u0000${session}`) ?? 0 })
      this.registrations.set(`${epoch}\u0000${session}`, list)
    }
    const replaced: Array<Registration> = []
    for (const [other, registration] of this.held) {
      if (other === linkId || registration.session !== session || state.links.get(other)?.brokerEpoch !== epoch) continue
      // A takeover: no departure; what the old connection sent leaves with the session.
      this.held.delete(other)
      replaced.push(registration)
    }
    const key = `${epoch}\u0000${session}`
    for (const departure of this.unanswered.get(key) ?? []) departure.rejoined = true
    this.unanswered.delete(key)
    const previous = this.held.get(linkId)
    if (previous !== undefined) replaced.push(previous)
    const next: Registration = {
      session,
      sent: replaced.flatMap((registration) => registration.sent),
      ephemeral: ephemeral && replaced.every((registration) => registration.ephemeral)
    }
    for (const id of next.sent) {
      const counted = this.sentIn.get(id)
      if (counted !== undefined && replaced.includes(counted)) this.sentIn.set(id, next)
    }
    this.held.set(linkId, next)
  }

  private depart(state: LedgerState, linkId: number, epoch: number, unregistered: boolean): void {
    const registration = this.held.get(linkId)
    if (registration === undefined) return
    this.held.delete(linkId)
    const key = `${epoch}\u0000${registration.session}`
    const index = (this.count.get(key) ?? 0) + 1
    this.count.set(key, index)
    const departure: Departure = { session: registration.session, epoch, index, unregistered, rejoined: false }
    for (const id of registration.sent) {
      if (this.sentIn.get(id) === registration) this.endOf.set(id, departure)
      const ends = this.endsOfCopies.get(id) ?? []
      ends.push(departure)
      this.endsOfCopies.set(id, ends)
    }
    const unanswered = this.unanswered.get(key) ?? []
    unanswered.push(departure)
    this.unanswered.set(key, unanswered)
    if (unregistered && registration.ephemeral) {
      const ends = this.oneShotEnds.get(registration.session) ?? []
      ends.push({ epoch, seq: state.acceptSeq })
      this.oneShotEnds.set(registration.session, ends)
    }
  }
}
