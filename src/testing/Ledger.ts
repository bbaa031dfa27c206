/**
 * The simulation's observer: it sees every frame on every in-memory link (as
 * each side writes and reads it), what each simulated host is handed, and what
 * each `ask` returns; it keeps the trace and checks the invariants as events
 * happen and once more at the end of a run (see docs/testing.md for the
 * precise definitions).
 *
 * Plain synchronous code owned by one world: the link wrappers, hosts and the
 * driver call into it between two yields, like the broker's Router.
 */
import { decodeBrokerFrameText, decodeClientFrame, isFrameDecodeError, parseFrameText } from "../protocol/decode.ts"
import type { BrokerFrame, Message } from "../protocol/frames.ts"

export type Side = "client" | "broker"

export type ViolationKind =
  /** An acknowledged message never reached its target, with no excuse (crash, dying receiver, failure notice). */
  | "silent-loss"
  /** A host (or an ask) was handed the same message twice. */
  | "duplicate-delivery"
  /** The broker sent the same message to its target twice. */
  | "duplicate-on-wire"
  /** Messages from one sender reached one recipient out of the order the broker accepted them. */
  | "fifo"
  /** A message reached a session it was not addressed to. */
  | "misrouted"
  /** A message, list entry or membership frame crossed a `scopeId` boundary. */
  | "scope-leak"
  /** An ask never settled. */
  | "ask-unsettled"
  /** An ask settled with a reply that does not answer it. */
  | "ask-wrong-reply"
  /** The broker's registry does not match the live, registered connections. */
  | "registry-mismatch"
  /**
   * An acknowledged message the broker dropped from its mailbox (capacity or
   * age) while its sender was not connected: the sender was never told, though
   * the broker's replay record knows (a retry with the same id would learn it).
   */
  | "untold-eviction"
  /**
   * An acknowledged message that sat in the broker's mailbox while its target
   * was connected — requeued from a connection its session had replaced — and
   * reached the target only when it registered again (the end of a run forces
   * that), if at all; out of order with newer messages meanwhile.
   */
  | "stranded-mail"
  /** Fibers were still running after their owner (generation, client, broker, world) closed. */
  | "fiber-leak"
  /** At the end, with every session connected, mail was still waiting in the broker. */
  | "mailbox-not-empty"
  /** A session was not connected again after the faults healed. */
  | "not-reconnected"
  /** With `strictInFlight`, a message lost in flight to a dying receiver. */
  | "lost-in-flight"

export interface Violation {
  readonly kind: ViolationKind
  /** Simulated time, in milliseconds. */
  readonly at: number
  readonly message: string
  /** Index of the trace line it was recorded at. */
  readonly traceIndex: number
}

export interface SessionMeta {
  readonly id: string
  readonly name: string
  readonly scopeId: string | undefined
}

/** What became of every message a sender was told the broker accepted. */
export interface MessageTally {
  /** Send frames written by clients (distinct message ids). */
  readonly sent: number
  /** Acknowledged by the broker (`delivered`). */
  readonly acknowledged: number
  /** Refused by the broker (`delivery_failed`). */
  readonly refused: number
  /** No answer reached the sender (connection lost, timeout): outcome unknown to it. */
  readonly unknown: number
  /** Acknowledged and handed to the target exactly once. */
  readonly delivered: number
  /** Acknowledged, then the sender was told it failed (an `expired` receipt). */
  readonly failedNotified: number
  /** Acknowledged by a broker that crashed before writing it anywhere. */
  readonly lostToCrash: number
  /** Written toward the target's connection, which died (or whose client closed) before its session took it. */
  readonly lostInFlight: number
  /** Delivered only when the end of the run made its target register again (a `stranded-mail` violation each). */
  readonly stranded: number
}

export interface AskTally {
  readonly started: number
  readonly replied: number
  readonly timedOut: number
  readonly failed: number
  readonly interrupted: number
}

interface LinkRecord {
  readonly id: number
  readonly owner: string
  readonly client: string
  readonly brokerEpoch: number
  registered: boolean
  closed: boolean
  /** The broker's side saw this connection end. */
  brokerEnded: boolean
}

interface Read {
  readonly link: number
  readonly client: string
  readonly seq: number
  readonly at: number
}

