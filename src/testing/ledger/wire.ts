/**
 * Size: about 730 lines, one concept — reading the wire for the ledger,
 * frame type by frame type; durable mode (issue 13) added the crash-redelivery
 * cases here, known issue 20 the client's last written confirmation per
 * connection, and a session that confirms what it handled (known issue 21)
 * the rule that a read through a crashed incarnation is unconfirmed to the
 * next one; the trace note of frames the broker held and dropped
 * (`heldDropped`, seed 366) is here with the other frames lost unread. Kept whole: the five taps (client wrote, broker read, broker
 * wrote or took back, client read, discarded) update the same message
 * records, and most of the length is one function, `brokerFrameRead`, whose
 * cases each judge one broker frame a client read; the other checks live in
 * their own modules already (order.ts, delivery.ts, asks.ts, topics.ts).
 * The takeover bookkeeping (`heldAtRegister`, for known issue 22, and which
 * connections hold their session to the broker, `registrationsHandled`) is
 * part of the broker's taps, so it stays here too, as does what `ask-hijacked`
 * needs of it (when a broker first read a reply, and its ask's deadline as
 * the target read it). Cancels and controls are recorded here and judged
 * in controls.ts.
 *
 * The ledger's wire taps: every frame as a client writes it, the broker reads
 * it, the broker writes it, a client reads it, or a dropped connection loses
 * it. From them it learns which messages exist, which the broker accepted and
 * acknowledged, where each was written and read, and checks routing, scopes
 * and order on the wire.
 */
import { MAX_FRAME_BYTES } from "../../protocol/constants.ts"
import { compileDecoder, decodeBrokerFrameText, decodeClientFrame, isFrameDecodeError, parseFrameText } from "../../protocol/decode.ts"
import { DeliveryCode } from "../../protocol/delivery.ts"
import { RECEIVED_V1, REJOIN_V1 } from "../../protocol/features.ts"
import { type BrokerFrame, type Message, SupervisorSendFrame } from "../../protocol/frames.ts"
import { frameBytes } from "../../protocol/framing.ts"
import { type DeliveryNote, deliveryNoteOf, replacedRead, stagedRead } from "./delivery.ts"
import { cancelAnswered, cancelRefused, cancelWritten, controlRead, controlWriteBegun, supersedeAnswered, supersedeHeard, supersedeWritten } from "./controls.ts"
import { checkOrder } from "./order.ts"
import {
  crossesGroup,
  groupOf,
  isHostile,
  knows,
  type LedgerState,
  type LinkRecord,
  mayCross,
  type MessageRecord,
  nameOf,
  recordFrom,
  resolveTarget,
  scopeOf
} from "./state.ts"
import { alias, check, clip, note, traceFrame, violate } from "./trace.ts"
import type { Side } from "./types.ts"

/** `supervisor_send` (client → broker); the broker routes it as a send, so the ledger decodes it here. */
const decodeSupervisorSend = compileDecoder("supervisor_send", SupervisorSendFrame)

/** A send-like frame a client wrote: a `send`, or a child's `supervisor_send`. */
const decodeSendLike = (
  parsed: { readonly type: string; readonly [key: string]: unknown }
): {
  readonly to: string
  readonly targetId: string | undefined
  readonly message: Message
  readonly channel: "supervisor" | undefined
  readonly delivery: DeliveryNote | undefined
  readonly askTimeoutMs: number | undefined
} | undefined => {
  if (parsed.type === "send") {
    const frame = decodeClientFrame.send(parsed)
    return isFrameDecodeError(frame)
      ? undefined
      : {
        to: frame.to,
        targetId: frame.targetId,
        message: frame.message,
        channel: undefined,
        delivery: deliveryNoteOf(frame),
        askTimeoutMs: frame.askTimeoutMs
      }
  }
  if (parsed.type === "supervisor_send") {
    const frame = decodeSupervisorSend(parsed)
    return isFrameDecodeError(frame)
      ? undefined
      : { to: frame.to, targetId: undefined, message: frame.message, channel: "supervisor", delivery: undefined, askTimeoutMs: undefined }
  }
  return undefined
}

