/**
 * The ledger's wire taps: every frame as a client writes it, the broker reads
 * it, the broker writes it (or takes that write back, or has it cut), a
 * client reads it, or a dropped connection loses it. From them it learns
 * which messages exist, which the broker accepted and acknowledged, where
 * each was written and read, and checks routing, scopes and order on the
 * wire.
 *
 * A frame a client read is judged, frame type by frame type, in
 * brokerFrames.ts; the scope and group checks are scopes.ts's, the
 * takeover bookkeeping (`heldAtRegister`, for known issue 22, and which
 * connections hold their session to the broker, `registrationsHandled`)
 * takeovers.ts's but for what these taps see (a `register` read, a refused
 * one written), and `ask-hijacked` refusedReplies.ts's, which reads when a
 * broker first read a reply (recorded here, `brokerRead`). Known issue
 * 20's last written confirmation per connection is recorded here
 * (`clientWrote`). The trace note of frames the broker held and dropped
 * (`heldDropped`, seed 366) is here with the other frames lost unread.
 * Cancels and controls are recorded as written here (as read, in
 * brokerFrames.ts) and judged in controls.ts.
 */
import { MAX_FRAME_BYTES } from "../../protocol/constants.ts"
import { compileDecoder, decodeBrokerFrameText, decodeClientFrame, isFrameDecodeError, parseFrameText } from "../../protocol/decode.ts"
import { type Message, SupervisorSendFrame } from "../../protocol/frames.ts"
import { frameBytes } from "../../protocol/framing.ts"
import { brokerFrameRead } from "./brokerFrames.ts"
import { type DeliveryNote, deliveryNoteOf } from "./delivery.ts"
import { cancelWritten, controlWriteBegun, supersedeWritten } from "./controls.ts"
import { isHostile, type LedgerState, type MessageRecord, nameOf, recordFrom, resolveTarget } from "./state.ts"
import { asksRejoin } from "./takeovers.ts"
import { alias, check, clip, note, traceFrame } from "./trace.ts"
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