interface MessageRecord {
  readonly id: string
  readonly alias: string
  readonly sender: string
  readonly target: string | undefined
  readonly kind: "send" | "ask" | "reply"
  readonly replyTo: string | undefined
  readonly message: Message
  outcome: "pending" | "acked" | "refused" | "unknown"
  ackEpoch: number | undefined
  failureCode: string | undefined
  acceptSeq: number | undefined
  expiredNotified: boolean
  readonly writtenTo: Array<number>
  readonly reads: Array<Read>
  hostDeliveries: number
  /** When its sender read the broker's `delivered`. */
  ackedAt: number | undefined
  /** Connections the broker wrote an `expired` notice about it to. */
  readonly noticeWrittenTo: Array<number>
  /** First handed over while the end of the run made every session register again. */
  rescued: boolean
  /** What the broker's replay record said when the harness asked at the end (see `unexplained`). */
  recordSays: string | undefined
}

export type AskOutcome = "Replied" | "Sent" | "ReplyTimeout" | "Interrupted" | string

interface AskRecord {
  readonly alias: string
  readonly asker: string
  readonly targetId: string | undefined
  readonly startedAt: number
  questionId: string | undefined
  outcome: AskOutcome | undefined
}

export interface LedgerOptions {
  readonly now: () => number
  /** Treat messages lost in flight to a dying receiver as violations. Default false. */
  readonly strictInFlight?: boolean
  /** Put every frame in the trace (large). Default false. */
  readonly traceFrames?: boolean
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g

const formatTime = (ms: number): string => `${(ms / 1000).toFixed(3).padStart(8)}s`

const clip = (text: string, max = 40): string => text.length <= max ? text : `${text.slice(0, max - 1)}…`

export class Ledger {
  private readonly now: () => number
  private readonly strictInFlight: boolean
  private readonly traceFrames: boolean
  private readonly lines: Array<string> = []
  private readonly found: Array<Violation> = []
  private readonly sessions = new Map<string, SessionMeta>()
  private readonly byName = new Map<string, string>()
  private readonly links = new Map<number, LinkRecord>()
  private readonly closedClients = new Set<string>()
  private readonly crashedEpochs = new Set<number>()
  private readonly messages = new Map<string, MessageRecord>()
  /** Aliases for ids that are not (yet) known messages: question ids seen first in a reply, list request ids. */
  private readonly aliases = new Map<string, string>()
  private readonly asks: Array<AskRecord> = []
  private readonly openAsk = new Map<string, AskRecord>()
  /** Last accept sequence number received, per `sender\0receiver`, on the wire and at the host. */
  private readonly lastWireSeq = new Map<string, number>()
  private readonly lastHostSeq = new Map<string, number>()
  /** When each session's registration took over a connection the broker still held. */
  private readonly takeovers = new Map<string, Array<number>>()
  /** The end of the run is making every session register again (see `stranded-mail`). */
  private rescuing = false
  private rescueStartedAt = 0
  private acceptSeq = 0
  private readSeq = 0
  private checkCount = 0
  private frameCount = 0

  constructor(options: LedgerOptions) {
    this.now = options.now
    this.strictInFlight = options.strictInFlight ?? false
    this.traceFrames = options.traceFrames ?? false
  }

  // -------------------------------------------------------------------------
  // Trace and violations
  // -------------------------------------------------------------------------

  /** Appends a trace line stamped with the simulated time. */
  note(line: string): void {
    this.lines.push(`${formatTime(this.now())}  ${this.stableIds(line)}`)
  }

  get trace(): ReadonlyArray<string> {
    return this.lines
  }

  get violations(): ReadonlyArray<Violation> {
    return this.found
  }

  get checks(): number {
    return this.checkCount
  }

  get frames(): number {
    return this.frameCount
  }

  /** Counts one invariant check; records a violation when `ok` is false. */
  check(ok: boolean, kind: ViolationKind, message: () => string): boolean {
    this.checkCount++
    if (!ok) this.violate(kind, message())
    return ok
  }

  violate(kind: ViolationKind, message: string): void {
    this.note(`!! ${kind}: ${message}`)
    this.found.push({ kind, at: this.now(), message, traceIndex: this.lines.length - 1 })
  }

  /** A short stable name for an id (message ids are random UUIDs; aliases follow first appearance). */
  alias(id: string): string {
    const message = this.messages.get(id)
    if (message !== undefined) return message.alias
    let alias = this.aliases.get(id)
    if (alias === undefined) {
      alias = `m${this.messages.size + this.aliases.size + 1}`
      this.aliases.set(id, alias)
    }
    return alias
  }