/** A client wrote frames toward the broker. */
export const clientWrote = (state: LedgerState, linkId: number, frames: ReadonlyArray<string>): void => {
  const link = state.links.get(linkId)
  if (link === undefined) return
  for (const text of frames) {
    state.frameCount++
    const parsed = parseFrameText(text)
    if (!isFrameDecodeError(parsed)) {
      if ((parsed.type === "send" || parsed.type === "supervisor_send") && !isHostile(state, link.owner)) {
        const frame = decodeSendLike(parsed)
        if (frame !== undefined) {
          sendWritten(state, link.owner, link.brokerEpoch, frame.to, frame.targetId, frame.message, frame.channel, frame.delivery, frame.askTimeoutMs)
          supersedeWritten(state, link, frame.message)
        }
      } else if (parsed.type === "cancel_message" && !isHostile(state, link.owner)) {
        const cancel = decodeClientFrame.cancel_message(parsed)
        if (!isFrameDecodeError(cancel)) cancelWritten(state, link, cancel.messageId)
      } else if (parsed.type === "list") {
        if (parsed["settle"] === true && typeof parsed["requestId"] === "string") link.settlesUnanswered.add(parsed["requestId"])
      } else if (parsed.type === "unregister") {
        // The client's view; the broker may hold the session by it until it handles this (`brokerHolds`).
        link.registered = false
      } else if (parsed.type === "received") {
        const confirmed = decodeClientFrame.received(parsed)
        if (!isFrameDecodeError(confirmed)) link.confirmationWritten = Math.max(link.confirmationWritten, confirmed.frames)
      }
    }
    traceFrame(state, link, "→", text)
  }
}

const sendWritten = (
  state: LedgerState,
  sender: string,
  epoch: number,
  to: string,
  targetId: string | undefined,
  message: Message,
  channel: "supervisor" | undefined,
  delivery: DeliveryNote | undefined,
  askTimeoutMs: number | undefined
): void => {
  if (state.messages.has(message.id)) return // a retry of the same message
  const kind = message.expectsReply === true ? "ask" : message.replyTo !== undefined ? "reply" : "send"
  const alias = state.aliases.get(message.id) ?? `m${state.messages.size + state.aliases.size + 1}`
  state.aliases.delete(message.id)
  const record: MessageRecord = {
    id: message.id,
    alias,
    sender,
    target: resolveTarget(state, to, targetId),
    kind,
    channel,
    replyTo: message.replyTo,
    message,
    firstEpoch: epoch,
    outcome: "pending",
    ackEpoch: undefined,
    failureCode: undefined,
    acceptSeq: undefined,
    expiredNotified: false,
    writtenTo: [],
    cutFrom: [],
    reads: [],
    hostDeliveries: 0,
    redelivered: 0,
    resent: 0,
    confirmationLost: false,
    ackedAt: undefined,
    ackMark: undefined,
    queuedTo: undefined,
    noticeWrittenTo: [],
    rescued: false,
    recordSays: undefined,
    delivery,
    askDeadline: undefined,
    brokerFirstRead: undefined
  }
  state.messages.set(message.id, record)
  // A child's supervisor-channel ask is no ask of its session runtime (its reply-waiter slot is not used).
  if (kind === "ask" && channel === undefined) {
    const ask = state.openAsk.get(sender)
    if (ask !== undefined && ask.questionId === undefined) {
      ask.questionId = message.id
      ask.timeoutMs = askTimeoutMs
    }
  }
}

/**
 * The other connections of `link`'s session the broker may hold it by (`LinkRecord.brokerHolds`) and has
 * not seen end: a takeover by `link` replaces them. The broker's view, not their clients': one whose
 * client has not read `registered` yet, or wrote an `unregister` the broker has not handled, is held.
 */
const heldBy = (state: LedgerState, link: LinkRecord): ReadonlyArray<number> => {
  const out: Array<number> = []
  for (const other of state.links.values()) {
    if (other !== link && other.owner === link.owner && other.brokerHolds && !other.brokerEnded) out.push(other.id)
  }
  return out
}

/**
 * The broker handles `frames[from]` up to `frames[to]` read on link `linkId` (`Ledger.brokerHandled`):
 * a `register` on a connection that holds no registration makes it hold its session
 * (`LinkRecord.brokerHolds`), taking over the others that did (`heldAtRegister`, noted at the first),
 * from that moment, not from its client's read of `registered`; an `unregister` ends its hold.
 */