  // -------------------------------------------------------------------------
  // The world
  // -------------------------------------------------------------------------

  addSession(meta: SessionMeta): void {
    this.sessions.set(meta.id, meta)
    this.byName.set(meta.name.toLowerCase(), meta.id)
  }

  nameOf(id: string): string {
    return this.sessions.get(id)?.name ?? id
  }

  private scopeOf(id: string): string | undefined {
    return this.sessions.get(id)?.scopeId
  }

  private knows(id: string): boolean {
    return this.sessions.has(id)
  }

  brokerCrashed(epoch: number): void {
    this.crashedEpochs.add(epoch)
  }

  clientClosed(client: string): void {
    this.closedClients.add(client)
  }

  linkOpened(id: number, owner: string, client: string, brokerEpoch: number): void {
    this.links.set(id, { id, owner, client, brokerEpoch, registered: false, closed: false, brokerEnded: false })
  }

  brokerEnded(id: number): void {
    const link = this.links.get(id)
    if (link !== undefined) link.brokerEnded = true
  }

  linkClosed(id: number): void {
    const link = this.links.get(id)
    if (link !== undefined) link.closed = true
  }

  /** Sessions whose connection is open and registered right now, by link. */
  registeredOwners(): ReadonlyArray<string> {
    const out: Array<string> = []
    for (const link of this.links.values()) if (link.registered && !link.closed) out.push(link.owner)
    return out
  }

  // -------------------------------------------------------------------------
  // Wire taps
  // -------------------------------------------------------------------------

  /** Other random ids (request ids, endpoint epochs) by first appearance, so frame traces replay exactly. */
  private readonly otherIds = new Map<string, string>()

  private stableIds(text: string): string {
    return text.replace(UUID, (id) => {
      const message = this.messages.get(id)
      if (message !== undefined) return message.alias
      let alias = this.aliases.get(id) ?? this.otherIds.get(id)
      if (alias === undefined) {
        alias = `u${this.otherIds.size + 1}`
        this.otherIds.set(id, alias)
      }
      return alias
    })
  }

  private traceFrame(link: LinkRecord | undefined, arrow: string, text: string): void {
    if (this.traceFrames) {
      this.note(`   ${link === undefined ? "?" : this.nameOf(link.owner)}#${link?.id ?? "?"} ${arrow} ${clip(this.stableIds(text), 200)}`)
    }
  }

  /** A client wrote frames toward the broker. */
  clientWrote(linkId: number, frames: ReadonlyArray<string>): void {
    const link = this.links.get(linkId)
    if (link === undefined) return
    for (const text of frames) {
      this.frameCount++
      const parsed = parseFrameText(text)
      if (!isFrameDecodeError(parsed)) {
        if (parsed.type === "send") {
          const frame = decodeClientFrame.send(parsed)
          if (!isFrameDecodeError(frame)) this.sendWritten(link.owner, frame.to, frame.targetId, frame.message)
        } else if (parsed.type === "unregister") {
          link.registered = false
        }
      }
      this.traceFrame(link, "→", text)
    }
  }

  private resolveTarget(to: string, targetId: string | undefined): string | undefined {
    if (targetId !== undefined) return targetId
    if (this.knows(to)) return to
    return this.byName.get(to.toLowerCase())
  }

  private sendWritten(sender: string, to: string, targetId: string | undefined, message: Message): void {
    if (this.messages.has(message.id)) return // a retry of the same message
    const kind = message.expectsReply === true ? "ask" : message.replyTo !== undefined ? "reply" : "send"
    const alias = this.aliases.get(message.id) ?? `m${this.messages.size + this.aliases.size + 1}`
    this.aliases.delete(message.id)
    const record: MessageRecord = {
      id: message.id,
      alias,
      sender,
      target: this.resolveTarget(to, targetId),
      kind,
      replyTo: message.replyTo,
      message,
      outcome: "pending",
      ackEpoch: undefined,
      failureCode: undefined,
      acceptSeq: undefined,
      expiredNotified: false,
      writtenTo: [],
      reads: [],
      hostDeliveries: 0,
      ackedAt: undefined,
      noticeWrittenTo: [],
      rescued: false,
      recordSays: undefined
    }
    this.messages.set(message.id, record)
    if (kind === "ask") {
      const ask = this.openAsk.get(sender)
      if (ask !== undefined && ask.questionId === undefined) ask.questionId = message.id
    }
  }

  /** The broker read frames from a client. */
  brokerRead(frames: ReadonlyArray<string>): void {
    for (const text of frames) {
      const parsed = parseFrameText(text)
      if (isFrameDecodeError(parsed) || parsed.type !== "send") continue
      const frame = decodeClientFrame.send(parsed)
      if (isFrameDecodeError(frame)) continue
      // The attempt the broker accepts is the last one it reads before the sender hears "delivered"
      // (an epoch-bound send refused as rebound is sent again with the same id, later).
      const record = this.messages.get(frame.message.id)
      if (record !== undefined && record.outcome !== "acked") record.acceptSeq = ++this.acceptSeq
    }
  }

  /** The broker wrote frames toward a client. */
  brokerWrote(linkId: number, frames: ReadonlyArray<string>): void {
    const link = this.links.get(linkId)
    for (const text of frames) {
      this.frameCount++
      if (!text.startsWith(`{"type":"message`)) continue
      const frame = decodeBrokerFrameText(text)
      if (isFrameDecodeError(frame)) continue
      if (frame.type === "message_receipt") {
        // A failure notice on its way to the sender.
        const noticed = frame.receipt.status === "expired" ? this.messages.get(frame.receipt.messageId) : undefined
        if (noticed !== undefined) noticed.noticeWrittenTo.push(linkId)
        continue
      }
      if (frame.type !== "message") continue
      const record = this.messages.get(frame.message.id)
      if (record === undefined) continue
      record.writtenTo.push(linkId)
      if (link !== undefined && record.target !== undefined) {
        this.check(link.owner === record.target, "misrouted", () =>
          `${record.alias} for ${this.nameOf(record.target ?? "?")} was written to ${this.nameOf(link.owner)}'s connection`)
      }
    }
  }

  /** Frames lost with a dropped connection, before the side they travelled toward read them. */
  discarded(linkId: number, toward: Side, frames: ReadonlyArray<string>): void {
    const link = this.links.get(linkId)
    if (frames.length === 0 || link === undefined) return
    const messages: Array<string> = []
    for (const text of frames) {
      if (toward === "client" && text.startsWith(`{"type":"message`)) {
        const frame = decodeBrokerFrameText(text)
        if (isFrameDecodeError(frame)) continue
        if (frame.type === "message") messages.push(this.alias(frame.message.id))
        else if (frame.type === "message_receipt" && frame.receipt.status === "expired") {
          messages.push(`the expired notice for ${this.alias(frame.receipt.messageId)}`)
        }
      } else if (toward === "broker") {
        const parsed = parseFrameText(text)
        if (!isFrameDecodeError(parsed) && parsed.type === "send") {
          const frame = decodeClientFrame.send(parsed)
          if (!isFrameDecodeError(frame)) messages.push(this.alias(frame.message.id))
        }
      }
    }
    this.note(
      `   ${frames.length} frame(s) toward ${toward === "client" ? this.nameOf(link.owner) : "the broker"} lost with link #${linkId}${
        messages.length === 0 ? "" : ` (messages ${messages.join(", ")})`
      }`
    )
  }

  /** A client read frames from the broker. */
  clientRead(linkId: number, frames: ReadonlyArray<string>): void {
    const link = this.links.get(linkId)
    if (link === undefined) return
    for (const text of frames) {
      this.traceFrame(link, "←", text)
      const frame = decodeBrokerFrameText(text)
      if (isFrameDecodeError(frame)) continue
      this.brokerFrameRead(link, frame)
    }
  }

  private sameScope(link: LinkRecord, sessionId: string, what: string): void {
    if (!this.knows(sessionId)) return
    this.check(this.scopeOf(sessionId) === this.scopeOf(link.owner), "scope-leak", () =>
      `${this.nameOf(link.owner)} (scope ${this.scopeOf(link.owner) ?? "-"}) saw ${what} of ${this.nameOf(sessionId)} (scope ${
        this.scopeOf(sessionId) ?? "-"
      })`)
  }