export const registrationsHandled = (
  state: LedgerState,
  linkId: number,
  frames: ReadonlyArray<string>,
  from: number,
  to: number
): void => {
  const link = state.links.get(linkId)
  if (link === undefined || isHostile(state, link.owner)) return
  for (let i = from; i < to; i++) {
    const text = frames[i]
    if (text === undefined) continue
    if (text.startsWith(`{"type":"unregister"`)) {
      link.brokerHolds = false
      continue
    }
    // A register on a connection that holds its registration is refused; the hold stays.
    if (!text.startsWith(`{"type":"register"`) || link.brokerHolds) continue
    const held = heldBy(state, link)
    link.heldAtRegister ??= held
    const ended: Array<number> = []
    for (const id of held) {
      const other = state.links.get(id)
      if (other !== undefined && other.brokerHolds) {
        other.brokerHolds = false
        ended.push(id)
      }
    }
    link.endedAtRegister = ended
    link.brokerHolds = !link.brokerEnded
  }
}

/** Whether a `register` frame asks for `rejoin-v1` (in its `features`). */
const asksRejoin = (frame: object): boolean => {
  const features = "features" in frame ? frame.features : undefined
  return Array.isArray(features) && features.includes(REJOIN_V1)
}

/** The broker read frames from a client (on link `linkId`). */
export const brokerRead = (state: LedgerState, linkId: number, frames: ReadonlyArray<string>): void => {
  const owner = state.links.get(linkId)?.owner
  if (owner === undefined || isHostile(state, owner)) return
  const link = state.links.get(linkId)
  for (const text of frames) {
    const parsed = parseFrameText(text)
    // When a takeover by this connection happened, if it is one (`LinkRecord.replacedAt`; which connections
    // it took over, `heldAtRegister`, as the broker handles it: `registrationsHandled`).
    if (!isFrameDecodeError(parsed) && parsed.type === "register" && link !== undefined) {
      if (link.registerReadAt === undefined) {
        link.registerReadAt = state.now()
        link.rejoin = asksRejoin(parsed)
      }
      continue
    }
    if (!isFrameDecodeError(parsed) && parsed.type === "received" && link !== undefined) {
      const confirmed = decodeClientFrame.received(parsed)
      if (!isFrameDecodeError(confirmed)) link.confirmed = Math.max(link.confirmed, confirmed.frames)
      continue
    }
    if (isFrameDecodeError(parsed) || (parsed.type !== "send" && parsed.type !== "supervisor_send")) continue
    const frame = decodeSendLike(parsed)
    if (frame === undefined) continue
    // The attempt the broker accepts is the last one it reads before the sender hears "delivered"
    // (an epoch-bound send refused as rebound is sent again with the same id, later).
    const record = recordFrom(state, frame.message.id, owner)
    if (record !== undefined && link !== undefined && record.brokerFirstRead?.epoch !== link.brokerEpoch) {
      record.brokerFirstRead = { epoch: link.brokerEpoch, at: state.now() }
    }
    // One its recipient already read was accepted before: this attempt is a copy sent again after a lost
    // answer (a dropped connection, a crash), which the broker takes as the same message.
    if (record !== undefined && record.outcome !== "acked" && record.reads.length === 0) record.acceptSeq = ++state.acceptSeq
  }
}

/** Whether `text` is over the frame limit in UTF-8 bytes (cheaply, when it obviously is not). */
const oversized = (text: string): boolean => text.length * 3 > MAX_FRAME_BYTES && frameBytes(text) > MAX_FRAME_BYTES

/**
 * The broker began a write of `frames` toward the client on `linkId`: they are unsent until handed over. A
 * control among them is noted as begun there (`controlWriteBegun`), whether or not its client reads it.
 */
export const brokerWriteStarted = (state: LedgerState, linkId: number, frames: ReadonlyArray<string>): void => {
  const link = state.links.get(linkId)
  if (link === undefined) return
  link.writesUnsent += frames.length
  for (const text of frames) {
    if (text.startsWith(`{"type":"message_control"`)) {
      const frame = decodeBrokerFrameText(text)
      if (!isFrameDecodeError(frame) && frame.type === "message_control") controlWriteBegun(state, link, frame)
      continue
    }
    // A refused registration: the broker never held the session by this connection (`LinkRecord.refused`).
    const refusal = text.startsWith(`{"type":"registration_failed"`) ||
      (text.startsWith(`{"type":"error"`) && link.registeredAt === undefined)
    if (refusal && !isHostile(state, link.owner)) {
      link.refused = true
      link.brokerHolds = false
      // What the refused register seemed to take over holds still (review revh H1).
      for (const id of link.endedAtRegister) {
        const other = state.links.get(id)
        if (other !== undefined && !other.brokerEnded && !other.refused) other.brokerHolds = true
      }
      link.endedAtRegister = []
    }
  }
}