  private brokerFrameRead(link: LinkRecord, frame: BrokerFrame): void {
    switch (frame.type) {
      case "registered": {
        // A takeover: the broker still held another registered connection of this session.
        for (const other of this.links.values()) {
          if (other !== link && other.owner === link.owner && other.registered && !other.brokerEnded) {
            const times = this.takeovers.get(link.owner) ?? []
            times.push(this.now())
            this.takeovers.set(link.owner, times)
            break
          }
        }
        link.registered = true
        return
      }
      case "delivered": {
        if (frame.delivery === undefined) return // a cancel's bare answer
        const record = this.messages.get(frame.messageId)
        if (record === undefined || record.sender !== link.owner) return
        if (record.outcome !== "acked") {
          record.outcome = "acked"
          record.ackEpoch = link.brokerEpoch
          record.ackedAt = this.now()
        }
        return
      }
      case "delivery_failed": {
        const record = this.messages.get(frame.messageId)
        if (record === undefined || record.sender !== link.owner || frame.code === undefined) return
        if (record.outcome !== "acked") {
          record.outcome = "refused"
          record.failureCode = frame.code
        }
        return
      }
      case "message": {
        const receiver = link.owner
        const from = frame.from.id
        this.sameScope(link, from, "a message")
        const record = this.messages.get(frame.message.id)
        if (record === undefined) return
        if (record.target !== undefined) {
          this.check(record.target === receiver, "misrouted", () =>
            `${record.alias} for ${this.nameOf(record.target ?? "?")} reached ${this.nameOf(receiver)}`)
        }
        const first = this.check(record.reads.length === 0, "duplicate-on-wire", () =>
          `${record.alias} (${this.nameOf(record.sender)} → ${this.nameOf(receiver)}) arrived ${record.reads.length + 1} times`)
        record.reads.push({ link: link.id, client: link.client, seq: ++this.readSeq, at: this.now() })
        if (first) this.checkOrder(this.lastWireSeq, record, receiver, "on the wire")
        return
      }
      case "sessions":
        for (const session of frame.sessions) this.sameScope(link, session.id, "a list entry")
        return
      case "session_joined":
      case "presence_update":
        this.sameScope(link, frame.session.id, `${frame.type}`)
        return
      case "session_left":
        this.sameScope(link, frame.sessionId, "session_left")
        return
      case "message_receipt": {
        if (frame.receipt.status !== "expired") return
        const record = this.messages.get(frame.receipt.messageId)
        if (record !== undefined && record.sender === link.owner) {
          record.expiredNotified = true
          this.note(`   ${this.nameOf(link.owner)} told ${record.alias} expired: ${frame.receipt.detail ?? ""}`)
        }
        return
      }
      default:
        return
    }
  }

  /** Per sender → receiver FIFO by the order the broker read the sends. */
  private checkOrder(last: Map<string, number>, record: MessageRecord, receiver: string, where: string): void {
    const seq = record.acceptSeq
    if (seq === undefined) return
    const key = `${record.sender}\u0000${receiver}`
    const previous = last.get(key)
    const inOrder = previous === undefined || previous < seq
    // Out of order because it was requeued from a replaced connection: the stranded-mail issue.
    const stranded = !inOrder && (this.rescuedNow(record) || (record.ackedAt !== undefined &&
      (this.takeovers.get(receiver) ?? []).some((at) => at >= (record.ackedAt ?? Infinity))))
    this.check(inOrder, stranded ? "stranded-mail" : "fifo", () =>
      `${record.alias} from ${this.nameOf(record.sender)} reached ${this.nameOf(receiver)} ${where} after a message the broker accepted later${
        stranded ? " (it was requeued from a connection the receiver had replaced)" : ""
      }`)
    if (previous === undefined || previous < seq) last.set(key, seq)
  }

  // -------------------------------------------------------------------------
  // Hosts and asks
  // -------------------------------------------------------------------------

  /** A simulated host was handed an inbound message. */
  hostDelivered(receiver: string, fromId: string, message: Message, intent: string): void {
    const record = this.messages.get(message.id)
    this.note(`${this.nameOf(receiver)} ← ${this.alias(message.id)} from ${this.nameOf(fromId)} (${intent}) "${clip(message.content.text)}"`)
    if (record === undefined) return
    record.hostDeliveries++
    if (record.hostDeliveries === 1 && this.rescuedNow(record)) record.rescued = true
    this.check(record.hostDeliveries === 1, "duplicate-delivery", () =>
      `${record.alias} was handed to ${this.nameOf(receiver)} ${record.hostDeliveries} times`)
    if (record.target !== undefined) {
      this.check(record.target === receiver, "misrouted", () =>
        `${record.alias} for ${this.nameOf(record.target ?? "?")} was handed to ${this.nameOf(receiver)}`)
    }
    this.checkOrder(this.lastHostSeq, record, receiver, "at the host")
  }

  /** An ask was started; returns its alias. */
  askStarted(asker: string, target: string): string {
    const targetId = this.resolveTarget(target, undefined)
    const record: AskRecord = {
      alias: `ask${this.asks.length + 1}`,
      asker,
      targetId,
      startedAt: this.now(),
      questionId: undefined,
      outcome: undefined
    }
    this.asks.push(record)
    this.openAsk.set(asker, record)
    return record.alias
  }

  /** The question id of an ask, once its send was written (undefined before, or if it never was). */
  questionOf(askAlias: string): string | undefined {
    return this.asks.find((ask) => ask.alias === askAlias)?.questionId
  }

  /**
   * An ask ended. A `Replied` outcome carries the reply: it must answer this
   * ask's question, come from its target, and count as that reply's delivery.
   */
  askEnded(
    askAlias: string,
    outcome: AskOutcome,
    reply?: { readonly questionId: string; readonly fromId: string; readonly message: Message }
  ): void {
    const record = this.asks.find((ask) => ask.alias === askAlias)
    if (record === undefined) return
    if (this.openAsk.get(record.asker) === record) this.openAsk.delete(record.asker)
    this.check(record.outcome === undefined, "ask-unsettled", () => `${askAlias} settled twice`)
    record.outcome = outcome
    if (reply === undefined) {
      this.note(`${this.nameOf(record.asker)} ${askAlias} ended: ${outcome}`)
      return
    }
    this.note(
      `${this.nameOf(record.asker)} ${askAlias} (${this.alias(reply.questionId)}) replied by ${this.alias(reply.message.id)} from ${
        this.nameOf(reply.fromId)
      } "${clip(reply.message.content.text)}"`
    )
    if (record.questionId === undefined) record.questionId = reply.questionId
    this.check(
      reply.message.replyTo === reply.questionId && record.questionId === reply.questionId,
      "ask-wrong-reply",
      () => `${askAlias} settled by ${this.alias(reply.message.id)}, which answers ${reply.message.replyTo === undefined ? "nothing" : this.alias(reply.message.replyTo)}`
    )
    if (record.targetId !== undefined) {
      this.check(reply.fromId === record.targetId, "ask-wrong-reply", () =>
        `${askAlias} to ${this.nameOf(record.targetId ?? "?")} settled by a reply from ${this.nameOf(reply.fromId)}`)
    }
    const message = this.messages.get(reply.message.id)
    if (message === undefined) return
    message.hostDeliveries++
    if (message.hostDeliveries === 1 && this.rescuedNow(message)) message.rescued = true
    this.check(message.hostDeliveries === 1, "duplicate-delivery", () =>
      `${message.alias} was handed to ${this.nameOf(record.asker)} ${message.hostDeliveries} times`)
    this.check(message.sender === reply.fromId && message.replyTo === reply.questionId, "ask-wrong-reply", () =>
      `${askAlias} settled by ${message.alias}, which ${this.nameOf(message.sender)} sent as an answer to ${
        message.replyTo === undefined ? "nothing" : this.alias(message.replyTo)
      }`)
  }

  /** Marks the end-of-run phase that makes every session register again (see `stranded-mail`). */
  setRescue(on: boolean): void {
    this.rescuing = on
    if (on) this.rescueStartedAt = this.now()
  }

  /** Acknowledged before the rescue began, and first handed over during it. */
  private rescuedNow(record: MessageRecord): boolean {
    return this.rescuing && record.ackedAt !== undefined && record.ackedAt < this.rescueStartedAt
  }

  /** Asks that have not settled. */
  unsettledAsks(): ReadonlyArray<string> {
    return this.asks.filter((ask) => ask.outcome === undefined).map((ask) => ask.alias)
  }

  // -------------------------------------------------------------------------
  // End of run
  // -------------------------------------------------------------------------

  /**
   * Acknowledged messages that were never delivered, never written anywhere,
   * with no failure notice and no broker crash to explain them: the world asks
   * the broker's replay record about each (a resend from the sender with the
   * same id) before `finish` classifies them.
   */
  unexplained(): ReadonlyArray<{ readonly sender: string; readonly target: string; readonly message: Message }> {
    const out: Array<{ readonly sender: string; readonly target: string; readonly message: Message }> = []
    for (const record of this.messages.values()) {
      if (
        record.outcome === "acked" && record.hostDeliveries === 0 && !record.expiredNotified &&
        record.reads.length === 0 && record.writtenTo.length === 0 && record.target !== undefined &&
        !(record.ackEpoch !== undefined && this.crashedEpochs.has(record.ackEpoch))
      ) out.push({ sender: record.sender, target: record.target, message: record.message })
    }
    return out
  }