/** The broker wrote frames toward a client. */
export const brokerWrote = (state: LedgerState, linkId: number, frames: ReadonlyArray<string>): void => {
  const link = state.links.get(linkId)
  if (link !== undefined) {
    link.writesUnsent = Math.max(0, link.writesUnsent - frames.length)
    link.framesUnread += frames.length
  }
  for (const text of frames) {
    state.frameCount++
    check(state, !oversized(text), "frame-too-large", () =>
      `the broker wrote a ${frameBytes(text)}-byte frame to ${nameOf(state, link?.owner ?? "?")} (${clip(text, 60)})`)
    if (!text.startsWith(`{"type":"message`)) continue
    const frame = decodeBrokerFrameText(text)
    if (isFrameDecodeError(frame)) continue
    if (frame.type === "message_receipt") {
      // A failure notice on its way to the sender.
      const noticed = frame.receipt.status === "expired" ? state.messages.get(frame.receipt.messageId) : undefined
      if (noticed !== undefined) noticed.noticeWrittenTo.push(linkId)
      continue
    }
    if (frame.type !== "message") continue
    const record = recordFrom(state, frame.message.id, frame.from.id)
    if (record === undefined) continue
    record.writtenTo.push(linkId)
    if (link !== undefined && record.target !== undefined) {
      check(state, link.owner === record.target, "misrouted", () =>
        `${record.alias} for ${nameOf(state, record.target ?? "?")} was written to ${nameOf(state, link.owner)}'s connection`)
    }
  }
}

/** The broker's write of these frames toward a client never handed them over: undo `brokerWrote`. */
export const brokerUnwrote = (state: LedgerState, linkId: number, frames: ReadonlyArray<string>): void => {
  const forget = (links: Array<number>) => {
    const index = links.lastIndexOf(linkId)
    if (index >= 0) links.splice(index, 1)
  }
  for (const text of frames) {
    state.frameCount--
    if (!text.startsWith(`{"type":"message`)) continue
    const frame = decodeBrokerFrameText(text)
    if (isFrameDecodeError(frame)) continue
    if (frame.type === "message_receipt") {
      const noticed = frame.receipt.status === "expired" ? state.messages.get(frame.receipt.messageId) : undefined
      if (noticed !== undefined) forget(noticed.noticeWrittenTo)
    } else if (frame.type === "message") {
      const record = recordFrom(state, frame.message.id, frame.from.id)
      if (record !== undefined) forget(record.writtenTo)
    }
  }
}

/**
 * A broker write toward a client on `linkId`, begun at `startedAt`, ended
 * (failed, or was interrupted) before the transport took these frames: the broker takes
 * their mail back when the connection closes. Marked on each message's
 * record (`cutFrom`), so an arrival after newer mail can be told apart
 * (ledger/order.ts, `takeover-late-write`).
 */
export const brokerWriteCut = (
  state: LedgerState,
  linkId: number,
  frames: ReadonlyArray<string>,
  startedAt: number
): void => {
  for (const text of frames) {
    if (!text.startsWith(`{"type":"message"`)) continue
    const frame = decodeBrokerFrameText(text)
    if (isFrameDecodeError(frame) || frame.type !== "message") continue
    recordFrom(state, frame.message.id, frame.from.id)?.cutFrom.push({ link: linkId, startedAt })
  }
}

/** Frames lost with a dropped connection, before the side they travelled toward read them. */
export const discarded = (state: LedgerState, linkId: number, toward: Side, frames: ReadonlyArray<string>): void => {
  const link = state.links.get(linkId)
  if (frames.length === 0 || link === undefined) return
  const messages: Array<string> = []
  for (const text of frames) {
    if (toward === "client" && text.startsWith(`{"type":"message`)) {
      const frame = decodeBrokerFrameText(text)
      if (isFrameDecodeError(frame)) continue
      if (frame.type === "message") messages.push(alias(state, frame.message.id))
      else if (frame.type === "message_receipt" && frame.receipt.status === "expired") {
        messages.push(`the expired notice for ${alias(state, frame.receipt.messageId)}`)
      }
    } else if (toward === "broker") {
      const parsed = parseFrameText(text)
      if (!isFrameDecodeError(parsed) && parsed.type === "send") {
        const frame = decodeClientFrame.send(parsed)
        if (!isFrameDecodeError(frame)) messages.push(alias(state, frame.message.id))
      }
    }
  }
  note(
    state,
    `   ${frames.length} frame(s) toward ${toward === "client" ? nameOf(state, link.owner) : "the broker"} lost with link #${linkId}${
      messages.length === 0 ? "" : ` (messages ${messages.join(", ")})`
    }`
  )
}

/**
 * Frames the broker's reader of link `linkId` held behind parked output and
 * dropped unhandled (its connection closed, or was taken over, first): they
 * took no effect, so only the trace says so. At a takeover the sends among
 * them were answered `delivery_failed` (read as any refusal, below).
 */
export const heldDropped = (state: LedgerState, linkId: number, frames: ReadonlyArray<string>): void => {
  const link = state.links.get(linkId)
  if (link === undefined) return
  const shown: Array<string> = []
  for (const text of frames) {
    const parsed = parseFrameText(text)
    if (isFrameDecodeError(parsed)) continue
    const frame = decodeSendLike(parsed)
    shown.push(frame === undefined ? parsed.type : `${parsed.type} ${alias(state, frame.message.id)}`)
  }
  note(state, `   the broker dropped ${frames.length} frame(s) held on link #${linkId} of ${nameOf(state, link.owner)} at its close (${shown.join(", ")})`)
}

/** A client read frames from the broker. */
export const clientRead = (state: LedgerState, linkId: number, frames: ReadonlyArray<string>): void => {
  const link = state.links.get(linkId)
  if (link === undefined) return
  for (const text of frames) {
    link.framesRead++
    link.framesUnread = Math.max(0, link.framesUnread - 1)
    traceFrame(state, link, "←", text)
    const frame = decodeBrokerFrameText(text)
    if (isFrameDecodeError(frame)) continue
    brokerFrameRead(state, link, frame)
  }
}

const sameScope = (state: LedgerState, link: LinkRecord, sessionId: string, what: string): void => {
  if (!knows(state, sessionId)) return
  check(state, scopeOf(state, sessionId) === scopeOf(state, link.owner), "scope-leak", () =>
    `${nameOf(state, link.owner)} (scope ${scopeOf(state, link.owner) ?? "-"}) saw ${what} of ${nameOf(state, sessionId)} (scope ${
      scopeOf(state, sessionId) ?? "-"
    })`)
}

/** Lists and membership frames stay inside a group (no simulated session `peek`s at another group). */
const sameGroup = (state: LedgerState, link: LinkRecord, sessionId: string, what: string): void => {
  check(state, !crossesGroup(state, sessionId, link.owner), "cross-group", () =>
    `${nameOf(state, link.owner)} [${groupOf(state, link.owner)}] saw ${what} of ${nameOf(state, sessionId)} [${
      groupOf(state, sessionId)
    }]`)
}

/**
 * C-GRP-12, C-SUP-13/14: a message from another group of the receiver's scope
 * is a bound child's broker-marked message to its supervisor, or the
 * supervisor's exact reverse reply; and the broker marks `channel:
 * "supervisor"` on exactly the former.
 */
const groupCrossing = (
  state: LedgerState,
  link: LinkRecord,
  from: string,
  messageId: string,
  channel: "supervisor" | undefined,
  record: MessageRecord | undefined
): void => {
  const receiver = link.owner
  const describe = () =>
    `${record?.alias ?? alias(state, messageId)} from ${nameOf(state, from)} [${groupOf(state, from)}] to ${nameOf(state, receiver)} [${
      groupOf(state, receiver)
    }]`
  const marked = record?.channel === "supervisor" && state.sessions.get(from)?.supervisor === receiver
  check(state, (channel === "supervisor") === marked, "cross-group", () =>
    channel === "supervisor"
      ? `${describe()} came marked channel:"supervisor", but it is no bound child's supervisor_send to its supervisor`
      : `${describe()}, a bound child's supervisor_send, came without channel:"supervisor"`)
  if (!crossesGroup(state, from, receiver)) return
  check(state, record !== undefined && mayCross(state, record, receiver), "cross-group", () =>
    `${describe()} crossed groups: it is neither supervisor-channel traffic from a bound child nor the supervisor's reply to its ask`)
}