  /** What the replay record answered for a resend of `messageId` (a delivery code, or "delivered"). */
  recordSaid(messageId: string, answer: string): void {
    const record = this.messages.get(messageId)
    if (record !== undefined) record.recordSays = answer
  }

  /**
   * Classifies every acknowledged message (call after the world quiesced,
   * with every session connected again) and records silent losses.
   */
  finish(): MessageTally {
    let acknowledged = 0
    let refused = 0
    let unknown = 0
    let delivered = 0
    let failedNotified = 0
    let lostToCrash = 0
    let lostInFlight = 0
    let stranded = 0
    for (const record of this.messages.values()) {
      if (record.outcome === "refused") refused++
      if (record.outcome === "pending" || record.outcome === "unknown") unknown++
      if (record.outcome !== "acked") continue
      acknowledged++
      const to = this.nameOf(record.target ?? "?")
      const label = `${record.alias} (${record.kind} ${this.nameOf(record.sender)} → ${to})`
      this.checkCount++
      if (record.hostDeliveries > 0) {
        if (record.rescued) {
          stranded++
          this.violate(
            "stranded-mail",
            `${label} sat in the broker's mailbox while ${to} was connected; it arrived only when ${to} registered again`
          )
        } else {
          delivered++
        }
        continue
      }
      if (record.expiredNotified) {
        failedNotified++
        continue
      }
      const lastRead = record.reads[record.reads.length - 1]
      if (lastRead !== undefined) {
        if (this.closedClients.has(lastRead.client)) {
          lostInFlight++
          if (this.strictInFlight) this.violate("lost-in-flight", `${label} was read by a client that closed before its session took it`)
          continue
        }
        this.violate("silent-loss", `${label} reached ${to}'s live client but was never handed to its session`)
        continue
      }
      if (record.writtenTo.length > 0) {
        const open = record.writtenTo.filter((id) => this.links.get(id)?.closed !== true)
        if (open.length === 0) {
          lostInFlight++
          if (this.strictInFlight) this.violate("lost-in-flight", `${label} was written to a connection of ${to} that died before it was read`)
          continue
        }
        this.violate("silent-loss", `${label} was written to ${to}'s open connection #${open.join(", #")} but never read`)
        continue
      }
      if (record.ackEpoch !== undefined && this.crashedEpochs.has(record.ackEpoch)) {
        lostToCrash++
        continue
      }
      if (record.recordSays === "E_DELIVERY_EVICTED" || record.recordSays === "E_DELIVERY_EXPIRED") {
        if (record.noticeWrittenTo.length > 0 && record.noticeWrittenTo.every((id) => this.links.get(id)?.closed === true)) {
          // The notice was written toward the sender, whose connection died before it read it.
          lostInFlight++
          if (this.strictInFlight) {
            this.violate("lost-in-flight", `the expired notice for ${label} was written to a connection of ${this.nameOf(record.sender)} that died before it was read`)
          }
          continue
        }
        this.violate(
          "untold-eviction",
          `${label} was dropped from the broker's mailbox (${record.recordSays}) while ${this.nameOf(record.sender)} was away; it was never told`
        )
        continue
      }
      this.violate(
        "silent-loss",
        `${label} was acknowledged by broker #${record.ackEpoch ?? "?"}, which did not crash, and never sent to ${to}${
          record.recordSays === undefined ? "" : ` (a resend now gets: ${record.recordSays})`
        }`
      )
    }
    return {
      sent: this.messages.size,
      acknowledged,
      refused,
      unknown,
      delivered,
      failedNotified,
      lostToCrash,
      lostInFlight,
      stranded
    }
  }

  askTally(): AskTally {
    let replied = 0
    let timedOut = 0
    let interrupted = 0
    let failed = 0
    for (const ask of this.asks) {
      if (ask.outcome === "Replied") replied++
      else if (ask.outcome === "ReplyTimeout") timedOut++
      else if (ask.outcome === "Interrupted") interrupted++
      else if (ask.outcome !== undefined) failed++
    }
    return { started: this.asks.length, replied, timedOut, failed, interrupted }
  }
}