/**
 * A second copy of a message from a later broker incarnation, every earlier
 * copy having come from incarnations that crashed. Durable mode: the one that
 * wrote it may have died before it stored that it did. Memory mode: its
 * sender never read the acknowledgement, its client sent it again with the
 * same id, and the new broker has no replay record (they die with a memory
 * broker: docs/store.md).
 */
const redeliveredAfterCrash = (state: LedgerState, record: MessageRecord, link: LinkRecord): boolean =>
  record.reads.length > 0 && record.reads.every((read) => {
    const epoch = state.links.get(read.link)?.brokerEpoch
    return epoch !== undefined && epoch < link.brokerEpoch && state.crashedEpochs.has(epoch)
  })

/**
 * A copy the broker re-sent because every earlier copy went out on a
 * connection, since ended, whose client never confirmed reading it
 * (`received-v1`: the broker cannot know it was read, so it sends it again and
 * the client drops the copy). A copy read through an earlier incarnation that
 * crashed counts as unconfirmed to this one: a confirmation it had not stored
 * died with it (the copy after its restart is `redeliveredAfterCrash`'s), so
 * a third copy, after that one went unconfirmed too, is this kind.
 */
const resentUnconfirmed = (state: LedgerState, record: MessageRecord, link: LinkRecord): boolean =>
  record.reads.length > 0 && record.reads.every((read) => {
    const earlier = state.links.get(read.link)
    if (earlier === undefined || earlier === link) return false
    if (earlier.brokerEpoch < link.brokerEpoch && state.crashedEpochs.has(earlier.brokerEpoch)) return true
    return (earlier.brokerEnded || earlier.closed) && earlier.confirmed < read.frame
  })

/**
 * Whether the client of an earlier connection had written a `received`
 * covering its copy, which the broker never read: the confirmation was still
 * in flight when that connection ended, and was lost with it.
 */
const confirmationLost = (state: LedgerState, record: MessageRecord, link: LinkRecord): boolean =>
  record.reads.some((read) => {
    const earlier = state.links.get(read.link)
    return earlier !== undefined && earlier !== link && earlier.confirmationWritten >= read.frame
  })

/**
 * Where the ask `record`, acknowledged on `link` as handed to a live
 * connection, was queued: its target's connections to the broker that
 * acknowledged it, as they are now (the broker routed its question to one
 * of them before it wrote the answer; a durable broker's answer waits for
 * its commit only, so the question may still be parked on its sender's
 * reader then, on its way to that outbox: `wentBack` in ledger/fates.ts).
 * Undefined for a send or a
 * reply, for a staged ask (it is queued when its window closes), and for an
 * ask first written to an earlier broker (a durable one restored it to its
 * mailbox, from which it goes to whichever connection registers next).
 */
const queuedTo = (state: LedgerState, record: MessageRecord, link: LinkRecord): ReadonlyArray<number> | undefined => {
  if (record.kind !== "ask" || record.delivery?.staged === true || record.firstEpoch !== link.brokerEpoch) return undefined
  const out: Array<number> = []
  for (const other of state.links.values()) {
    if (other.owner === record.target && other.brokerEpoch === link.brokerEpoch) out.push(other.id)
  }
  return out
}

const brokerFrameRead = (state: LedgerState, link: LinkRecord, frame: BrokerFrame): void => {
  switch (frame.type) {
    case "registered": {
      // A takeover: the broker still held another registered connection of this session when it read
      // this one's `register` (it may have ended it since: the takeover ends the old connection at once).
      let takenOver = false
      for (const id of link.heldAtRegister ?? heldBy(state, link)) {
        const other = state.links.get(id)
        if (other === undefined) continue
        other.replacedAt = link.registerReadAt ?? state.now()
        other.replacedWithoutRejoin = link.rejoin !== true || other.rejoin !== true
        takenOver = true
      }
      if (takenOver) {
        const times = state.takeovers.get(link.owner) ?? []
        times.push(state.now())
        state.takeovers.set(link.owner, times)
      }
      link.registered = true
      link.registeredAt = state.now()
      link.receivedV1 = frame.features?.includes(RECEIVED_V1) === true
      return
    }
    case "delivery_queued":
    case "delivered": {
      if (frame.type === "delivered" && frame.delivery === undefined) return cancelAnswered(state, link, frame.messageId)
      const record = state.messages.get(frame.messageId)
      if (record === undefined || record.sender !== link.owner) return
      if (frame.type === "delivery_queued") stagedRead(record, frame.deliverAt, link.brokerEpoch)
      if (record.outcome !== "acked") {
        record.outcome = "acked"
        record.ackEpoch = link.brokerEpoch
        record.ackedAt = state.now()
        record.ackMark = state.acceptSeq
        if (frame.type === "delivered" && frame.delivery === "socket_delivered") record.queuedTo = queuedTo(state, record, link)
        // Not a staged send (`delivery_queued`): its supersede is applied, if at all, when its window closes, unanswered.
        if (frame.type === "delivered" && record.message.supersedes !== undefined) supersedeAnswered(state, record)
        const target = record.target
        if (target !== undefined && crossesGroup(state, record.sender, target)) {
          check(state, mayCross(state, record, target), "cross-group-accepted", () =>
            `${record.alias} (${record.kind} ${nameOf(state, record.sender)} [${groupOf(state, record.sender)}] → ${
              nameOf(state, target)
            } [${groupOf(state, target)}]) was acknowledged; a plain send into another group must be refused`)
        }
      }
      return
    }
    case "delivery_failed": {
      const record = state.messages.get(frame.messageId)
      // A bare one (no code) refuses a cancel ("cannot be cancelled"): the cancel stays unapplied, answered.
      if (frame.code === undefined) return cancelRefused(state, link, frame.messageId)
      if (record === undefined || record.sender !== link.owner) return
      if (record.outcome !== "acked") {
        record.outcome = "refused"
        record.failureCode = frame.code
        // A rebound's question is sent again under its id: only a refusal that ends it counts (review revap AP2).
        if (frame.code !== DeliveryCode.TargetRebound) record.refusedRead ??= { at: state.now(), client: link.client, code: frame.code }
        if (state.hostileChecks && frame.code === DeliveryCode.ReplyTarget) replyRefused(state, link, record)
      }
      return
    }
    case "message": {
      const receiver = link.owner
      const from = frame.from.id
      sameScope(state, link, from, "a message")
      const record = recordFrom(state, frame.message.id, from)
      groupCrossing(state, link, from, frame.message.id, frame.channel, record)
      if (record === undefined) return
      const receivedAt = frame.message.brokerReceivedAt
      if (record.kind === "ask" && receivedAt !== undefined && frame.askTimeoutMs !== undefined) {
        record.askDeadline = { epoch: link.brokerEpoch, at: receivedAt + frame.askTimeoutMs }
      }
      if (record.target !== undefined) {
        check(state, record.target === receiver, "misrouted", () =>
          `${record.alias} for ${nameOf(state, record.target ?? "?")} reached ${nameOf(state, receiver)}`)
      }
      if (redeliveredAfterCrash(state, record, link)) {
        record.redelivered++
        note(state, `   ${record.alias} re-sent to ${nameOf(state, receiver)} by broker #${link.brokerEpoch}: the broker that wrote it crashed`)
        record.reads.push({ link: link.id, client: link.client, seq: ++state.readSeq, at: state.now(), frame: link.framesRead })
        return
      }
      if (resentUnconfirmed(state, record, link)) {
        record.resent++
        if (confirmationLost(state, record, link)) record.confirmationLost = true
        note(state, `   ${record.alias} re-sent to ${nameOf(state, receiver)}: the connection it went out on closed before ${
          record.confirmationLost
            ? "the broker read its client's confirmation (lost in flight with it)"
            : "its client confirmed reading it"
        }`)
        record.reads.push({ link: link.id, client: link.client, seq: ++state.readSeq, at: state.now(), frame: link.framesRead })
        return
      }
      const first = check(state, record.reads.length === 0, "duplicate-on-wire", () =>
        `${record.alias} (${nameOf(state, record.sender)} → ${nameOf(state, receiver)}) arrived ${record.reads.length + 1} times`)
      record.reads.push({ link: link.id, client: link.client, seq: ++state.readSeq, at: state.now(), frame: link.framesRead })
      if (first) checkOrder(state, state.lastWireSeq, record, receiver, "on the wire")
      return
    }
    case "sessions":
      if (frame.requestId !== undefined && link.settlesUnanswered.delete(frame.requestId)) link.settleAnsweredAt = state.now()
      for (const session of frame.sessions) {
        sameScope(state, link, session.id, "a list entry")
        sameGroup(state, link, session.id, "a list entry")
      }
      return
    case "session_joined":
    case "presence_update":
      sameScope(state, link, frame.session.id, `${frame.type}`)
      sameGroup(state, link, frame.session.id, `${frame.type}`)
      return
    case "session_left":
      sameScope(state, link, frame.sessionId, "session_left")
      sameGroup(state, link, frame.sessionId, "session_left")
      return
    case "message_control":
      return controlRead(state, link, frame)
    case "message_receipt": {
      if (frame.receipt.status === "superseded") {
        const replaced = recordFrom(state, frame.receipt.messageId, link.owner)
        // A receiver's answer to this sender's supersede of a message it was given, not the broker's replacement.
        if (replaced !== undefined && !supersedeHeard(state, replaced)) replacedRead(state, replaced, frame.receipt.detail)
        return
      }
      if (frame.receipt.status !== "expired") return
      const record = recordFrom(state, frame.receipt.messageId, link.owner)
      if (record !== undefined) {
        record.expiredNotified = true
        record.expiredSeq ??= ++state.readSeq
        note(state, `   ${nameOf(state, link.owner)} told ${record.alias} expired: ${frame.receipt.detail ?? ""}`)
      }
      return
    }
    default:
      return
  }
}

/**
 * A reply refused as matching no pending ask (E_REPLY_TARGET), with hostile
 * sessions about: a violation when the ask it answers was still open — its
 * question delivered by this same broker to this replier, the ask not
 * settled (not answered, cancelled or timed out: each settles it before the
 * broker forgets the edge), no other reply to it accepted, and none written
 * before it still waiting for its answer: a session that sends its asker two
 * messages at once makes both replies (the first answers, the second is
 * refused and sent again as a plain message), and a durable broker
 * acknowledges the first only once the asker has read it. Nor when this
 * broker first read the reply at or after the ask's deadline
 * (`brokerReceivedAt + askTimeoutMs`, as its target was told): the edge had
 * expired then (docs/protocol.md, `ask-timeout-v1`), though the asker may
 * still be waiting (a stalled reader of the replier, hostile seed 4882): for
 * the broker's notice (`ask-expiry-v1`), which ends its wait with a timeout,
 * or, without it, on its own timer from the acknowledgement it read later.
 */
const replyRefused = (state: LedgerState, link: LinkRecord, reply: MessageRecord): void => {
  const questionId = reply.replyTo
  if (reply.kind !== "reply" || questionId === undefined) return
  const question = state.messages.get(questionId)
  const ask = state.asks.find((candidate) => candidate.questionId === questionId)
  if (
    question === undefined || question.outcome !== "acked" || question.ackEpoch !== link.brokerEpoch ||
    question.target !== link.owner || ask === undefined || ask.outcome !== undefined
  ) return
  const deadline = question.askDeadline
  const read = reply.brokerFirstRead
  if (deadline?.epoch === link.brokerEpoch && read?.epoch === link.brokerEpoch && read.at >= deadline.at) {
    note(state, `   ${reply.alias} refused: the broker read it ${read.at - deadline.at} ms after ${ask.alias}'s edge expired`)
    return
  }
  // Another reply to it accepted, or one written before this one on its way (the broker reads in order,
  // and acknowledges a reply only once its asker has read it): that one took the edge.
  let earlier = true
  for (const other of state.messages.values()) {
    if (other === reply) earlier = false
    else if (other.replyTo === questionId && (other.outcome === "acked" || (earlier && other.outcome !== "refused"))) return
  }
  violate(
    state,
    "ask-hijacked",
    `${reply.alias} (${nameOf(state, link.owner)}'s reply to ${question.alias} from ${nameOf(state, question.sender)}) was refused as matching no pending ask, though ${ask.alias} is still waiting for it`
  )
}
